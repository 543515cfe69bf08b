// Package peers dials other satellites (lazily, one connection each, reused).
package peers

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/errs"
)

// resolver looks peers' names up (a variable for tests), through each pool's
// cache (names.go). gRPC's own DNS resolver keeps the addresses it found and
// looks again only when a connection fails, at most every 30 s; a satellite
// back in a new pod or task has a new address under its old name, so the first
// request after its return went to the dead address and failed (make e2e-k8s:
// "dial tcp 10.244.0.138:7000: i/o timeout" 5 s after the new pod was Ready).
// Peers are dialled "passthrough" with the cache's dialer instead: connections
// are made on demand and kept, a name is looked up again when its answer is
// older than NameTTL or a connection to it failed, and no more often than
// NameRetry allows.
var resolver hostResolver = net.DefaultResolver

// target is addr for grpc.NewClient: passthrough (the name cache resolves) unless
// it names a resolver scheme itself.
func target(addr string) string {
	if strings.Contains(addr, "://") || strings.HasPrefix(addr, "unix:") {
		return addr
	}
	return "passthrough:///" + addr
}

// Dialer returns a client for satellite i.
type Dialer interface {
	Satellite(i uint32) (satpagev1.SatelliteServiceClient, error)
	Page(i uint32) (satpagev1.PageServiceClient, error)
	Close() error
}

// Pool dials addr(i) once per satellite and keeps the connection.
type Pool struct {
	addr func(uint32) string
	opts []grpc.DialOption
	per  func(uint32) []grpc.DialOption // options for satellite i only (its TLS server name)
	nc   *names                         // the name cache its connections dial through

	mu            sync.Mutex // guards conns, onUnavailable, onAnswer, intercept and unanswered
	conns         map[uint32]*grpc.ClientConn
	onUnavailable func(ctx context.Context, i uint32)
	onAnswer      func(i uint32)
	intercept     func(i uint32) grpc.UnaryClientInterceptor
	// unanswered: satellites whose last call got no answer within a deadline
	// (Unanswered), until one answers.
	unanswered map[uint32]bool
	streamOn   bool                    // StreamFetches
	streams    map[uint32]*fetchStream // the open fetch streams (nil once closed)
	readers    sync.WaitGroup          // the fetch streams' readers
}

// connectGiveUp is how long a connection attempt to an address that answers
// nothing waits (grpc.ConnectParams.MinConnectTimeout, below): a call that
// failed as unavailable only after it had waited that long met silence, not
// a refusal.
const connectGiveUp = time.Second

// Unanswered reports whether the last call to satellite i (a health check
// included) got no answer within a deadline: it ran out of its deadline, or
// its connection attempt timed out (a dial or TLS handshake that nothing
// answered), and no call has been answered since. gRPC reports such a
// connection's failure, and the next calls' while it waits to reconnect, as
// Unavailable with the cause only in its text: the failure detector asks this
// instead, to tell silence (a paused or slow satellite) from a refusal.
func (p *Pool) Unanswered(i uint32) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.unanswered[i]
}

// observe records whether a call to i, begun at start, was answered.
func (p *Pool) observe(ctx context.Context, i uint32, start time.Time, err error) {
	code := status.Code(err)
	silent := code == codes.DeadlineExceeded ||
		(code == codes.Unavailable && (ctx.Err() != nil || time.Since(start) >= connectGiveUp))
	answered := code != codes.Unavailable && code != codes.DeadlineExceeded && code != codes.Canceled
	if !silent && !answered {
		return // a refusal right away, or a caller that gave up: no news of silence
	}
	p.mu.Lock()
	if p.unanswered == nil {
		p.unanswered = map[uint32]bool{}
	}
	if silent {
		p.unanswered[i] = true
	} else {
		delete(p.unanswered, i)
	}
	p.mu.Unlock()
}

// OnUnavailable registers f, called (before the caller sees the error) when a
// call to satellite i fails with Unavailable: the failure detector's cue.
// Health checks are left out (they are the detector's own probes).
func (p *Pool) OnUnavailable(f func(ctx context.Context, i uint32)) {
	p.mu.Lock()
	p.onUnavailable = f
	p.mu.Unlock()
}

// OnAnswer registers f, called when satellite i answered a call (with a
// result, or an error of its own: anything but Unavailable, DeadlineExceeded
// or Canceled): proof that it is alive, for the failure detector.
func (p *Pool) OnAnswer(f func(i uint32)) {
	p.mu.Lock()
	p.onAnswer = f
	p.mu.Unlock()
}

// Intercept adds f(i)'s interceptor to the connection to satellite i (link
// emulation, linkemu.Model.ClientInterceptor), after the pool's own: the
// failure detector sees every call's outcome, not a wait. Call before the
// first connection is made.
func (p *Pool) Intercept(f func(i uint32) grpc.UnaryClientInterceptor) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.intercept = f
}

func (p *Pool) report(i uint32) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		start := time.Now()
		return p.outcome(ctx, i, cc, method, start, invoker(ctx, method, req, reply, cc, opts...))
	}
}

// outcome tells the failure detector what a call to satellite i over cc,
// begun at start, met, and returns its error (Unavailable for a call the
// pool's own closing of cc cut off): every call, unary or on a fetch stream.
func (p *Pool) outcome(ctx context.Context, i uint32, cc *grpc.ClientConn, method string, start time.Time, err error) error {
	if status.Code(err) == codes.Canceled && ctx.Err() == nil && cc.GetState() == connectivity.Shutdown {
		// The pool closed the connection under the call (forgetAbsent): not
		// delivered, as for a connection that is down.
		err = status.Errorf(codes.Unavailable, "satellite %d: connection closed: %v", i, err)
	}
	p.observe(ctx, i, start, err)
	if status.Code(err) == codes.Unavailable {
		p.forgetAbsent(i, cc)
	}
	if method == healthpb.Health_Check_FullMethodName {
		return err
	}
	switch status.Code(err) {
	case codes.Unavailable:
		p.mu.Lock()
		f := p.onUnavailable
		p.mu.Unlock()
		if f != nil {
			f(ctx, i)
		}
	case codes.DeadlineExceeded, codes.Canceled:
	default:
		p.mu.Lock()
		f := p.onAnswer
		p.mu.Unlock()
		if f != nil {
			f(i)
		}
	}
	return err
}

var _ Dialer = (*Pool)(nil)

// MaxMessageBytes lets a batch of 256 pages of 64 KiB through (gRPC's default is 4 MiB).
const MaxMessageBytes = 32 << 20

// Transport settings shared by every server and client. Fixed flow-control
// windows switch off gRPC's BDP estimator, which otherwise sends a PING (a
// write and a wake-up at the peer) with most data frames; on loopback and in a
// pod network the windows never limit throughput, and each syscall saved is a
// large share of a page fault's cost. Buffers hold a 64-page batch of 4 KiB.
const (
	streamWindowBytes = 4 << 20
	connWindowBytes   = 16 << 20
	bufferBytes       = 256 << 10
)

// ServerOptions are the grpc.NewServer options of every satpage daemon.
func ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.MaxRecvMsgSize(MaxMessageBytes), grpc.MaxSendMsgSize(MaxMessageBytes),
		grpc.InitialWindowSize(streamWindowBytes), grpc.InitialConnWindowSize(connWindowBytes),
		grpc.WriteBufferSize(bufferBytes), grpc.ReadBufferSize(bufferBytes),
		// Reused handler goroutines keep their grown stacks: no stack copy per RPC.
		grpc.NumStreamWorkers(4),
	}
}

// NewPool dials satellite i at addr(i) with opts (insecure transport when none given).
func NewPool(addr func(uint32) string, opts ...grpc.DialOption) *Pool {
	if len(opts) == 0 {
		opts = []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	}
	// The name cache's dialer first: a caller's own dialer (in-process tests) comes later and wins.
	nc := newNames(resolver, NameTTL, NameRetry, NameFirstRetry)
	opts = append([]grpc.DialOption{grpc.WithContextDialer(nc.dial)}, opts...)
	// Fail fast (docs/faults.md): no wait-for-ready, so a request to a satellite
	// whose connection is down fails at once with Unavailable instead of waiting
	// out its deadline; reconnection is retried every 0.1 to 1 s and a connection
	// attempt to an address that does not answer gives up after 1 s. Callers
	// retry (origins resend idempotent requests, on the live graph) or turn to a replica.
	opts = append(opts, grpc.WithDefaultCallOptions(grpc.WaitForReady(false),
		grpc.MaxCallRecvMsgSize(MaxMessageBytes), grpc.MaxCallSendMsgSize(MaxMessageBytes)),
		grpc.WithConnectParams(grpc.ConnectParams{MinConnectTimeout: connectGiveUp,
			Backoff: backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second}}),
		grpc.WithInitialWindowSize(streamWindowBytes), grpc.WithInitialConnWindowSize(connWindowBytes),
		grpc.WithWriteBufferSize(bufferBytes), grpc.WithReadBufferSize(bufferBytes))
	return &Pool{addr: addr, opts: opts, nc: nc, conns: map[uint32]*grpc.ClientConn{}}
}

// NewPoolPer is NewPool with per(i) added to the options of satellite i (its
// transport credentials: TLS checking the certificate names satellite i).
func NewPoolPer(addr func(uint32) string, per func(uint32) []grpc.DialOption, opts ...grpc.DialOption) *Pool {
	if len(opts) == 0 {
		opts = []grpc.DialOption{}
	}
	p := NewPool(addr, append(opts, grpc.EmptyDialOption{})...)
	p.per = per
	return p
}

// NeverSeen reports whether satellite i's name has been looked up and has
// never resolved: it has not appeared yet (a pod with no address, a task with
// no record), so it never ran and holds nothing. A satellite that was seen and
// is gone is not NeverSeen (it is Unreachable).
func (p *Pool) NeverSeen(i uint32) bool {
	host, ok := dialledHost(p.addr(i))
	return ok && p.nc.neverSeen(host)
}

// forgetAbsent closes the connection cc to satellite i when i has never
// appeared (NeverSeen): gRPC would otherwise keep reconnecting to it about
// every second, in the background, for as long as it does not appear (a
// dial and a name lookup each time, from every satellite that once called
// it). The next call makes a new connection, whose dial asks the name within
// its backoff (NameFirstRetry). A connection to a satellite seen before is
// kept: it reconnects on its own, and the satellite is routed around
// meanwhile (Unreachable).
func (p *Pool) forgetAbsent(i uint32, cc *grpc.ClientConn) {
	if !p.NeverSeen(i) {
		return
	}
	p.mu.Lock()
	if p.conns[i] == cc {
		delete(p.conns, i)
	} else {
		cc = nil // already forgotten (or replaced): not ours to close
	}
	p.mu.Unlock()
	if cc != nil {
		go cc.Close() // not from inside one of its own calls
	}
}

// Unreachable reports whether the connection to satellite i is down from here
// (its last attempt to connect failed): a call that then failed with
// Unavailable was not delivered to i at all.
func (p *Pool) Unreachable(i uint32) bool {
	p.mu.Lock()
	c, ok := p.conns[i]
	p.mu.Unlock()
	if !ok {
		return false
	}
	st := c.GetState()
	return st == connectivity.TransientFailure || st == connectivity.Shutdown
}

// NotReady reports whether the pool's connection to satellite i exists and is
// not ready (idle, connecting, in failure or closed). A call to i that just
// failed Unavailable with it so was not delivered, or its connection broke
// under it; either way a call sent again now fails the same way at once.
// Callers decide on this state, never on the error's text.
func (p *Pool) NotReady(i uint32) bool {
	p.mu.Lock()
	c, ok := p.conns[i]
	p.mu.Unlock()
	return ok && c.GetState() != connectivity.Ready
}

// Reconnect is for a caller that holds satellite i dead and asks again (the
// failure detector's re-probe): the next connection attempt to i looks its
// name up afresh, whatever the name's backoff, a connection waiting out gRPC's
// reconnection backoff tries at once, and Reconnect returns when the
// connection is ready, or with ctx's error. A satellite back at a new address
// is then reached by the call that follows. Without it, the re-probe of a
// satellite back as a new task failed at once on its connection's last
// failure, and the reconnections dialled the address it had left (make
// e2e-swarm: held dead ~30 s after its return). The wait is no call, so a
// satellite that is still gone is not counted as Unanswered by it.
//
// A satellite that has never appeared (NeverSeen) has no address to be back
// at: its name is asked only when its backoff (NameFirstRetry) has passed, and
// Reconnect fails at once while it still does not resolve.
func (p *Pool) Reconnect(ctx context.Context, i uint32) error {
	if host, ok := dialledHost(p.addr(i)); ok {
		if p.nc.neverSeen(host) {
			if _, err := p.nc.addrs(ctx, host); err != nil {
				return fmt.Errorf("satellite %d has not appeared yet: %v: %w", i, err, errs.ErrUnavailable)
			}
		} else {
			p.nc.refresh(host)
		}
	}
	c, err := p.conn(i)
	if err != nil {
		return err
	}
	c.ResetConnectBackoff()
	for st := c.GetState(); st != connectivity.Ready; st = c.GetState() {
		if st == connectivity.Shutdown {
			return fmt.Errorf("satellite %d: connection closed: %w", i, errs.ErrUnavailable)
		}
		c.Connect() // from Idle; a no-op otherwise
		if !c.WaitForStateChange(ctx, st) {
			p.forgetAbsent(i, c) // its name did not resolve meanwhile: no reconnecting in the background
			return ctx.Err()
		}
	}
	return nil
}

// dialledHost is the host the name cache is asked for when addr is dialled
// (target: passthrough, or no scheme); false for an address another resolver
// looks up.
func dialledHost(addr string) (string, bool) {
	addr, passthrough := strings.CutPrefix(target(addr), "passthrough:///")
	if !passthrough {
		return "", false
	}
	host, _, err := net.SplitHostPort(addr)
	return host, err == nil
}

func (p *Pool) conn(i uint32) (*grpc.ClientConn, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.conns[i]; ok {
		return c, nil
	}
	opts := append(append([]grpc.DialOption{}, p.opts...), grpc.WithChainUnaryInterceptor(p.report(i)))
	if p.intercept != nil {
		opts = append(opts, grpc.WithChainUnaryInterceptor(p.intercept(i)))
	}
	if p.per != nil {
		opts = append(opts, p.per(i)...)
	}
	c, err := grpc.NewClient(target(p.addr(i)), opts...)
	if err != nil {
		return nil, fmt.Errorf("dial satellite %d at %q: %v: %w", i, p.addr(i), err, errs.ErrUnavailable)
	}
	p.conns[i] = c
	return c, nil
}

func (p *Pool) Satellite(i uint32) (satpagev1.SatelliteServiceClient, error) {
	c, err := p.conn(i)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	stream := p.streamOn && p.intercept == nil
	p.mu.Unlock()
	if stream {
		return streamingClient{SatelliteServiceClient: satpagev1.NewSatelliteServiceClient(c), p: p, i: i, cc: c}, nil
	}
	return satpagev1.NewSatelliteServiceClient(c), nil
}

func (p *Pool) Page(i uint32) (satpagev1.PageServiceClient, error) {
	c, err := p.conn(i)
	if err != nil {
		return nil, err
	}
	return satpagev1.NewPageServiceClient(c), nil
}

// Health is the standard gRPC health client of satellite i.
func (p *Pool) Health(i uint32) (healthpb.HealthClient, error) {
	c, err := p.conn(i)
	if err != nil {
		return nil, err
	}
	return healthpb.NewHealthClient(c), nil
}

// Close ends the fetch streams (waiting for their readers) and closes every connection.
func (p *Pool) Close() error {
	p.closeStreams()
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, c := range p.conns {
		c.Close()
		delete(p.conns, i)
	}
	return nil
}
