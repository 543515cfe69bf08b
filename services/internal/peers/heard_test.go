package peers

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/satpage/satpage/services/internal/tlsconf"
	"github.com/satpage/satpage/services/internal/tlsconf/tlstest"
)

// freePort is a TCP port nothing listens on (on 127.0.0.1).
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// checkHealth is one health check of satellite i through p, within a second.
func checkHealth(p *Pool, i uint32) error {
	h, err := p.Health(i)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err = h.Check(ctx, &healthpb.HealthCheckRequest{})
	return err
}

// serveTLSHealth serves the health service at addr with m's certificate,
// interceptors first.
func serveTLSHealth(t *testing.T, addr string, m *tlsconf.Material, opts ...grpc.ServerOption) *grpc.Server {
	t.Helper()
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s: %v", addr, err)
	}
	s := grpc.NewServer(append(opts, grpc.Creds(credentials.NewTLS(m.Server())))...)
	healthpb.RegisterHealthServer(s, health.NewServer())
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(s.Stop)
	return s
}

// callFrom makes one health check of the server at to, over TLS with m's
// certificate (none when m is nil) towards serverName, from the local address
// from.
func callFrom(t *testing.T, from, to string, ca *tlsconf.Material, m *tlsconf.Material, serverName string) error {
	t.Helper()
	cfg := ca.Client(serverName)
	if m == nil {
		cfg.Certificates = nil // anonymous TLS
	} else {
		cfg.Certificates = m.Client(serverName).Certificates
	}
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	cc, err := grpc.NewClient("passthrough:///"+to, grpc.WithTransportCredentials(credentials.NewTLS(cfg)),
		grpc.WithContextDialer(func(ctx context.Context, a string) (net.Conn, error) { return d.DialContext(ctx, "tcp", a) }))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err = healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{})
	return err
}

// The e2e-k8s pod deletion: satellite 14's pod is deleted and made again at a
// new address, and its new satnode calls satellite 0 (its restore, its
// RequestSync) while the cluster DNS still answers "no such host" for its
// name (the endpoint not published yet, then the negative answer cached).
// Satellite 0 reaches it at once at the address it called from, over a
// connection that was failing, without asking DNS: its snapshot to 14, sent
// while answering the RequestSync, failed there, and the failure detector
// held 14 dead until a re-probe after the negative answer expired (a
// handover to 14 failed with "satellite 14 is down: no ISL route"). A caller
// whose certificate names another satellite, or no certificate at all,
// teaches nothing about satellite 14.
func TestASatelliteThatCallsIsReachedWhereItCalledFromBeforeItsNameResolves(t *testing.T) {
	dir := t.TempDir()
	tlstest.Write(t, dir, 16)
	load := func(i uint32) *tlsconf.Material {
		m, err := tlsconf.LoadSatellite(dir, i)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	m0, m14, m15 := load(0), load(14), load(15)
	dns, _ := newFake()
	saved := resolver
	t.Cleanup(func() { resolver = saved })
	resolver = dns
	port := freePort(t)
	dns.set("sat-14.test", "127.0.0.1")
	old := serveTLSHealth(t, "127.0.0.1:"+port, m14)

	// Satellite 0: its pool, as auth.Security.Pool makes it, and its server
	// with the pool's interceptors, as cmd/satnode wires them.
	p := NewPoolPer(func(i uint32) string { return "sat-" + strconv.Itoa(int(i)) + ".test:" + port },
		func(i uint32) []grpc.DialOption {
			return []grpc.DialOption{grpc.WithTransportCredentials(credentials.NewTLS(m0.Client(tlsconf.SatelliteName(i))))}
		})
	t.Cleanup(func() { p.Close() })
	at0 := "127.0.0.1:" + freePort(t)
	serveTLSHealth(t, at0, m0, grpc.ChainUnaryInterceptor(p.HeardUnary()), grpc.ChainStreamInterceptor(p.HeardStream()))
	check := func() error { return checkHealth(p, 14) }
	if err := check(); err != nil {
		t.Fatalf("satellite 14 at its first address: %v", err)
	}

	old.Stop() // the pod is deleted; its name has no record any more
	dns.mu.Lock()
	delete(dns.addr, "sat-14.test")
	dns.mu.Unlock()
	if err := check(); err == nil {
		t.Fatal("reached satellite 14 after its pod was deleted")
	}
	p.mu.Lock()
	cc := p.conns[14]
	p.mu.Unlock()
	for st := cc.GetState(); st != connectivity.TransientFailure; st = cc.GetState() {
		wctx, wcancel := context.WithTimeout(context.Background(), 3*time.Second)
		cc.WaitForStateChange(wctx, st) // failing: calls fail at once
		wcancel()
		if err := check(); err == nil {
			t.Fatal("reached satellite 14 with its name unknown")
		}
	}
	if err := check(); err == nil {
		t.Fatal("reached satellite 14 with its name unknown")
	}

	serveTLSHealth(t, "127.0.0.2:"+port, m14) // the new pod
	// Neither an anonymous caller nor satellite 15 at the new address says
	// where satellite 14 is.
	if err := callFrom(t, "127.0.0.2", at0, m0, nil, tlsconf.SatelliteName(0)); err != nil {
		t.Fatalf("anonymous health check: %v", err)
	}
	if err := callFrom(t, "127.0.0.2", at0, m0, m15, tlsconf.SatelliteName(0)); err != nil {
		t.Fatalf("satellite 15's call: %v", err)
	}
	if err := check(); err == nil {
		t.Fatal("satellite 14 reached at an address that no certificate of satellite 14 proved")
	}

	asked := dns.asked.Load()
	if err := callFrom(t, "127.0.0.2", at0, m0, m14, tlsconf.SatelliteName(0)); err != nil {
		t.Fatalf("satellite 14's call from its new pod: %v", err)
	}
	if err := check(); err != nil {
		t.Fatalf("the first call to satellite 14 after it called (its name still unknown): %v", err)
	}
	if got := dns.asked.Load() - asked; got != 0 {
		t.Errorf("%d name lookups to reach satellite 14 where it called from, want 0", got)
	}
	if p.NeverSeen(14) {
		t.Error("a satellite that called is NeverSeen")
	}
	// The failure detector's re-probe (Reconnect) reaches it there too.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := p.Reconnect(ctx, 14); err != nil {
		t.Errorf("Reconnect after satellite 14 called: %v", err)
	}
}

// A heard address is dialled before the name resolves, with the kept answer
// when there is one, and asks DNS nothing; it is for the one dial address it
// was heard for; it is forgotten when a connection to it fails (the name
// decides again) and after NameTTL without a call renewing it.
func TestAHeardAddressIsDialledUntilItFailsOrExpires(t *testing.T) {
	dns, clk := newFake()
	c := newNames(dns, 5*time.Second, exact, exact)
	c.now = clk.now
	fn := newFakeNet("10.0.0.2", "10.0.0.3")
	c.dialTCP = fn.dial
	dns.set("sat-14", "10.0.0.1") // the old pod, which answers nothing now
	if err := attempt(c, "sat-14:7000"); err == nil {
		t.Fatal("dialled the old address")
	}
	dns.mu.Lock()
	delete(dns.addr, "sat-14") // no record
	dns.mu.Unlock()
	clk.add(time.Second)
	if err := attempt(c, "sat-14:7000"); err == nil {
		t.Fatal("dialled a name with no record")
	}

	asked := dns.asked.Load()
	if !c.hear("sat-14:7000", "10.0.0.2") {
		t.Error("hear of a new address: false, want true")
	}
	if c.hear("sat-14:7000", "10.0.0.2") {
		t.Error("hear of the same address again: true, want false")
	}
	if c.hear("10.0.0.9:7000", "10.0.0.2") {
		t.Error("hear for an IP address dialled: true, want false (nothing to look up)")
	}
	if err := attempt(c, "sat-14:7000"); err != nil {
		t.Fatalf("the heard address, name unknown: %v", err)
	}
	if got := dns.asked.Load() - asked; got != 0 {
		t.Errorf("%d lookups while a heard address was kept, want 0", got)
	}
	if err := attempt(c, "sat-14:7001"); err == nil {
		t.Error("another port of the name (another satellite's address) dialled the heard address")
	}

	// Kept for the TTL from the last hearing, then the name decides.
	clk.add(4 * time.Second)
	c.hear("sat-14:7000", "10.0.0.2")
	clk.add(4 * time.Second)
	if err := attempt(c, "sat-14:7000"); err != nil {
		t.Fatalf("4 s after it was heard again: %v", err)
	}
	clk.add(2 * time.Second)
	if err := attempt(c, "sat-14:7000"); err == nil {
		t.Error("the heard address still dialled after its TTL, with no record for the name")
	}

	// A heard address that does not connect is forgotten at once: the name's
	// answer is tried in the same attempt.
	dns.set("sat-14", "10.0.0.3")
	clk.add(5 * time.Second)
	c.hear("sat-14:7000", "10.0.0.4") // answers nothing
	if err := attemptWithin(c, "sat-14:7000", 20*time.Millisecond); err == nil {
		t.Fatal("a heard address that answers nothing connected")
	}
	if err := attempt(c, "sat-14:7000"); err != nil {
		t.Fatalf("after the heard address failed, the name's answer: %v", err)
	}
	c.mu.Lock()
	left := c.heardAt("sat-14:7000")
	c.mu.Unlock()
	if left != "" {
		t.Errorf("heard address %q kept after its dial failed", left)
	}
	// With the name's answer kept, the heard address is dialled beside it.
	if !c.hear("sat-14:7000", "10.0.0.4") {
		t.Error("hear of an address that is not the kept answer's: false")
	}
	if c.hear("sat-14:7000", "10.0.0.4") {
		t.Error("hear of the address just heard: true, want false")
	}
	if err := attempt(c, "sat-14:7000"); err != nil {
		t.Errorf("heard address beside the kept answer: %v", err)
	}
}
