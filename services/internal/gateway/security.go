package gateway

import (
	"context"
	"time"

	"google.golang.org/grpc/metadata"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/gateway/fsm"
	"github.com/satpage/satpage/services/internal/token"
)

// security is the gateway's part of docs/security.md: it issues session
// capabilities and ends idle sessions (a registration is memory held for a
// caller who may never come back).
type security struct {
	issuer        *token.Issuer // nil: --insecure
	maxTablePages uint32
	idle          time.Duration
}

// capability is the RegisterSession reply: the session's token and table size.
func (g *Gateway) capability(req *satpagev1.RegisterSessionRequest) *satpagev1.RegisterSessionResponse {
	pages := req.TablePages
	if pages == 0 {
		pages = g.sec.maxTablePages
	}
	out := &satpagev1.RegisterSessionResponse{TablePages: pages, Ticket: g.ticket(req, pages)}
	if g.sec.issuer != nil {
		tok, exp := g.sec.issuer.Issue(req.SessionId, pages)
		out.Token, out.TokenExpiresUnixS = tok, exp.Unix()
	}
	return out
}

// ExpireIdle ends, every idle/4 (at least each second), the sessions no
// request has touched for SessionIdle, until ctx ends. Ending frees their
// frames on the satellites; a session whose satellites cannot be reached is
// forgotten anyway (its frames stay until the satellite's store is cleared).
func (g *Gateway) ExpireIdle(ctx context.Context) {
	if g.sec.idle <= 0 {
		return
	}
	t := time.NewTicker(max(g.sec.idle/4, time.Second))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			g.expire(ctx, now)
		}
	}
}

// expire ends the sessions idle since before now - SessionIdle.
func (g *Gateway) expire(ctx context.Context, now time.Time) int {
	g.mu.Lock()
	var idle []*session
	for _, s := range g.sessions {
		idle = append(idle, s)
	}
	g.mu.Unlock()
	n := 0
	for _, s := range idle {
		// The session's machine decides (a Tick at now: Expire when idle).
		s.mu.Lock()
		var exp fsm.Expire
		stale := false
		// (expire with no SessionIdle, as tests call it: any session not used at now)
		if m, err := g.machineIdle(ctx, s, true, max(g.sec.idle, time.Nanosecond)); err == nil && !s.ended {
			for _, a := range m.Step(now, fsm.Tick{}) {
				exp, stale = a.(fsm.Expire)
			}
		}
		s.mu.Unlock()
		if !stale {
			continue
		}
		at := exp.AtNs
		n++
		// Ended where this gateway has it, never looked up elsewhere: a session idle
		// here may be in use through another gateway (ticket.go).
		cctx, cancel := context.WithTimeout(context.WithValue(ctx, stayKey{}, true), g.rpcTimeout)
		if g.sec.issuer != nil { // the satellites want the session's token, as from its client
			tok, _ := g.sec.issuer.Issue(s.id, g.sec.maxTablePages)
			cctx = metadata.AppendToOutgoingContext(cctx, token.MetadataKey, tok)
		}
		_, err := g.EndSession(cctx, &satpagev1.EndSessionRequest{SessionId: s.id, ScenarioTimeNs: at})
		cancel()
		if err != nil {
			g.log.WarnContext(ctx, "idle session could not be ended; forgetting it", "session", s.id, "err", err)
			g.forget(s)
		} else {
			g.log.InfoContext(ctx, "idle session ended", "session", s.id, "idle", g.sec.idle)
		}
	}
	return n
}

// forget drops a registration without touching the satellites.
func (g *Gateway) forget(s *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return
	}
	s.ended = true
	g.mu.Lock()
	delete(g.sessions, s.id)
	g.mu.Unlock()
	g.m.Sessions.Dec()
}

// Sessions is the number of registered sessions.
func (g *Gateway) Sessions() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.sessions)
}
