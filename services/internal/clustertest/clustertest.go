// Package clustertest runs a whole constellation of satellite nodes and a
// gateway in one test process over bufconn, with a switch to cut a node off
// (a partition) and per-node metrics to read.
package clustertest

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/auth"
	"github.com/satpage/satpage/services/internal/config"
	"github.com/satpage/satpage/services/internal/constellation"
	"github.com/satpage/satpage/services/internal/errs"
	"github.com/satpage/satpage/services/internal/gateway"
	"github.com/satpage/satpage/services/internal/linkemu"
	"github.com/satpage/satpage/services/internal/metrics"
	"github.com/satpage/satpage/services/internal/node"
	"github.com/satpage/satpage/services/internal/peers"
	"github.com/satpage/satpage/services/internal/store"
	"github.com/satpage/satpage/services/internal/tlsconf"
)

// Cluster is an in-process constellation.
type Cluster struct {
	Grid    *constellation.Grid
	Nodes   []*node.Node
	Stores  []store.PageStore
	Metrics []*metrics.Node
	// Pools are the satellites' pools to their peers (a test waits with
	// Pool.Reconnect for a connection to be ready).
	Pools   []*peers.Pool
	Gateway satpagev1.PageServiceClient
	Control satpagev1.GatewayServiceClient
	// GatewayImpl is the gateway behind Gateway and Control (live-mode tests drive its ticks).
	GatewayImpl *gateway.Gateway

	mu   sync.Mutex // guards down, frozen, lis and silent (gateways are added while running)
	down map[uint32]bool
	// frozen: satellites paused (Freeze); each channel closes when it resumes.
	frozen map[uint32]chan struct{}
	lis    map[string]*bufconn.Listener
	silent map[string]bool

	tlsDir string
	log    *slog.Logger

	srvs    map[uint32]*grpc.Server // guarded by mu
	grid    *constellation.Grid
	o       Options
	ctxs    []context.Context // per node, ends when it is stopped: its background work
	cancels []context.CancelFunc
}

// Options tune New.
type Options struct {
	// Store returns satellite i's store (default: memory).
	Store func(t testing.TB, i int) store.PageStore
	// Interceptor, if set, wraps every node's unary handlers (fault injection).
	Interceptor func(i int) grpc.UnaryServerInterceptor
	// TLSDir, if set, makes the cluster secure as the daemons are by default
	// (mutual TLS with this material, access policy, session tokens;
	// tlstest.Write makes it). Gateway and Control then present the client
	// certificate; Satellite clients present none.
	TLSDir string
	// Logger of every node, the gateway and their access policies (default: discard).
	Logger *slog.Logger
	// Replicas is every node's replication factor R (0 or 1: none).
	Replicas int
	// HeldWait is every node's bound on a held read fault's adopt
	// (node.Options.HeldWait; 0: node.DefaultHeldWait).
	HeldWait time.Duration
	// HeldTimers, if set, arms every node's timers of that bound: they fire
	// when the test calls HeldTimers.Fire, never by themselves.
	HeldTimers *Timers
	// Live, if set, puts the gateway in live mode.
	Live *gateway.LiveOptions
	// Links, if set, emulates the links as the daemons do (linkemu): every
	// routed request waits its ISLs, and the gateway the ground link of a
	// session with a place.
	Links *linkemu.Model
	// FetchStreams sends fetches between satellites over fetch streams, as a
	// satnode without link emulation does (peers.Pool.StreamFetches). Their
	// messages pass no unary interceptor: Interceptor, Partition and Freeze
	// reach a fetch on a stream only through the stream itself.
	FetchStreams bool
}

// TB is what New needs of its caller: a testing.TB satisfies it, and so does
// the harness of a TestMain (Example functions have no *testing.T).
type TB interface {
	Helper()
	Fatal(args ...any)
	Errorf(format string, args ...any)
	Cleanup(func())
}

// pipeBytes is the buffer of each in-process connection's direction: writes
// past it wait for the reader, so it bounds memory, not message size. Every
// satellite dials its peers, so a 1 MiB buffer made a 30-satellite cluster
// hold hundreds of MiB.
const pipeBytes = 64 << 10

// New starts every satellite of spec and a gateway.
func New(t TB, spec string, o Options) *Cluster {
	t.Helper()
	s, err := constellation.ParseSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	grid, err := constellation.NewGrid(s)
	if err != nil {
		t.Fatal(err)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	c := &Cluster{Grid: grid, down: map[uint32]bool{}, frozen: map[uint32]chan struct{}{}, lis: map[string]*bufconn.Listener{}, tlsDir: o.TLSDir, log: o.Logger,
		srvs: map[uint32]*grpc.Server{}, grid: grid, o: o}
	for i := range s.Satellites {
		c.lis["sat-"+strconv.Itoa(i)] = bufconn.Listen(pipeBytes)
	}
	c.lis["gateway"] = bufconn.Listen(pipeBytes)
	c.Nodes = make([]*node.Node, s.Satellites)
	c.Stores = make([]store.PageStore, s.Satellites)
	c.Metrics = make([]*metrics.Node, s.Satellites)
	c.Pools = make([]*peers.Pool, s.Satellites)
	c.ctxs = make([]context.Context, s.Satellites)
	c.cancels = make([]context.CancelFunc, s.Satellites)
	for i := range s.Satellites {
		c.start(t, i)
	}
	var wg sync.WaitGroup
	for i, n := range c.Nodes {
		wg.Go(func() {
			if err := n.Start(c.ctxs[i]); err != nil {
				t.Errorf("start satellite %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	// Registered after the servers' cleanups, so it runs before them: the nodes'
	// last releases still reach their peers.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, n := range c.Nodes {
			if err := n.Close(ctx); err != nil {
				t.Errorf("close satellite %d: %v", n.Index(), err)
			}
		}
	})
	g, conn := c.AddGateway(t, "gateway", o.Live)
	c.GatewayImpl = g
	c.Gateway = satpagev1.NewPageServiceClient(conn)
	c.Control = satpagev1.NewGatewayServiceClient(conn)
	return c
}

// AddGateway starts a gateway (another replica, or one that replaces a crashed
// one) on a new in-process listener named name, and returns it and a
// connection to it (presenting the client certificate when the cluster is secure).
func (c *Cluster) AddGateway(t TB, name string, live *gateway.LiveOptions) (*gateway.Gateway, *grpc.ClientConn) {
	t.Helper()
	c.mu.Lock()
	if c.lis[name] == nil {
		c.lis[name] = bufconn.Listen(pipeBytes)
	}
	lis := c.lis[name]
	c.mu.Unlock()
	gsec := c.security(t, config.Gateway, -1)
	gpool := gsec.Pool(c.addr, grpc.WithContextDialer(c.dialer))
	g, err := gateway.New(gateway.Options{Grid: c.Grid, Peers: gpool, Issuer: gsec.Issuer, Logger: c.log, Live: live, Links: c.o.Links})
	if err != nil {
		t.Fatal(err)
	}
	gsrv := grpc.NewServer(gsec.ServerOptions()...)
	g.Register(gsrv)
	go gsrv.Serve(lis)
	conn := c.dial(t, name)
	if c.tlsDir != "" {
		cm, err := tlsconf.LoadClient(c.tlsDir)
		if err != nil {
			t.Fatal(err)
		}
		conn.Close()
		conn = c.DialAs(t, name, credentials.NewTLS(cm.Client(tlsconf.GatewayName())))
	}
	t.Cleanup(func() { conn.Close(); gsrv.Stop(); gpool.Close() })
	return g, conn
}

// Inject is an Options.Interceptor for fault injection: satellite sat calls
// fault before serving each request of method (its name, e.g. "FetchPages"),
// and fails the request with fault's error when there is one. fault may block
// (a stalled peer) until the request's context ends.
func Inject(sat int, method string, fault func(ctx context.Context) error) func(i int) grpc.UnaryServerInterceptor {
	return func(i int) grpc.UnaryServerInterceptor {
		if i != sat {
			return nil
		}
		return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if strings.HasSuffix(info.FullMethod, "/"+method) {
				if err := fault(ctx); err != nil {
					return nil, err
				}
			}
			return h(ctx, req)
		}
	}
}

// start builds satellite i with an empty store and serves it (not Started).
func (c *Cluster) start(t TB, i int) {
	var st store.PageStore = store.NewMemory()
	if c.o.Store != nil {
		tb, ok := t.(testing.TB)
		if !ok {
			t.Fatal("clustertest: Options.Store needs a testing.TB")
		}
		st = c.o.Store(tb, i)
	}
	m := metrics.NewNode(i)
	sec := c.security(t, config.Satnode, i)
	pool := sec.Pool(c.addr, grpc.WithContextDialer(c.dialer), grpc.WithChainUnaryInterceptor(c.outgoing(uint32(i))))
	n, err := node.New(node.Options{Index: uint32(i), Grid: c.grid, Store: st, Peers: pool, Metrics: m,
		PageBytes: 4096, Logger: c.o.Logger, Replicas: c.o.Replicas, HeldWait: c.o.HeldWait, AfterFunc: c.o.HeldTimers.afterFunc(),
		AdmitMessage: sec.Policy.AdmitMessage})
	if err != nil {
		t.Fatal(err)
	}
	pool.OnUnavailable(func(ctx context.Context, j uint32) { n.Faults().Suspect(ctx, j) })
	pool.OnAnswer(n.Faults().MarkAlive)
	chain := []grpc.UnaryServerInterceptor{c.partitioned(uint32(i)), n.GroundInterceptor()}
	if c.o.FetchStreams {
		pool.StreamFetches()
	}
	if c.o.Links != nil {
		pool.Intercept(c.o.Links.ClientInterceptor)
		chain = append(chain, c.o.Links.ServerInterceptor(uint32(i)))
	}
	if c.o.Interceptor != nil {
		if ic := c.o.Interceptor(i); ic != nil {
			chain = append(chain, ic)
		}
	}
	srv := grpc.NewServer(append(sec.ServerOptions(), grpc.ChainUnaryInterceptor(chain...))...)
	n.Register(srv)
	// The standard health service, as the daemon serves it: the failure
	// detector's probes then pass the interceptors (a partitioned or frozen
	// satellite fails them).
	healthpb.RegisterHealthServer(srv, health.NewServer())
	c.mu.Lock()
	lis := c.lis["sat-"+strconv.Itoa(i)]
	c.srvs[uint32(i)] = srv
	c.mu.Unlock()
	go srv.Serve(lis)
	ctx, cancel := context.WithCancel(context.Background())
	c.ctxs[i], c.cancels[i] = ctx, cancel
	t.Cleanup(func() { cancel(); srv.Stop(); pool.Close(); st.Close() })
	c.Nodes[i], c.Stores[i], c.Metrics[i], c.Pools[i] = n, st, m, pool
}

// Kill stops satellite i at once, its memory with it (its store and the
// copies it held for others): every connection to it is refused from now on.
func (c *Cluster) Kill(i uint32) {
	c.mu.Lock()
	srv := c.srvs[i]
	c.down[i] = true
	gone := bufconn.Listen(pipeBytes)
	gone.Close() // dials to a closed listener fail at once: connection refused
	c.lis["sat-"+strconv.Itoa(int(i))] = gone
	cancel := c.cancels[i]
	c.mu.Unlock()
	cancel()
	srv.Stop()
}

// Silence stops satellite i at once, like Kill, but dials to it hang until
// their deadline instead of being refused (a dead task's name in Docker
// Swarm): the failure detector sees timeouts, not a refusal.
func (c *Cluster) Silence(i uint32) {
	c.mu.Lock()
	if c.silent == nil {
		c.silent = map[string]bool{}
	}
	c.silent["sat-"+strconv.Itoa(int(i))] = true
	c.mu.Unlock()
	c.Kill(i)
}

// Restart brings satellite i back with empty memory and waits until it has
// taken its state back (node.Start).
func (c *Cluster) Restart(t TB, i uint32) {
	c.mu.Lock()
	c.lis["sat-"+strconv.Itoa(int(i))] = bufconn.Listen(pipeBytes)
	delete(c.silent, "sat-"+strconv.Itoa(int(i)))
	c.mu.Unlock()
	c.start(t, int(i))
	c.mu.Lock()
	c.down[i] = false
	c.mu.Unlock()
	if err := c.Nodes[i].Start(c.ctxs[i]); err != nil {
		t.Fatal(err)
	}
}

// Freeze pauses satellite i (on) as SIGSTOP does, or resumes it: while
// paused it answers nothing (every request to it fails with Unavailable, as
// when partitioned off, its health check included) and sends nothing (its
// calls wait, its background work's included, and go out when it resumes).
// A request it had already received waits where it is (an Interceptor can
// hold one there).
func (c *Cluster) Freeze(i uint32, on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.down[i] = on
	if ch, ok := c.frozen[i]; ok && !on {
		close(ch)
		delete(c.frozen, i)
	} else if on && !ok {
		c.frozen[i] = make(chan struct{})
	}
}

// outgoing holds satellite i's calls while it is frozen.
func (c *Cluster) outgoing(i uint32) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		c.mu.Lock()
		ch := c.frozen[i]
		c.mu.Unlock()
		if ch != nil {
			select {
			case <-ch:
			case <-ctx.Done():
				return status.FromContextError(ctx.Err()).Err()
			}
		}
		return invoker(ctx, method, req, reply, cc, opts...)
	}
}

// partitioned fails every request to satellite i while it is partitioned off.
func (c *Cluster) partitioned(i uint32) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		c.mu.Lock()
		down, frozen := c.down[i], c.frozen[i] != nil
		c.mu.Unlock()
		// A partition cuts the ISLs, not the detector's view (as before the
		// health service was served here); a frozen satellite answers nothing.
		if down && (frozen || info.FullMethod != healthpb.Health_Check_FullMethodName) {
			return nil, status.Errorf(codes.Unavailable, "satellite %d is partitioned off", i)
		}
		return h(ctx, req)
	}
}

func (c *Cluster) dialer(ctx context.Context, addr string) (net.Conn, error) {
	c.mu.Lock()
	l, ok := c.lis[addr]
	quiet := c.silent[addr]
	c.mu.Unlock()
	if quiet { // as a name Docker's DNS forwards upstream, where nothing answers
		<-ctx.Done()
		return nil, fmt.Errorf("dial tcp: lookup %s: i/o timeout", addr)
	}
	if !ok {
		return nil, fmt.Errorf("no such address %q", addr)
	}
	return l.DialContext(ctx)
}

// Dialer connects to the in-process listeners ("gateway", "sat-<i>", added
// gateways) for a grpc.WithContextDialer of one's own.
func (c *Cluster) Dialer() func(context.Context, string) (net.Conn, error) {
	return func(ctx context.Context, addr string) (net.Conn, error) {
		return c.dialer(ctx, strings.TrimPrefix(addr, "passthrough:///"))
	}
}

func (c *Cluster) addr(i uint32) string { return "passthrough:///sat-" + strconv.Itoa(int(i)) }

// security is satellite i's (or the gateway's) security: insecure without a TLS dir.
func (c *Cluster) security(t TB, role config.Role, i int) *auth.Security {
	cfg := config.DefaultConfig()
	cfg.Index, cfg.TLSDir, cfg.Insecure = i, c.tlsDir, c.tlsDir == ""
	sec, err := auth.Load(cfg, role, c.log, nil)
	if err != nil {
		t.Fatal(err)
	}
	return sec
}

// Pool is a peers.Pool that dials the in-process satellites (in plain text).
func (c *Cluster) Pool() *peers.Pool {
	return peers.NewPool(c.addr, grpc.WithContextDialer(c.dialer), grpc.WithTransportCredentials(insecure.NewCredentials()))
}

func (c *Cluster) dial(t TB, name string) *grpc.ClientConn {
	return c.DialAs(t, name, insecure.NewCredentials())
}

// DialAs connects to "gateway" or "sat-<i>" with the given transport credentials.
func (c *Cluster) DialAs(t TB, name string, creds credentials.TransportCredentials) *grpc.ClientConn {
	conn, err := grpc.NewClient("passthrough:///"+name, grpc.WithContextDialer(c.dialer),
		grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	return conn
}

// Satellite is a client straight to satellite i (bypassing the gateway).
func (c *Cluster) Satellite(t testing.TB, i int) (satpagev1.PageServiceClient, satpagev1.SatelliteServiceClient) {
	conn := c.dial(t, "sat-"+strconv.Itoa(i))
	t.Cleanup(func() { conn.Close() })
	return satpagev1.NewPageServiceClient(conn), satpagev1.NewSatelliteServiceClient(conn)
}

// Partition makes satellite i answer every request with Unavailable (down) or serve again.
func (c *Cluster) Partition(i uint32, down bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.down[i] = down
}

// ReadOver reads over a read stream as a unary ReadPage would (an answer's
// error decoded as the call's status).
func ReadOver(t testing.TB, st satpagev1.PageService_ReadStreamClient, id uint64, req *satpagev1.ReadPageRequest) (*satpagev1.ReadPageResponse, error) {
	t.Helper()
	if err := st.Send(&satpagev1.ReadStreamRequest{Id: id, Request: req}); err != nil {
		t.Fatal(err)
	}
	m, err := st.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if m.Id != id {
		t.Fatalf("answer %d to message %d", m.Id, id)
	}
	return errs.Answer(m.Response, m.Status)
}
