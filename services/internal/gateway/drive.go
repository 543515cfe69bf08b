package gateway

// The driver of a session's state machine (package fsm, docs/faults.md): the
// machine decides (which handover, takeover, stand-in, relocation, retry);
// drive performs its actions (the RPCs to satellites, the failure detector's
// verdicts, a wait) and feeds each result back, until the machine's Reply.
// The machine's state lives in the session between requests (fsm.Resume).

import (
	"context"
	"fmt"
	"time"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/errs"
	"github.com/satpage/satpage/services/internal/gateway/fsm"
	"github.com/satpage/satpage/services/internal/retry"
)

var fsmStrategies = map[satpagev1.Strategy]fsm.Strategy{
	satpagev1.Strategy_STRATEGY_ON_DEMAND:  fsm.OnDemand,
	satpagev1.Strategy_STRATEGY_PROACTIVE:  fsm.Proactive,
	satpagev1.Strategy_STRATEGY_PUSH_AHEAD: fsm.PushAhead,
}

// machine is s's state machine in s's state (s locked). A replay session is
// looked up again where a satellite no longer knows it, unless ctx says to
// stay (stayKey); located false: where it is is not known yet (a rebuild).
func (g *Gateway) machine(ctx context.Context, s *session, located bool) (*fsm.Machine, error) {
	return g.machineIdle(ctx, s, located, g.sec.idle)
}

// machineIdle is machine with idle expiry after idle (0: never).
func (g *Gateway) machineIdle(ctx context.Context, s *session, located bool, idle time.Duration) (*fsm.Machine, error) {
	sched := s.scheduled
	if sched == nil {
		sched = s.visits // live: never looked up from a schedule
	}
	if s.strategy == satpagev1.Strategy_STRATEGY_PUSH_AHEAD && s.recent == nil {
		s.recent = map[uint32]struct{}{} // shared with the machine
	}
	cfg := fsm.Config{ID: s.id, Visits: fsmVisits(sched), Strategy: fsmStrategies[s.strategy], Plane: g.plane(),
		Idle: idle, FencedRetry: fencedRetry, ForwardRetries: forwardRetries,
		HandOverRetries: handOverRetries, Relocatable: s.live == nil && ctx.Value(stayKey{}) == nil}
	return fsm.Resume(cfg, fsm.State{Visits: fsmVisits(s.visits), Cur: s.cur, Epoch: s.epoch, Left: s.left,
		MoveDue: s.moveDue, Recent: s.recent, Tables: s.tables, Used: s.used, Located: located})
}

// save keeps m's state in s.
func (s *session) save(m *fsm.Machine) {
	st := m.State()
	if m.Changed() {
		s.visits = protoVisits(st.Visits)
	}
	s.cur, s.epoch, s.left, s.moveDue, s.recent, s.tables = st.Cur, st.Epoch, st.Left, st.MoveDue, st.Recent, st.Tables
}

func protoVisits(visits []fsm.Visit) []*satpagev1.Visit {
	out := make([]*satpagev1.Visit, len(visits))
	for i, v := range visits {
		out[i] = &satpagev1.Visit{Satellite: v.Satellite, StartNs: v.StartNs}
	}
	return out
}

// noForward is the forward of a drive that only brings the session to the
// satellite serving it (its handovers, a takeover): nothing is sent there.
func noForward(uint32) error { return nil }

// drive runs s's machine (s locked) on a request at scenario time tNs until
// its Reply: forward sends the request to the serving satellite it is given
// (again, with the same request id, after a takeover or a relocation).
func (g *Gateway) drive(ctx context.Context, s *session, tNs int64, forward func(sat uint32) error) error {
	return g.driveFrom(ctx, s, tNs, true, forward)
}

func (g *Gateway) driveFrom(ctx context.Context, s *session, tNs int64, located bool, forward func(sat uint32) error) error {
	m, err := g.machine(ctx, s, located)
	if err != nil {
		return err
	}
	defer s.save(m)
	was := s.visits[s.cur].Satellite
	defer func() {
		if m.Relocated() {
			now, _ := m.Serving()
			g.m.Rebuilt.Inc()
			g.log.InfoContext(ctx, "session found elsewhere than this gateway had it", "session", s.id,
				"was", was, "now", now)
		}
	}()
	acts := m.Step(time.Now(), fsm.Request{TNs: tNs})
	tried := time.Now()       // when the attempt now running began (a Wait ends one)
	var last fsm.CallHandOver // the last handover asked for (a stand-in shows as another To)
	for len(acts) > 0 {
		var ev fsm.Event
		switch a := acts[len(acts)-1].(type) {
		case fsm.Reply:
			return a.Err
		case fsm.CallHandOver:
			s.save(m)
			if last.Visit == a.Visit && last.To != a.To && last.From == a.From {
				g.m.Takeovers.WithLabelValues("next").Inc()
				g.log.WarnContext(ctx, "handover to a stand-in of the dead next satellite", "session", s.id, "dead", last.To, "to", a.To)
			}
			last = a
			h, err := g.handOver(ctx, s, a, tNs)
			ev = fsm.Result{Err: err, TablePages: h.GetTablePages()}
		case fsm.CallTakeOver:
			ev = fsm.Result{Err: g.callTakeOver(ctx, s, a)}
		case fsm.CheckAlive:
			ev = fsm.Verdict{Satellite: a.Satellite, Dead: !g.alive(ctx, a.Satellite)}
		case fsm.AskServing:
			pages, err := g.askServing(ctx, a.Satellite, s.id)
			ev = fsm.Result{Err: err, TablePages: pages}
		case fsm.CallMove:
			ev = fsm.Result{Err: g.callMove(ctx, s, a)}
		case fsm.CallPush:
			ev = fsm.Result{Err: g.callPush(ctx, s, a)}
		case fsm.Forward:
			s.save(m)
			if sat, at, ok := g.predictNext(s, tNs); ok {
				g.copyAheadIfDue(ctx, s, sat, at, tNs)
			}
			ev = fsm.Result{Err: forward(a.Satellite)}
		case fsm.Wait:
			// Jittered, so that sessions that failed together ask again apart.
			// A wait is begun only when the request's deadline leaves room for
			// it and for one more attempt as long as the last one took: else
			// the request fails now with the error that started it (UNAVAILABLE
			// to the client), not with its deadline in the middle of an attempt.
			d := retry.Backoff{First: a.D, Max: a.D, Jitter: 0.2}.Delay(0)
			var werr error
			if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d+time.Since(tried) {
				werr = context.DeadlineExceeded
			} else if !retry.Sleep(ctx, d) {
				werr = ctx.Err()
			}
			tried = time.Now()
			ev = fsm.Result{Err: werr}
		default:
			return fmt.Errorf("session %q: the machine asked for %T: %w", s.id, a, errs.ErrInvalid)
		}
		acts = m.Step(time.Now(), ev)
	}
	return fmt.Errorf("session %q: the machine stopped without a reply: %w", s.id, errs.ErrUnavailable)
}

// handOver performs a handover the machine asked for (s locked and saved):
// push-ahead's copy sent ahead comes first, its claim right after.
func (g *Gateway) handOver(ctx context.Context, s *session, a fsm.CallHandOver, tNs int64) (*satpagev1.HandOverResponse, error) {
	g.copyAheadIfDue(ctx, s, a.To, a.AtNs, tNs) // push-ahead with a lead: the copy comes first
	c, err := g.peers.Satellite(a.From)
	if err != nil {
		return nil, err
	}
	h, err := c.HandOver(ctx, &satpagev1.HandOverRequest{SessionId: s.id, ToSatellite: a.To, ScenarioTimeNs: a.AtNs})
	if err != nil {
		return nil, err
	}
	g.m.Handovers.Inc()
	if s.strategy == satpagev1.Strategy_STRATEGY_PUSH_AHEAD {
		// Before the machine pushes the rest of the visit's pages (s.recent).
		// The handover is done: a claim that cannot be sent leaves the pages to
		// that push.
		if err := g.claimAhead(ctx, s, a.From, a.To, a.AtNs); err != nil {
			g.log.WarnContext(ctx, "claim of the copies sent ahead not sent", "session", s.id, "to", a.To, "err", err)
		}
	}
	return h, nil
}

// callTakeOver asks a.At to take s over from a.Failed. It runs to its end
// even when the request that found the satellite dead gives up first: a
// retry finds it done.
func (g *Gateway) callTakeOver(ctx context.Context, s *session, a fsm.CallTakeOver) error {
	c, err := g.peers.Satellite(a.At)
	if err != nil {
		return err
	}
	tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), takeOverTimeout)
	defer cancel()
	r, err := c.TakeOver(tctx, &satpagev1.TakeOverRequest{SessionId: s.id, Failed: a.Failed})
	if err != nil {
		if !mayBeDead(err) {
			g.log.DebugContext(ctx, "no takeover", "session", s.id, "failed", a.Failed, "at", a.At, "err", err)
		}
		return err
	}
	g.m.Takeovers.WithLabelValues("serving").Inc()
	g.log.WarnContext(ctx, "session taken over from its dead serving satellite", "session", s.id,
		"failed", a.Failed, "by", a.At, "table_pages", r.TablePages, "pages_adopted", r.PagesAdopted)
	return nil
}

// askServing is nil (and the table's size) when satellite sat serves
// session, errs.ErrUnknownSession when it answers that it does not, and the
// call's error when it does not answer.
func (g *Gateway) askServing(ctx context.Context, sat uint32, session string) (uint32, error) {
	c, err := g.peers.Satellite(sat)
	if err != nil {
		return 0, err
	}
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	f, err := c.SessionFrames(pctx, &satpagev1.SessionFramesRequest{SessionId: session})
	switch {
	case err != nil:
		return 0, err
	case !f.Serving:
		return 0, fmt.Errorf("satellite %d does not serve session %q: %w", sat, session, errs.ErrUnknownSession)
	}
	return f.TablePages, nil
}

// callMove sends the proactive MovePages of a visit. A request id per visit:
// a move retried (after a lost reply, or at the satellite that took the
// session over) moves each page once (node dedup.go); the serving satellite
// counts the pages an earlier, failed attempt moved into the reply of the one
// that succeeds.
func (g *Gateway) callMove(ctx context.Context, s *session, a fsm.CallMove) error {
	c, err := g.peers.Satellite(a.To)
	if err != nil {
		return err
	}
	m, err := c.MovePages(ctx, &satpagev1.MovePagesRequest{SessionId: s.id, ScenarioTimeNs: a.AtNs,
		RequestId: fmt.Sprintf("gateway/move/%d", a.Visit)})
	if err != nil {
		return err
	}
	s.stats.ProactiveMoves += uint64(m.Moved)
	s.stats.ProactiveHops += m.PageHops
	return nil
}

// callPush moves the pages used during the visit that just ended to the new
// serving satellite, right after its page table.
func (g *Gateway) callPush(ctx context.Context, s *session, a fsm.CallPush) error {
	c, err := g.peers.Satellite(a.To)
	if err != nil {
		return err
	}
	m, err := c.MovePages(ctx, &satpagev1.MovePagesRequest{SessionId: s.id, ScenarioTimeNs: a.AtNs, Pages: a.Pages})
	if err != nil {
		return err
	}
	s.stats.PushMoves += uint64(m.Moved)
	s.stats.PushHops += m.PageHops
	return nil
}
