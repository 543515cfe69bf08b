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
	// Located by the session's machine (fsm.Plan, fsm.Locate), which also
	// performs the handovers due by tNs; nothing is sent to it yet.
	if err := g.driveFrom(ctx, s, tNs, false, noForward); err != nil {
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
		"satellite", s.visits[s.cur].Satellite)
	return s, nil
}

// stayKey marks a context whose requests act where the gateway has the
// session, without relocate (the idle expiry's EndSession).
type stayKey struct{}

// plane is the geometry the stand-ins come from.
func (g *Gateway) plane() fsm.Plane { return fsm.PlaneOf(g.grid.Spec(), standIns) }

func fsmVisits(visits []*satpagev1.Visit) []fsm.Visit {
	out := make([]fsm.Visit, len(visits))
	for i, v := range visits {
		out[i] = fsm.Visit{Satellite: v.Satellite, StartNs: v.StartNs}
	}
	return out
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
