package peers

import (
	"context"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/satpage/satpage/services/internal/retry"
)

// zone is a one-name DNS server on loopback (UDP) whose A record can change.
type zone struct {
	mu   sync.Mutex
	addr [4]byte
	conn net.PacketConn
}

func (z *zone) set(ip string) {
	z.mu.Lock()
	copy(z.addr[:], net.ParseIP(ip).To4())
	z.mu.Unlock()
}

func (z *zone) serve() {
	buf := make([]byte, 512)
	for {
		n, from, err := z.conn.ReadFrom(buf)
		if err != nil {
			return
		}
		var p dnsmessage.Parser
		h, err := p.Start(buf[:n])
		if err != nil {
			continue
		}
		q, err := p.Question()
		if err != nil {
			continue
		}
		b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true})
		b.EnableCompression()
		_ = b.StartQuestions()
		_ = b.Question(q)
		_ = b.StartAnswers()
		if q.Type == dnsmessage.TypeA {
			z.mu.Lock()
			a := z.addr
			z.mu.Unlock()
			_ = b.AResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 0}, dnsmessage.AResource{A: a})
		}
		out, err := b.Finish()
		if err == nil {
			_, _ = z.conn.WriteTo(out, from)
		}
	}
}

func serveHealth(t *testing.T, addr string) *grpc.Server {
	t.Helper()
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s: %v", addr, err)
	}
	s := grpc.NewServer()
	healthpb.RegisterHealthServer(s, health.NewServer())
	go func() { _ = s.Serve(lis) }()
	return s
}

// movingPeer serves satellite 7's health at 127.0.0.1 under the name
// sat-7.test (a one-name DNS zone on loopback that the pool's resolver asks
// while the test runs) and returns the zone, the port, that first server, a
// pool dialling prefix+port and a one-second health check of satellite 7 through
// it, already answered once.
func movingPeer(t *testing.T, prefix string) (*zone, string, *grpc.Server, *Pool, func() error) {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	z := &zone{conn: pc}
	t.Cleanup(func() { pc.Close() })
	go z.serve()
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(free.Addr().(*net.TCPAddr).Port)
	free.Close()

	z.set("127.0.0.1")
	old := serveHealth(t, "127.0.0.1:"+port)
	saved := resolver
	t.Cleanup(func() { resolver = saved })
	resolver = &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", pc.LocalAddr().String())
	}}
	p := NewPool(func(uint32) string { return prefix + port })
	t.Cleanup(func() { p.Close() })
	h, err := p.Health(7)
	if err != nil {
		t.Fatal(err)
	}
	check := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := h.Check(ctx, &healthpb.HealthCheckRequest{})
		return err
	}
	if err := check(); err != nil {
		t.Fatalf("first address: %v", err)
	}
	return z, port, old, p, check
}

// A satellite that comes back at a new address under its old name (a new pod)
// is reached at the first request after its return: the pool looks the name up
// again when a connection to the kept address fails, where gRPC's DNS resolver
// kept the old address.
func TestAPeerBackAtANewAddressIsReachedByTheFirstRequest(t *testing.T) {
	z, port, old, p, check := movingPeer(t, "sat-7.test:")
	old.Stop() // the pod is deleted; its successor has another address
	z.set("127.0.0.2")
	moved := serveHealth(t, "127.0.0.2:"+port)
	defer moved.Stop()
	// the old connection's loss is noticed (IDLE) before the next request
	for st := p.conns[7].GetState(); st == connectivity.Ready; st = p.conns[7].GetState() {
		p.conns[7].WaitForStateChange(context.Background(), st)
	}
	if err := check(); err != nil {
		t.Fatalf("the first request after the move: %v", err)
	}
}

// Reconnect (the failure detector's re-probe of a satellite it holds dead)
// reaches a satellite back at a new address within its deadline, whatever
// backoff its connection and its name had built up; while it is still gone,
// Reconnect ends with the deadline and leaves it not Unanswered (no call was
// made: a restore does not wait on a satellite for it).
func TestReconnectReachesADeadSatelliteAtItsNewAddress(t *testing.T) {
	z, port, old, p, check := movingPeer(t, "passthrough:///sat-7.test:")
	old.Stop()
	z.set("127.0.0.3") // gone: nothing listens there
	for range 5 {
		if err := check(); err == nil {
			t.Fatal("reached a satellite that is gone")
		}
		time.Sleep(200 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	err := p.Reconnect(ctx, 7)
	cancel()
	if err == nil {
		t.Fatal("Reconnect to a satellite still gone succeeded")
	}
	if p.Unanswered(7) {
		t.Error("Reconnect's wait marked the satellite Unanswered")
	}

	z.set("127.0.0.2") // back, as a new task
	moved := serveHealth(t, "127.0.0.2:"+port)
	defer moved.Stop()
	start := time.Now()
	ctx, cancel = context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := p.Reconnect(ctx, 7); err != nil {
		t.Fatalf("Reconnect after the return: %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Reconnect took %v", d)
	}
	if err := check(); err != nil {
		t.Fatalf("the probe after Reconnect: %v", err)
	}
}

// NotReady tells a connection that cannot carry a call from one that can: a
// satellite never dialled is not known (false), one whose port refuses is not
// ready, one that answered is ready.
func TestNotReadyFollowsTheConnectionsState(t *testing.T) {
	free := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return l.Addr().String()
	}
	addrs := map[uint32]string{1: free(), 2: free()}
	live := serveHealth(t, addrs[2])
	defer live.Stop()
	p := NewPool(func(i uint32) string { return addrs[i] })
	defer p.Close()
	if p.NotReady(1) {
		t.Error("a satellite never dialled: NotReady, want not known (false)")
	}
	for i, wantReady := range map[uint32]bool{1: false, 2: true} {
		h, err := p.Health(i)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err = h.Check(ctx, &healthpb.HealthCheckRequest{})
		cancel()
		if (err == nil) != wantReady {
			t.Fatalf("satellite %d: check %v, want an answer %v", i, err, wantReady)
		}
		// The channel publishes its state after its picker: a call can be
		// answered on a ready connection a moment before the channel says
		// READY (seen under load in a fresh-clone CI run), so wait a bounded time.
		deadline := time.Now().Add(2 * time.Second)
		for p.NotReady(i) == wantReady && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if p.NotReady(i) == wantReady {
			t.Errorf("satellite %d after a call: NotReady %v (%v), want %v", i, p.NotReady(i), p.conns[i].GetState(), !wantReady)
		}
	}
}

// A satellite whose name does not resolve yet (its pod has no address: it has
// never run) costs nothing in the background: the failed call's connection is
// closed, not left reconnecting (with a name lookup) every second, and the
// satellite is not Unreachable (a relay does not go around a satellite that
// has never appeared). Once its name resolves it is reached; once seen and
// then gone, its connection is kept (it reconnects, and is routed around).
func TestASatelliteThatHasNotAppearedCostsNoBackgroundReconnection(t *testing.T) {
	dns, _ := newFake()
	saved, savedFirst := resolver, NameFirstRetry
	t.Cleanup(func() { resolver, NameFirstRetry = saved, savedFirst })
	resolver, NameFirstRetry = dns, retry.Backoff{First: 50 * time.Millisecond, Max: 50 * time.Millisecond}
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(free.Addr().(*net.TCPAddr).Port)
	free.Close()
	p := NewPool(func(uint32) string { return "sat-3.test:" + port })
	t.Cleanup(func() { p.Close() })
	check := func() error {
		h, err := p.Health(3)
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err = h.Check(ctx, &healthpb.HealthCheckRequest{})
		return err
	}
	conn := func() *grpc.ClientConn {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.conns[3]
	}

	if err := check(); status.Code(err) != codes.Unavailable {
		t.Fatalf("a satellite whose name does not resolve: got %v, want Unavailable", err)
	}
	if !p.NeverSeen(3) || p.Unreachable(3) {
		t.Errorf("never appeared: NeverSeen %v, Unreachable %v; want true, false", p.NeverSeen(3), p.Unreachable(3))
	}
	asked := dns.asked.Load()
	time.Sleep(500 * time.Millisecond) // gRPC would reconnect 3-4 times meanwhile
	if c := conn(); c != nil {
		t.Errorf("the connection to a satellite never seen is kept (%v)", c.GetState())
	}
	if got := dns.asked.Load(); got != asked {
		t.Errorf("%d name lookups in the background after the failed call, want none", got-asked)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	if err := p.Reconnect(ctx, 3); err == nil {
		t.Error("Reconnect to a satellite that has not appeared succeeded")
	}
	cancel()

	dns.set("sat-3.test", "127.0.0.1") // it appears
	srv := serveHealth(t, "127.0.0.1:"+port)
	var last error
	for range 40 {
		if last = check(); last == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if last != nil {
		t.Fatalf("after its first appearance: %v", last)
	}
	if p.NeverSeen(3) {
		t.Error("a satellite reached is still NeverSeen")
	}

	srv.Stop() // seen, then gone: the connection stays, reconnecting
	if err := check(); err == nil {
		t.Fatal("reached a stopped satellite")
	}
	if conn() == nil {
		t.Error("the connection to a satellite seen before was closed")
	}
}
