package gateway

// Lost gateways (docs/faults.md): a replay session's registration is not only
// this gateway's memory. RegisterSession returns it as a ticket (signed with
// the token key every gateway replica shares); the client sends the ticket
// with its requests, and a gateway that does not know the session (another
// replica, or this one after a restart) rebuilds it: the schedule from the
// ticket, and where the session is from the satellites, which hold its page
// table (replicated with R >= 2). Which satellites to ask, in what order, and
// what their answers mean is decided without I/O (fsm.Plan, fsm.Locate);
// rebuild asks.

import (
	"context"
	"fmt"
	"sort"
	"time"

	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/errs"
	"github.com/satpage/satpage/services/internal/gateway/fsm"
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
	plan := fsm.Plan(g.plane(), fsmVisits(s.visits), target)
	var answers []fsm.Answer
	for {
		found, at, silent, done, err := fsm.Locate(plan, answers)
		if err != nil {
			return len(answers), err
		}
		if !done {
			answers = append(answers, g.serves(ctx, plan[len(answers)].Sat, s.id))
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
func (s *session) moveTo(p fsm.Probe) {
	s.cur = p.Visit
	if p.StandIn > 0 {
		s.left = append(s.left, s.visits[p.Visit].Satellite)
		s.standIn(p.Visit, p.Sat)
	}
}

// plane is the geometry the stand-ins come from.
func (g *Gateway) plane() fsm.Plane { return fsm.PlaneOf(g.grid.Spec(), standIns) }

func fsmVisits(visits []*satpagev1.Visit) []fsm.Visit {
	out := make([]fsm.Visit, len(visits))
	for i, v := range visits {
		out[i] = fsm.Visit{Satellite: v.Satellite, StartNs: v.StartNs}
	}
	return out
}

// takeOverSilent has a satellite behind one of the silent probes, in order,
// take s over (the one holding it in its copy does); whether one did.
func (g *Gateway) takeOverSilent(ctx context.Context, s *session, silent []fsm.Probe) bool {
	for _, p := range silent {
		s.visits, s.cur, s.left = s.scheduled, 0, nil // standIn copies before it changes a visit
		s.moveTo(p)
		if g.takeOver(ctx, s, fmt.Errorf("satellite %d did not answer: %w", p.Sat, errs.ErrUnavailable)) {
			return true
		}
	}
	return false
}

// serves asks satellite sat whether it holds session's page table.
func (g *Gateway) serves(ctx context.Context, sat uint32, session string) fsm.Answer {
	c, err := g.peers.Satellite(sat)
	if err != nil {
		return fsm.Down
	}
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	f, err := c.SessionFrames(pctx, &satpagev1.SessionFramesRequest{SessionId: session})
	switch {
	case err != nil:
		return fsm.Down
	case f.Serving:
		return fsm.Serving
	}
	return fsm.NotServing
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
