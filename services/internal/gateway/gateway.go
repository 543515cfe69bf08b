// Package gateway is the ground entry point: it knows each session's schedule
// of serving satellites (handovers are predictable from the orbits), performs
// the handovers due by each request's scenario time, and forwards the request
// to the satellite serving the session at that time.
package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/constellation"
	"github.com/satpage/satpage/services/internal/errs"
	"github.com/satpage/satpage/services/internal/linkemu"
	"github.com/satpage/satpage/services/internal/liveness"
	"github.com/satpage/satpage/services/internal/metrics"
	"github.com/satpage/satpage/services/internal/node"
	"github.com/satpage/satpage/services/internal/peers"
	"github.com/satpage/satpage/services/internal/sky"
	"github.com/satpage/satpage/services/internal/token"
)

// MaxVisits bounds a registered schedule.
const MaxVisits = 1 << 16

// Gateway routes client requests. Safe for concurrent use.
type Gateway struct {
	grid       *constellation.Grid
	peers      peers.Dialer
	log        *slog.Logger
	m          *metrics.Gateway
	rpcTimeout time.Duration
	sec        security
	tickets    *token.Verifier // opens the tickets of sessions to rebuild (nil: --insecure, unsigned)

	live  *live              // nil: replay only
	links *linkemu.Model     // nil: the ground link is not emulated
	dead  *liveness.Detector // which satellites the failovers hold dead (alive)

	mu       sync.Mutex // guards sessions (the map, not the sessions)
	sessions map[string]*session

	// The background work Start runs (ExpireIdle, RunLive): Close cancels
	// it and waits for it.
	bg     sync.WaitGroup
	bgMu   sync.Mutex         // guards stopBg
	stopBg context.CancelFunc // nil before Start
}

// Start runs the gateway's background work until ctx ends or Close: the
// expiry of idle sessions and, in live mode, the handovers and ephemeris
// reloads (RunLive). The gateway owns it: Close waits for it, so the peers
// it uses may be closed after Close returns.
func (g *Gateway) Start(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	g.bgMu.Lock()
	g.stopBg = cancel
	g.bgMu.Unlock()
	g.bg.Go(func() { g.ExpireIdle(ctx) })
	g.bg.Go(func() { g.RunLive(ctx) })
}

// Close stops the background work Start runs and waits for it. Call it after
// the gRPC server has stopped and before the peers are closed.
func (g *Gateway) Close() {
	g.bgMu.Lock()
	stop := g.stopBg
	g.bgMu.Unlock()
	if stop != nil {
		stop()
	}
	g.bg.Wait()
}

// session is one registered session.
type session struct {
	mu     sync.Mutex // held for a whole request: a session's requests and handovers run one at a time
	id     string
	visits []*satpagev1.Visit
	// the registered schedule (visits, before any stand-in replaced a visit);
	// nil for a live session
	scheduled []*satpagev1.Visit
	strategy  satpagev1.Strategy
	cur       int      // visit now serving
	moveDue   bool     // proactive: the MovePages of visit cur has not succeeded yet
	tables    []uint32 // page-table size handed over at each handover done
	stats     satpagev1.SessionStatsResponse
	ended     bool
	used      time.Time    // last request (idle expiry)
	live      *liveSession // nil for a replay session
	// recent holds the pages used during the current visit: push-ahead moves
	// them to the next serving satellite at the handover (pager.PushAhead,
	// recent_visits 1); live sessions may have copied them ahead (pushlead.go).
	recent map[uint32]struct{}
	left   []uint32   // satellites the session was taken over from (failover.go)
	epoch  uint64     // rises at every change of serving satellite (the machine's, drive.go)
	place  *sky.Place // replay: where the client is (RegisterSession's place); nil: none
	// counted: the request ids (as sent to the satellites) whose answers are in
	// stats, the last countedIDs of them: a client that sends a request again
	// after it was answered gets the satellite's kept answer (node dedup.go),
	// which is not a second movement.
	counted countedIDs
}

// countedIDs is a small FIFO set of request ids (s.mu guards it).
type countedIDs struct {
	ids  []string
	next int
}

// countedKept bounds the ids a session remembers: a client sends again its
// latest requests, not one from long ago.
const countedKept = 64

// first records rid and reports whether it was not recorded yet ("": a request
// without an id, acted on at every send: always first).
func (c *countedIDs) first(rid string) bool {
	if rid == "" {
		return true
	}
	if slices.Contains(c.ids, rid) {
		return false
	}
	if len(c.ids) < countedKept {
		c.ids = append(c.ids, rid)
	} else {
		c.ids[c.next] = rid
		c.next = (c.next + 1) % countedKept
	}
	return true
}

// ground is the ground end of the session's link: the place a live session
// opened with, or a replay session's registered place (false: none, no
// ground-link delay).
func (s *session) ground() ([3]float64, bool) {
	switch {
	case s.live != nil:
		return s.live.place.GroundKm(), true
	case s.place != nil:
		return s.place.GroundKm(), true
	}
	return [3]float64{}, false
}

// Options are what New needs.
type Options struct {
	Grid       *constellation.Grid
	Peers      peers.Dialer
	Logger     *slog.Logger
	Metrics    *metrics.Gateway
	RPCTimeout time.Duration
	// Issuer signs session tokens and tickets (nil: --insecure, RegisterSession
	// returns no token and an unsigned ticket).
	Issuer *token.Issuer
	// Tickets verifies the tickets of sessions registered at another gateway
	// replica (default: the Issuer's own key).
	Tickets *token.Verifier
	// MaxTablePages bounds (and defaults) a session's page-table size (default 4096).
	MaxTablePages uint32
	// SessionIdle: ExpireIdle ends sessions idle this long (0: never).
	SessionIdle time.Duration
	Live        *LiveOptions // nil: replay only
	// Links times the ground link of each session's requests (nil: not emulated).
	Links *linkemu.Model
}

// New builds a gateway (the caller closes Peers).
func New(o Options) (*Gateway, error) {
	if o.Grid == nil || o.Peers == nil {
		return nil, fmt.Errorf("gateway: grid and peers are required: %w", errs.ErrInvalid)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Metrics == nil {
		o.Metrics = metrics.NewGateway()
	}
	if o.RPCTimeout <= 0 {
		o.RPCTimeout = 30 * time.Second
	}
	if o.MaxTablePages == 0 {
		o.MaxTablePages = 4096
	}
	g := &Gateway{grid: o.Grid, peers: o.Peers, log: o.Logger, m: o.Metrics, rpcTimeout: o.RPCTimeout,
		sec:      security{issuer: o.Issuer, maxTablePages: o.MaxTablePages, idle: o.SessionIdle},
		sessions: map[string]*session{}, links: o.Links, tickets: o.Tickets}
	g.dead = liveness.New(g.probe, probeTimeout)
	if g.tickets == nil && o.Issuer != nil {
		g.tickets = o.Issuer.Verifier()
	}
	if o.Live != nil {
		l, err := newLive(o.Live)
		if err != nil {
			return nil, err
		}
		g.live = l
	}
	return g, nil
}

// Register puts PageService and GatewayService on s.
func (g *Gateway) Register(s grpc.ServiceRegistrar) {
	satpagev1.RegisterPageServiceServer(s, &pageServer{g: g})
	satpagev1.RegisterGatewayServiceServer(s, &gatewayServer{g: g})
}

// checkRegistration checks a session's registration (RegisterSession's, or
// the one a ticket carries).
func (g *Gateway) checkRegistration(req *satpagev1.RegisterSessionRequest) error {
	if req.SessionId == "" || len(req.SessionId) > node.MaxSessionIDBytes {
		return fmt.Errorf("session_id %q: empty or longer than %d bytes: %w", req.SessionId, node.MaxSessionIDBytes, errs.ErrInvalid)
	}
	if len(req.Visits) == 0 || len(req.Visits) > MaxVisits {
		return fmt.Errorf("session %q: %d visits, want 1..%d: %w", req.SessionId, len(req.Visits), MaxVisits, errs.ErrInvalid)
	}
	for i, v := range req.Visits {
		if err := g.grid.Check(v.Satellite); err != nil {
			return fmt.Errorf("session %q visit %d: %w", req.SessionId, i, err)
		}
		if i > 0 && v.StartNs < req.Visits[i-1].StartNs {
			return fmt.Errorf("session %q: visit %d starts at %d ns, before visit %d at %d ns: %w",
				req.SessionId, i, v.StartNs, i-1, req.Visits[i-1].StartNs, errs.ErrInvalid)
		}
	}
	if req.TablePages > g.sec.maxTablePages {
		return fmt.Errorf("session %q: table_pages %d exceeds the gateway's --max-table-pages %d: %w",
			req.SessionId, req.TablePages, g.sec.maxTablePages, errs.ErrInvalid)
	}
	switch req.Strategy {
	case satpagev1.Strategy_STRATEGY_UNSPECIFIED, satpagev1.Strategy_STRATEGY_ON_DEMAND, satpagev1.Strategy_STRATEGY_PROACTIVE,
		satpagev1.Strategy_STRATEGY_PUSH_AHEAD:
	default:
		return fmt.Errorf("session %q: strategy %d unknown: %w", req.SessionId, req.Strategy, errs.ErrInvalid)
	}
	return nil
}

// placeOf is the ground place of a registration.
func placeOf(req *satpagev1.RegisterSessionRequest) (*sky.Place, error) {
	p, err := sky.NewPlace(req.Place.LatDeg, req.Place.LonDeg)
	if err != nil {
		return nil, fmt.Errorf("session %q place: %w", req.SessionId, err)
	}
	return p, nil
}

// RegisterSession validates the schedule, opens the page table at the first
// serving satellite and remembers the session.
func (g *Gateway) RegisterSession(ctx context.Context, req *satpagev1.RegisterSessionRequest) error {
	s, err := g.newSession(req)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	g.mu.Lock()
	if _, ok := g.sessions[req.SessionId]; ok {
		g.mu.Unlock()
		return fmt.Errorf("session %q is registered: %w", req.SessionId, errs.ErrSessionExists)
	}
	g.sessions[req.SessionId] = s
	g.mu.Unlock()
	if err := g.openFirst(ctx, s); err != nil {
		g.mu.Lock()
		delete(g.sessions, req.SessionId)
		g.mu.Unlock()
		return fmt.Errorf("open session %q at satellite %d: %w", req.SessionId, req.Visits[0].Satellite, err)
	}
	g.m.Sessions.Inc()
	return nil
}

// acquire finds a session and locks it; the caller calls the returned unlock.
// A session this gateway does not know is rebuilt: a live one from its id, a
// replay one from the ticket the request carries (ticket.go), at the
// satellite serving it by scenario time tNs.
func (g *Gateway) acquire(ctx context.Context, id string, tNs int64) (*session, func(), error) {
	g.mu.Lock()
	s := g.sessions[id]
	g.mu.Unlock()
	if s == nil {
		var err error
		if g.live != nil && strings.HasPrefix(id, liveIDPrefix) {
			s, err = g.recoverLive(ctx, id)
		} else {
			s, err = g.rebuild(ctx, id, tNs)
		}
		if err != nil {
			return nil, nil, err
		}
	}
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return nil, nil, fmt.Errorf("session %q has ended: %w", id, errs.ErrUnknownSession)
	}
	s.used = time.Now()
	return s, s.mu.Unlock, nil
}

func (s *session) count(r *satpagev1.ReadPageResponse) {
	s.stats.Accesses++
	switch r.Outcome {
	case satpagev1.Outcome_OUTCOME_CREATED:
		s.stats.Created++
	case satpagev1.Outcome_OUTCOME_MOVED:
		s.stats.OndemandMoves++
		s.stats.OndemandHops += uint64(r.Hops)
	}
}

// withTimeout gives a request without a deadline the configured one.
func (g *Gateway) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, g.rpcTimeout)
}

// atServer runs call at the satellite serving s at tNs (s locked), after the
// handovers due; the session's machine (drive.go) decides what happens when
// that satellite is dead, fenced or no longer knows the session (a takeover,
// a wait, a relocation), and call runs again there: with a request id it
// acts once.
func (g *Gateway) atServer(ctx context.Context, s *session, tNs int64, call func(satpagev1.PageServiceClient) error) error {
	return g.drive(ctx, s, tNs, func(sat uint32) error {
		c, err := g.peers.Page(sat)
		if err != nil {
			return err
		}
		return g.overGround(ctx, s, sat, tNs, func() error { return call(c) })
	})
}

// overGround runs call (a request to the serving satellite sat and its reply)
// over the session's ground link: with link emulation and a place, each way
// waits the slant range / c at the request's time (docs/emulation.md).
func (g *Gateway) overGround(ctx context.Context, s *session, sat uint32, tNs int64, call func() error) error {
	ground, ok := s.ground()
	if g.links == nil || !ok {
		return call()
	}
	return g.links.GroundTrip(ctx, ground, sat, tNs, call)
}

// ReadPage forwards one access to the serving satellite.
func (g *Gateway) ReadPage(ctx context.Context, req *satpagev1.ReadPageRequest) (*satpagev1.ReadPageResponse, error) {
	s, unlock, err := g.acquire(ctx, req.SessionId, req.ScenarioTimeNs)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if req.ScenarioTimeNs, err = g.liveTime(s, req.ScenarioTimeNs); err != nil {
		return nil, err
	}
	var r *satpagev1.ReadPageResponse
	err = g.atServer(ctx, s, req.ScenarioTimeNs, func(c satpagev1.PageServiceClient) (err error) {
		r, err = c.ReadPage(ctx, req)
		return err
	})
	if err != nil {
		return nil, err
	}
	r.ScenarioTimeNs = req.ScenarioTimeNs
	if s.counted.first(req.RequestId) {
		s.count(r)
	}
	s.use(req.Page)
	return r, nil
}

// ReadPages splits the accesses by visit, performing handovers between them.
func (g *Gateway) ReadPages(ctx context.Context, req *satpagev1.ReadPagesRequest) (*satpagev1.ReadPagesResponse, error) {
	if strings.HasPrefix(req.SessionId, liveIDPrefix) && len(req.ScenarioTimeNs) == 0 {
		req.ScenarioTimeNs = make([]int64, len(req.Pages)) // live: the clock's time, set below
	}
	if err := node.CheckBatch(req); err != nil {
		return nil, err
	}
	var first int64 // where an unknown session is looked for
	if len(req.ScenarioTimeNs) > 0 {
		first = req.ScenarioTimeNs[0]
	}
	s, unlock, err := g.acquire(ctx, req.SessionId, first)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if s.live != nil {
		t, err := g.liveTime(s, 0)
		if err != nil {
			return nil, err
		}
		for i := range req.ScenarioTimeNs {
			req.ScenarioTimeNs[i] = t
		}
	}
	out := &satpagev1.ReadPagesResponse{Results: make([]*satpagev1.ReadPageResponse, 0, len(req.Pages))}
	for i := 0; i < len(req.Pages); {
		var r *satpagev1.ReadPagesResponse
		var sat uint32
		var rid string
		j := i + 1
		err := g.drive(ctx, s, req.ScenarioTimeNs[i], func(at uint32) error {
			sat, j = at, i+1 // the accesses of the visit serving at ScenarioTimeNs[i]
			if s.cur+1 < len(s.visits) {
				next := s.visits[s.cur+1].StartNs
				for j < len(req.Pages) && req.ScenarioTimeNs[j] < next {
					j++
				}
			} else {
				j = len(req.Pages)
			}
			c, err := g.peers.Page(at)
			if err != nil {
				return err
			}
			rid = "" // each visit's part is its own request at its satellite, retried as one
			if req.RequestId != "" {
				rid = fmt.Sprintf("%s#%d", req.RequestId, i)
			}
			r, err = c.ReadPages(ctx, &satpagev1.ReadPagesRequest{SessionId: req.SessionId, Pages: req.Pages[i:j],
				ScenarioTimeNs: req.ScenarioTimeNs[i:j], OmitData: req.OmitData, RequestId: rid})
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("accesses %d..%d at satellite %d: %w", i, j-1, sat, err)
		}
		again := !s.counted.first(rid)
		for k, x := range r.Results {
			if !again {
				s.count(x)
			}
			x.ScenarioTimeNs = req.ScenarioTimeNs[i+k]
		}
		s.use(req.Pages[i:j]...)
		out.Results = append(out.Results, r.Results...)
		i = j
	}
	return out, nil
}

// WritePage forwards a write to the serving satellite.
func (g *Gateway) WritePage(ctx context.Context, req *satpagev1.WritePageRequest) (*satpagev1.WritePageResponse, error) {
	s, unlock, err := g.acquire(ctx, req.SessionId, req.ScenarioTimeNs)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if req.ScenarioTimeNs, err = g.liveTime(s, req.ScenarioTimeNs); err != nil {
		return nil, err
	}
	var r *satpagev1.WritePageResponse
	err = g.atServer(ctx, s, req.ScenarioTimeNs, func(c satpagev1.PageServiceClient) (err error) {
		s.writing(req.Page) // after serving's copy ahead, before the write can change the page
		r, err = c.WritePage(ctx, req)
		return err
	})
	if err != nil {
		return nil, err
	}
	r.ScenarioTimeNs = req.ScenarioTimeNs
	if s.counted.first(req.RequestId) {
		s.count(&satpagev1.ReadPageResponse{Outcome: r.Outcome, Hops: r.Hops})
	}
	s.use(req.Page)
	return r, nil
}

// EndSession ends the session at its serving satellite and forgets it.
func (g *Gateway) EndSession(ctx context.Context, req *satpagev1.EndSessionRequest) (*satpagev1.EndSessionResponse, error) {
	s, unlock, err := g.acquire(ctx, req.SessionId, req.ScenarioTimeNs)
	if err != nil {
		return nil, err
	}
	defer unlock()
	t, err := g.liveTime(s, req.ScenarioTimeNs)
	if err != nil && s.live == nil {
		return nil, err
	}
	return g.end(ctx, s, t)
}

// end ends s at its serving satellite, sweeps the trail and forgets s (s locked).
func (g *Gateway) end(ctx context.Context, s *session, tNs int64) (*satpagev1.EndSessionResponse, error) {
	req := &satpagev1.EndSessionRequest{SessionId: s.id, ScenarioTimeNs: max(tNs, s.visits[s.cur].StartNs)}
	var r *satpagev1.EndSessionResponse
	err := g.atServer(ctx, s, req.ScenarioTimeNs, func(c satpagev1.PageServiceClient) (err error) {
		r, err = c.EndSession(ctx, req)
		return err
	})
	if err != nil {
		return nil, err
	}
	sat := s.visits[s.cur].Satellite
	// Sweep the trail: a release that failed mid-move left a stale copy at a past
	// satellite that no page table names any more; drop it too.
	swept := map[uint32]bool{sat: true}
	for _, v := range append(s.visits[:s.cur+1:s.cur+1], s.strayCopies()...) {
		if swept[v.Satellite] {
			continue
		}
		swept[v.Satellite] = true
		pc, err := g.peers.Satellite(v.Satellite)
		if err != nil {
			return nil, err
		}
		d, err := pc.DropSession(ctx, &satpagev1.DropSessionRequest{SessionId: req.SessionId,
			Route: &satpagev1.Route{Origin: v.Satellite, Destination: v.Satellite, ScenarioTimeNs: req.ScenarioTimeNs}})
		if err != nil {
			g.log.WarnContext(ctx, "trail sweep failed", "session", req.SessionId, "satellite", v.Satellite, "err", err)
			continue
		}
		r.PagesDeleted += d.FramesDeleted
	}
	// The satellites the session was taken over from: a table of it restored
	// there before the takeover is stale, and goes with the frames.
	for _, at := range s.left {
		if at == sat {
			continue // it serves the session again (a later visit), and ended it
		}
		pc, err := g.peers.Satellite(at)
		if err != nil {
			return nil, err
		}
		d, err := pc.DropSession(ctx, &satpagev1.DropSessionRequest{SessionId: req.SessionId, TakenOver: true,
			Route: &satpagev1.Route{Origin: at, Destination: at, ScenarioTimeNs: req.ScenarioTimeNs}})
		if err != nil {
			g.log.WarnContext(ctx, "sweep of a satellite the session was taken over from failed", "session", req.SessionId, "satellite", at, "err", err)
			continue
		}
		if !swept[at] {
			r.PagesDeleted += d.FramesDeleted
		}
	}
	s.ended = true
	g.mu.Lock()
	delete(g.sessions, req.SessionId)
	g.mu.Unlock()
	g.m.Sessions.Dec()
	return r, nil
}

// SessionStats performs the handovers due by the time given and reports the counts.
func (g *Gateway) SessionStats(ctx context.Context, req *satpagev1.SessionStatsRequest) (*satpagev1.SessionStatsResponse, error) {
	s, unlock, err := g.acquire(ctx, req.SessionId, req.ScenarioTimeNs)
	if err != nil {
		return nil, err
	}
	defer unlock()
	t, err := g.liveTime(s, req.ScenarioTimeNs)
	if err != nil {
		return nil, err
	}
	t = max(t, s.visits[s.cur].StartNs)
	// The serving satellite first: asking it flushes the releases it owes the
	// past satellites, so their frame counts are settled when asked next. Dead,
	// it is taken over (failover.go) before anything is reported.
	flush := func(sat uint32) error {
		serving, err := g.peers.Satellite(sat)
		if err == nil {
			_, err = serving.SessionFrames(ctx, &satpagev1.SessionFramesRequest{SessionId: s.id})
		}
		return err
	}
	if err := g.drive(ctx, s, t, flush); err != nil {
		return nil, fmt.Errorf("frames of session %q at satellite %d: %w", s.id, s.visits[s.cur].Satellite, err)
	}
	out := &satpagev1.SessionStatsResponse{Visit: uint32(s.cur), TablePages: append([]uint32{}, s.tables...),
		OndemandMoves: s.stats.OndemandMoves, OndemandHops: s.stats.OndemandHops,
		ProactiveMoves: s.stats.ProactiveMoves, ProactiveHops: s.stats.ProactiveHops,
		PushMoves: s.stats.PushMoves, PushHops: s.stats.PushHops,
		Accesses: s.stats.Accesses, Created: s.stats.Created, ScenarioTimeNs: t}
	if s.live != nil && s.live.ahead != nil {
		out.CopiedAheadFor = &satpagev1.Visit{Satellite: s.live.ahead.to, StartNs: s.live.ahead.forNs}
	}
	for _, v := range s.visits[:s.cur+1] {
		out.Visits = append(out.Visits, &satpagev1.Visit{Satellite: v.Satellite, StartNs: v.StartNs})
	}
	for v := 0; v <= s.cur; v++ {
		c, err := g.peers.Satellite(s.visits[v].Satellite)
		if err != nil {
			return nil, err
		}
		f, err := c.SessionFrames(ctx, &satpagev1.SessionFramesRequest{SessionId: s.id})
		if mayBeDead(err) && v < s.cur {
			f, err = g.framesFromCopy(ctx, s.id, s.visits[v].Satellite, err)
		}
		if err != nil {
			return nil, fmt.Errorf("frames of session %q at satellite %d: %w", s.id, s.visits[v].Satellite, err)
		}
		out.FramesByVisit = append(out.FramesByVisit, f.Frames)
		if v == s.cur {
			if !f.Serving {
				return nil, fmt.Errorf("satellite %d should serve session %q but holds no page table: %w",
					s.visits[v].Satellite, s.id, errs.ErrNotServing)
			}
			out.TablePages = append(out.TablePages, f.TablePages)
		}
	}
	return out, nil
}

type pageServer struct {
	satpagev1.UnimplementedPageServiceServer
	g *Gateway
}

// done times a request and maps its error to a status (the only place errors become codes).
func (g *Gateway) done(ctx context.Context, rpc string, start time.Time, err error) error {
	st := errs.Status(err)
	g.m.RPCSeconds.WithLabelValues(rpc).Observe(time.Since(start).Seconds())
	g.m.Requests.WithLabelValues(rpc, errs.Code(err).String()).Inc()
	if err != nil {
		g.log.DebugContext(ctx, "request failed", "rpc", rpc, "err", err)
	}
	return st
}

// serve runs one handler: the gateway's request timeout, then done's timing and
// error-to-status mapping. Every handler goes through it.
func serve[Req, Resp any](g *Gateway, ctx context.Context, rpc string, req Req,
	f func(context.Context, Req) (Resp, error)) (Resp, error) {
	start := time.Now()
	ctx, cancel := g.withTimeout(ctx)
	defer cancel()
	r, err := f(ctx, req)
	return r, g.done(ctx, rpc, start, err)
}

func (p *pageServer) ReadPage(ctx context.Context, req *satpagev1.ReadPageRequest) (*satpagev1.ReadPageResponse, error) {
	return serve(p.g, ctx, "ReadPage", req, p.g.ReadPage)
}

func (p *pageServer) ReadPages(ctx context.Context, req *satpagev1.ReadPagesRequest) (*satpagev1.ReadPagesResponse, error) {
	return serve(p.g, ctx, "ReadPages", req, p.g.ReadPages)
}

func (p *pageServer) WritePage(ctx context.Context, req *satpagev1.WritePageRequest) (*satpagev1.WritePageResponse, error) {
	return serve(p.g, ctx, "WritePage", req, p.g.WritePage)
}

func (p *pageServer) EndSession(ctx context.Context, req *satpagev1.EndSessionRequest) (*satpagev1.EndSessionResponse, error) {
	return serve(p.g, ctx, "EndSession", req, p.g.EndSession)
}

type gatewayServer struct {
	satpagev1.UnimplementedGatewayServiceServer
	g *Gateway
}

func (s *gatewayServer) RegisterSession(ctx context.Context, req *satpagev1.RegisterSessionRequest) (*satpagev1.RegisterSessionResponse, error) {
	start := time.Now()
	ctx, cancel := s.g.withTimeout(ctx)
	defer cancel()
	err := s.g.RegisterSession(ctx, req)
	if err != nil {
		return nil, s.g.done(ctx, "RegisterSession", start, err)
	}
	return s.g.capability(req), s.g.done(ctx, "RegisterSession", start, nil)
}

func (s *gatewayServer) OpenLiveSession(ctx context.Context, req *satpagev1.OpenLiveSessionRequest) (*satpagev1.OpenLiveSessionResponse, error) {
	return serve(s.g, ctx, "OpenLiveSession", req, s.g.OpenLiveSession)
}

func (s *gatewayServer) Clock(ctx context.Context, req *satpagev1.ClockRequest) (*satpagev1.ClockResponse, error) {
	return serve(s.g, ctx, "Clock", req, s.g.Clock)
}

func (s *gatewayServer) SessionStats(ctx context.Context, req *satpagev1.SessionStatsRequest) (*satpagev1.SessionStatsResponse, error) {
	return serve(s.g, ctx, "SessionStats", req, s.g.SessionStats)
}
