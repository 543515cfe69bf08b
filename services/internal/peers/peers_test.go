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
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
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

// A satellite that comes back at a new address under its old name (a new pod)
// is reached within a few seconds: the pool looks the name up again after
// ReresolveInterval, not grpc-go's 30 s.
func TestAPeerThatMovedToANewAddressIsReachedAgainSoon(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	z := &zone{conn: pc}
	defer pc.Close()
	go z.serve()
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(free.Addr().(*net.TCPAddr).Port)
	free.Close()

	z.set("127.0.0.1")
	old := serveHealth(t, "127.0.0.1:"+port)
	p := NewPool(func(uint32) string { return "dns://" + pc.LocalAddr().String() + "/sat-7.test:" + port })
	defer p.Close()
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
	old.Stop() // the pod is deleted; its successor has another address
	z.set("127.0.0.2")
	moved := serveHealth(t, "127.0.0.2:"+port)
	defer moved.Stop()
	start := time.Now()
	for check() != nil {
		if time.Since(start) > 10*time.Second {
			t.Fatalf("satellite 7 not reached at its new address after %v (DNS looked up again only after 30 s?)", time.Since(start))
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("reached at the new address %v after the move", time.Since(start).Round(time.Millisecond))
}
