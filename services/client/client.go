// Package client is the Go client library of a live satpage service
// (docs/live.md): open a session by location, then write and read its pages;
// the service hands the session over between satellites by itself.
//
// The operations are those of the Python library satpage.client: Open, Write,
// Read, Stats, Close. Errors wrap one of ErrSessionExpired, ErrPageLost,
// ErrUnavailable, ErrInvalidArgument (test with errors.Is), never a bare gRPC
// status; the kind is decided on the service's ErrorInfo reason (Error.Reason),
// not on the message text.
//
// TLS (docs/security.md): Dial with Options.TLSDir (ca.pem, client.pem,
// client-key.pem) dials mutual TLS 1.3 and checks that the gateway presents
// gateway.satpage; without it the connection is plain text (a gateway started
// --insecure). The session token returned at open is attached to every later
// call of the session (gRPC metadata satpage-token).
package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/errs"
	"github.com/satpage/satpage/services/internal/tlsconf"
)

// The kinds of failure a caller can act on.
var (
	// ErrSessionExpired: the session is gone (ended, or idle past the gateway's timeout).
	ErrSessionExpired = errors.New("session expired")
	// ErrPageLost: a page the session had is gone (every satellite that held
	// it lost its memory).
	ErrPageLost = errors.New("page lost")
	// ErrUnavailable: no answer now (gateway or satellite down, no satellite above
	// the minimum elevation, the ephemeris horizon passed); retry later.
	ErrUnavailable = errors.New("unavailable")
	// ErrInvalidArgument: the request itself is wrong.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrFailed: any other failure (the message says which).
	ErrFailed = errors.New("request failed")
)

// TokenKey is the gRPC metadata key of the session capability token.
const TokenKey = "satpage-token"

// Error is a failed request: Kind is one of the sentinel errors above, Code
// the gRPC status code it came from and Reason the service's ErrorInfo reason
// (UNKNOWN_SESSION, PAGE_NOT_FOUND, ...; "" when it gave none), on which Kind
// is decided: NOT_FOUND alone is both an expired session and a lost page.
type Error struct {
	Kind   error
	Code   codes.Code
	Reason string
	Op     string
	Msg    string
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %s: %s", e.Op, e.Kind, e.Msg) }
func (e *Error) Unwrap() error { return e.Kind }

func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	st, _ := status.FromError(err)
	reason := errs.Reason(err)
	kind := ErrFailed
	switch {
	case reason == errs.ReasonUnknownSession:
		kind = ErrSessionExpired
	case reason == errs.ReasonNotFound:
		kind = ErrPageLost
	case st.Code() == codes.Unavailable, st.Code() == codes.DeadlineExceeded:
		kind = ErrUnavailable
	case st.Code() == codes.InvalidArgument, st.Code() == codes.OutOfRange:
		kind = ErrInvalidArgument
	}
	return &Error{Kind: kind, Code: st.Code(), Reason: reason, Op: op, Msg: st.Message()}
}

// Strategy is how a session's pages follow it from satellite to satellite.
type Strategy int32

const (
	OnDemand  Strategy = Strategy(satpagev1.Strategy_STRATEGY_ON_DEMAND)  // a page moves when used
	Proactive Strategy = Strategy(satpagev1.Strategy_STRATEGY_PROACTIVE)  // every page moves at each handover
	PushAhead Strategy = Strategy(satpagev1.Strategy_STRATEGY_PUSH_AHEAD) // the pages used during a visit move at its end
)

// Options tune Dial.
type Options struct {
	// TLSDir holds ca.pem, client.pem and client-key.pem; empty: plain text.
	TLSDir string
	// Timeout bounds each call that has no deadline of its own (default 30 s).
	Timeout time.Duration
	// DialOptions are added to the connection's (for example a custom dialer).
	DialOptions []grpc.DialOption
}

// Gateway is a connection to a satpage gateway; safe for concurrent use by many sessions.
type Gateway struct {
	conn    *grpc.ClientConn
	own     bool
	timeout time.Duration
	pages   satpagev1.PageServiceClient
	control satpagev1.GatewayServiceClient
}

// Dial connects to the gateway at target (host:port).
func Dial(target string, o Options) (*Gateway, error) {
	creds := insecure.NewCredentials()
	if o.TLSDir != "" {
		m, err := tlsconf.LoadClient(o.TLSDir)
		if err != nil {
			return nil, &Error{Kind: ErrInvalidArgument, Code: codes.InvalidArgument, Op: "dial " + target, Msg: err.Error()}
		}
		creds = credentials.NewTLS(m.Client(tlsconf.GatewayName()))
	}
	conn, err := grpc.NewClient(target, append([]grpc.DialOption{grpc.WithTransportCredentials(creds)}, o.DialOptions...)...)
	if err != nil {
		return nil, &Error{Kind: ErrInvalidArgument, Code: codes.InvalidArgument, Op: "dial " + target, Msg: err.Error()}
	}
	g := NewGateway(conn, o.Timeout)
	g.own = true
	return g, nil
}

// NewGateway uses an existing connection (which the caller closes).
func NewGateway(conn *grpc.ClientConn, timeout time.Duration) *Gateway {
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	return &Gateway{conn: conn, timeout: timeout, pages: satpagev1.NewPageServiceClient(conn),
		control: satpagev1.NewGatewayServiceClient(conn)}
}

// Close closes the connection if Dial opened it.
func (g *Gateway) Close() error {
	if g.own {
		return g.conn.Close()
	}
	return nil
}

func (g *Gateway) ctx(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, g.timeout)
}

// Clock is the gateway's constellation clock and ephemeris.
type Clock struct {
	Epoch           time.Time
	Speed           float64
	NowNs           int64
	Constellation   string
	EphemerisEndNs  int64
	StepNs          int64
	Policy          string
	Sticky          bool
	MinElevationDeg float64
	// Scheduled reallocation at ReallocationPhaseNs + k*ReallocationIntervalNs
	// (0: none).
	ReallocationIntervalNs int64
	ReallocationPhaseNs    int64
}

// Clock asks the gateway for its clock.
func (g *Gateway) Clock(ctx context.Context) (Clock, error) {
	ctx, cancel := g.ctx(ctx)
	defer cancel()
	c, err := g.control.Clock(ctx, &satpagev1.ClockRequest{})
	if err != nil {
		return Clock{}, wrap("clock", err)
	}
	epoch, _ := time.Parse(time.RFC3339Nano, c.Epoch)
	return Clock{Epoch: epoch, Speed: c.Speed, NowNs: c.NowNs, Constellation: c.Constellation, EphemerisEndNs: c.EphemerisEndNs,
		StepNs: c.StepNs, Policy: c.Policy, Sticky: c.Sticky, MinElevationDeg: c.MinElevationDeg,
		ReallocationIntervalNs: c.ReallocationIntervalNs, ReallocationPhaseNs: c.ReallocationPhaseNs}, nil
}

// Session is a live session. Its methods may be called from one goroutine at a
// time (the service serves a session's requests in order anyway).
type Session struct {
	g         *Gateway
	ID        string
	LatDeg    float64
	LonDeg    float64
	Satellite uint32 // serving satellite at the last request
	OpenedNs  int64  // the clock's time at open
	token     string
}

// Open opens a session for a place (degrees, WGS84).
func (g *Gateway) Open(ctx context.Context, latDeg, lonDeg float64, strategy Strategy) (*Session, error) {
	ctx, cancel := g.ctx(ctx)
	defer cancel()
	var header, trailer metadata.MD
	r, err := g.control.OpenLiveSession(ctx, &satpagev1.OpenLiveSessionRequest{LatDeg: latDeg, LonDeg: lonDeg,
		Strategy: satpagev1.Strategy(strategy)}, grpc.Header(&header), grpc.Trailer(&trailer))
	if err != nil {
		return nil, wrap(fmt.Sprintf("open a session at %v, %v", latDeg, lonDeg), err)
	}
	token := r.Token
	for _, md := range []metadata.MD{header, trailer} {
		if v := md.Get(TokenKey); token == "" && len(v) > 0 {
			token = v[0]
		}
	}
	return &Session{g: g, ID: r.SessionId, LatDeg: latDeg, LonDeg: lonDeg, Satellite: r.Satellite, OpenedNs: r.ScenarioTimeNs, token: token}, nil
}

func (s *Session) ctx(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := s.g.ctx(ctx)
	if s.token != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, TokenKey, s.token)
	}
	return ctx, cancel
}

// Access is how the service served one read or write.
type Access struct {
	Satellite      uint32 // the serving satellite
	Moved          bool   // the page was fetched from another satellite (a page fault)
	Hops           uint32 // ISL hops it travelled
	ScenarioTimeNs int64  // the clock's time the gateway used
}

// Write stores data as page page.
func (s *Session) Write(ctx context.Context, page uint32, data []byte) (Access, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	r, err := s.g.pages.WritePage(ctx, &satpagev1.WritePageRequest{SessionId: s.ID, Page: page, Data: data})
	if err != nil {
		return Access{}, wrap(fmt.Sprintf("write page %d of session %s", page, s.ID), err)
	}
	s.Satellite = r.Satellite
	return Access{Satellite: r.Satellite, Moved: r.Outcome == satpagev1.Outcome_OUTCOME_MOVED, Hops: r.Hops, ScenarioTimeNs: r.ScenarioTimeNs}, nil
}

// Read returns page page (empty if never written).
func (s *Session) Read(ctx context.Context, page uint32) ([]byte, Access, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	r, err := s.g.pages.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: s.ID, Page: page})
	if err != nil {
		return nil, Access{}, wrap(fmt.Sprintf("read page %d of session %s", page, s.ID), err)
	}
	s.Satellite = r.Satellite
	return r.Data, Access{Satellite: r.Satellite, Moved: r.Outcome == satpagev1.Outcome_OUTCOME_MOVED, Hops: r.Hops, ScenarioTimeNs: r.ScenarioTimeNs}, nil
}

// Handover is one entry of a session's schedule: from TimeNs on, Satellite serves.
type Handover struct {
	TimeNs    int64
	Satellite uint32
}

// Stats are the serving satellites so far and the costs the relays measured.
type Stats struct {
	Schedule                      []Handover
	ScenarioTimeNs                int64
	Accesses, Created             uint64
	OnDemandMoves, OnDemandHops   uint64
	ProactiveMoves, ProactiveHops uint64
	PushMoves, PushHops           uint64
}

// Movements and PageHops are the totals over every kind of page movement.
func (st Stats) Movements() uint64 { return st.OnDemandMoves + st.ProactiveMoves + st.PushMoves }
func (st Stats) PageHops() uint64  { return st.OnDemandHops + st.ProactiveHops + st.PushHops }

// Stats asks the gateway for the session's schedule and counts.
func (s *Session) Stats(ctx context.Context) (Stats, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	r, err := s.g.control.SessionStats(ctx, &satpagev1.SessionStatsRequest{SessionId: s.ID})
	if err != nil {
		return Stats{}, wrap("stats of session "+s.ID, err)
	}
	st := Stats{ScenarioTimeNs: r.ScenarioTimeNs, Accesses: r.Accesses, Created: r.Created,
		OnDemandMoves: r.OndemandMoves, OnDemandHops: r.OndemandHops, ProactiveMoves: r.ProactiveMoves,
		ProactiveHops: r.ProactiveHops, PushMoves: r.PushMoves, PushHops: r.PushHops}
	for _, v := range r.Visits {
		st.Schedule = append(st.Schedule, Handover{TimeNs: v.StartNs, Satellite: v.Satellite})
	}
	return st, nil
}

// Close ends the session: its pages are deleted on every satellite of its
// trail. Returns how many were deleted.
func (s *Session) Close(ctx context.Context) (uint32, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	r, err := s.g.pages.EndSession(ctx, &satpagev1.EndSessionRequest{SessionId: s.ID})
	if err != nil {
		return 0, wrap("end session "+s.ID, err)
	}
	return r.PagesDeleted, nil
}
