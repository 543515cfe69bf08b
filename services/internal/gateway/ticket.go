package gateway

// Lost gateways (docs/faults.md): a replay session's registration is not only
// this gateway's memory. RegisterSession returns it as a ticket (signed with
// the token key every gateway replica shares); the client sends the ticket
// with its requests, and a gateway that does not know the session (another
// replica, or this one after a restart) rebuilds it: the schedule from the
// ticket, and where the session is from the satellites, which hold its page
// table (replicated with R >= 2). Which satellites to ask, in what order, and
// what their answers mean is decided by locate, without I/O; rebuild asks.

import (
	"context"
	"fmt"
	"sort"
	"time"

	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/constellation"
	"github.com/satpage/satpage/services/internal/errs"
	"github.com/satpage/satpage/services/internal/replica"
	"github.com/satpage/satpage/services/internal/token"
)

// MaxTicketBytes bounds a ticket: it rides in gRPC metadata next to the token,
// within the 8 KiB a Python client accepts by default (about 200 visits). A
// longer registration gets no ticket: it lives at its gateway only.
const MaxTicketBytes = 4096

// ticket is the signed registration of req (its table size the one granted),
// "" when it would be longer than MaxTicketBytes.
func (g *Gateway) ticket(req *satpagev1.RegisterSessionRequest, pages uint32) string {
	reg := proto.CloneOf(req)
	reg.TablePages = pages
	body, err := proto.MarshalOptions{Deterministic: true}.Marshal(reg)
	if err != nil {
		return ""
	}
	t := g.sec.issuer.Seal(body)
	if len(t) > MaxTicketBytes {
		return ""
	}
	return t
}

// ticketFrom is the ticket in the incoming metadata ("" when none).
func ticketFrom(ctx context.Context) string {
	v := metadata.ValueFromIncomingContext(ctx, token.TicketMetadataKey)
	if len(v) != 1 {
		return ""
	}
	return v[0]
}

// answer is what a satellite said when asked whether it serves a session.
type answer int

const (
	notServing answer = iota
	serving
	down // no answer (dead, paused, cut off): it may serve the session
)

// probe is one satellite to ask: visit's scheduled satellite (standIn 0) or
// the standIn-th satellite behind it, which serves the visit after a takeover.
type probe struct {
	visit   int
	sat     uint32
	standIn int
}

// locatePlan is whom to ask where a session with visits is at visit target:
// newest visit first; within a visit the stand-ins deepest first (a session
// taken over moves only backwards in the plane, so the deepest one serving
// is the newest server; a resumed primary that was taken over may still
// believe it serves), then the scheduled satellite. Each satellite is asked
// once (its first place in the order).
func locatePlan(spec constellation.Spec, visits []*satpagev1.Visit, target int) []probe {
	var plan []probe
	seen := map[uint32]bool{}
	add := func(p probe) {
		if !seen[p.sat] {
			seen[p.sat] = true
			plan = append(plan, p)
		}
	}
	for v := target; v >= 0; v-- {
		sat := visits[v].Satellite
		for j := min(standIns, spec.PerPlane()-1); j >= 1; j-- {
			add(probe{visit: v, sat: replica.Behind(spec, sat, j), standIn: j})
		}
		add(probe{visit: v, sat: sat})
	}
	return plan
}

// locate decides from the answers to a prefix of plan (asked in order)
// where the session is: the probe that serves it (done, found); or, once
// every satellite has answered and none serves it, the silent ones in plan
// order (done, not found): the session is at one of them, which a takeover
// moves it off (failover.go); none silent: errs.ErrUnknownSession (the
// session ended or expired). done is false while more answers are needed.
func locate(plan []probe, answers []answer) (found bool, at probe, silent []probe, done bool, err error) {
	for i, a := range answers {
		switch a {
		case serving:
			return true, plan[i], nil, true, nil
		case down:
			silent = append(silent, plan[i])
		}
	}
	if len(answers) < len(plan) {
		return false, probe{}, nil, false, nil
	}
	if len(silent) == 0 {
		return false, probe{}, nil, true, fmt.Errorf("no satellite of the session's schedule holds its page table (it ended or expired): %w", errs.ErrUnknownSession)
	}
	return false, probe{}, silent, true, nil
}

// rebuild makes a session from the ticket in ctx's metadata, at the satellite
// that serves it by scenario time tNs (taking it over from a silent one when
// none that answers serves it), and remembers it. A session rebuilt
// meanwhile by another request is returned instead; one that cannot be
// placed is not remembered (errs.ErrUnavailable: ask again).
func (g *Gateway) rebuild(ctx context.Context, id string, tNs int64) (*session, error) {
	t := ticketFrom(ctx)
	if t == "" {
		return nil, fmt.Errorf("session %q is not registered at the gateway (and the request carries no ticket): %w", id, errs.ErrUnknownSession)
	}
	body, err := g.tickets.OpenTicket(t, MaxTicketBytes)
	if err != nil {
		return nil, err
	}
	req := &satpagev1.RegisterSessionRequest{}
	if err := proto.Unmarshal(body, req); err != nil || req.SessionId != id {
		return nil, fmt.Errorf("session %q: the ticket is not this session's: %w", id, errs.ErrPermissionDenied)
	}
	s, err := g.newSession(req)
	if err != nil {
		return nil, err
	}
	asked, err := g.locateSession(ctx, s, tNs)
	if err != nil {
		return nil, fmt.Errorf("rebuild session %q from its ticket: %w", id, err)
	}
	g.mu.Lock()
	if old, ok := g.sessions[id]; ok {
		g.mu.Unlock()
		return old, nil
	}
	g.sessions[id] = s
	g.mu.Unlock()
	g.m.Sessions.Inc()
	g.m.Rebuilt.Inc()
	g.log.InfoContext(ctx, "session rebuilt from its ticket", "session", id, "visit", s.cur,
		"satellite", s.visits[s.cur].Satellite, "asked", asked)
	return s, nil
}

// locateSession puts s (locked, or not yet shared) where the satellites say
// it is by scenario time tNs, starting from its registered schedule: at the
// satellite that serves it, or at the one that takes it over from a silent
// one; how many satellites it asked.
func (g *Gateway) locateSession(ctx context.Context, s *session, tNs int64) (int, error) {
	s.visits, s.cur, s.left = s.scheduled, 0, nil
	target := max(0, sort.Search(len(s.visits), func(i int) bool { return s.visits[i].StartNs > tNs })-1)
	plan := locatePlan(g.grid.Spec(), s.visits, target)
	var answers []answer
	for {
		found, at, silent, done, err := locate(plan, answers)
		if err != nil {
			return len(answers), err
		}
		if !done {
			answers = append(answers, g.serves(ctx, plan[len(answers)].sat, s.id))
			continue
		}
		if found {
			s.moveTo(at)
		} else if !g.takeOverSilent(ctx, s, silent) {
			return len(answers), fmt.Errorf("no satellite that answers serves it, and none takes it over from one that does not: %w", errs.ErrUnavailable)
		}
		// Proactive: the visit's move may not have succeeded; sent again with its
		// request id, it moves each page once (node dedup.go).
		s.moveDue = s.strategy == satpagev1.Strategy_STRATEGY_PROACTIVE
		return len(answers), nil
	}
}

// stayKey marks a context whose requests act where the gateway has the
// session, without relocate (the idle expiry's EndSession).
type stayKey struct{}

// relocate looks a replay session (locked) up again when err, from serving it
// where this gateway believed it was, says that satellite does not know it,
// or that the table a handover from it sent is older than one the next
// satellite has held (STALE_TABLE): another gateway moved it on meanwhile (a
// handover, or a takeover) while this one kept serving others. Whether it
// was found (the caller tries again); when not, s is left as it was.
func (g *Gateway) relocate(ctx context.Context, s *session, tNs int64, err error) bool {
	if s.live != nil || !(errs.Has(err, errs.ErrUnknownSession) || errs.Has(err, errs.ErrStaleTable)) || ctx.Value(stayKey{}) != nil {
		return false
	}
	visits, cur, left, moveDue := s.visits, s.cur, s.left, s.moveDue
	if _, lerr := g.locateSession(ctx, s, tNs); lerr != nil {
		s.visits, s.cur, s.left, s.moveDue = visits, cur, left, moveDue
		return false
	}
	g.m.Rebuilt.Inc()
	g.log.InfoContext(ctx, "session found elsewhere than this gateway had it", "session", s.id,
		"was", visits[cur].Satellite, "now", s.visits[s.cur].Satellite, "cause", err)
	return true
}

// moveTo puts s at probe p: its visit, served by its satellite.
func (s *session) moveTo(p probe) {
	s.cur = p.visit
	if p.standIn > 0 {
		s.left = append(s.left, s.visits[p.visit].Satellite)
		s.standIn(p.visit, p.sat)
	}
}

// takeOverSilent has a satellite behind one of the silent probes, in order,
// take s over (the one holding it in its copy does); whether one did.
func (g *Gateway) takeOverSilent(ctx context.Context, s *session, silent []probe) bool {
	for _, p := range silent {
		s.visits, s.cur, s.left = s.scheduled, 0, nil // standIn copies before it changes a visit
		s.moveTo(p)
		if g.takeOver(ctx, s, fmt.Errorf("satellite %d did not answer: %w", p.sat, errs.ErrUnavailable)) {
			return true
		}
	}
	return false
}

// serves asks satellite sat whether it holds session's page table.
func (g *Gateway) serves(ctx context.Context, sat uint32, session string) answer {
	c, err := g.peers.Satellite(sat)
	if err != nil {
		return down
	}
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	f, err := c.SessionFrames(pctx, &satpagev1.SessionFramesRequest{SessionId: session})
	switch {
	case err != nil:
		return down
	case f.Serving:
		return serving
	}
	return notServing
}

// newSession checks a registration and makes its session (not yet opened
// anywhere nor remembered).
func (g *Gateway) newSession(req *satpagev1.RegisterSessionRequest) (*session, error) {
	if err := g.checkRegistration(req); err != nil {
		return nil, err
	}
	strategy := req.Strategy
	if strategy == satpagev1.Strategy_STRATEGY_UNSPECIFIED {
		strategy = satpagev1.Strategy_STRATEGY_ON_DEMAND
	}
	s := &session{id: req.SessionId, visits: req.Visits, scheduled: req.Visits, strategy: strategy, used: time.Now()}
	if req.Place != nil {
		p, err := placeOf(req)
		if err != nil {
			return nil, err
		}
		s.place = p
	}
	return s, nil
}
