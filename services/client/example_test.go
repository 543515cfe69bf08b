package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/satpage/satpage/services/client"
	"github.com/satpage/satpage/services/internal/clustertest"
	"github.com/satpage/satpage/services/internal/constellation"
	"github.com/satpage/satpage/services/internal/gateway"
	"github.com/satpage/satpage/services/internal/sky"
	"github.com/satpage/satpage/services/internal/tlsconf/tlstest"
)

// gw is a live gateway in front of an in-process 150-satellite constellation,
// its clock at 60x from the epoch of the shared test ephemeris (set up in TestMain).
var gw *client.Gateway

// harness stands in for a *testing.T in TestMain.
type harness struct{ cleanups []func() }

func (h *harness) Helper()                           {}
func (h *harness) Fatal(args ...any)                 { log.Fatal(args...) }
func (h *harness) Errorf(format string, args ...any) { log.Printf(format, args...) }
func (h *harness) Cleanup(f func())                  { h.cleanups = append(h.cleanups, f) }

func TestMain(m *testing.M) {
	const spec = "walker-star:150/10/1:500:87"
	s, _ := constellation.ParseSpec(spec)
	eph, err := sky.ReadEphemeris("../testdata/live_ephemeris.bin", s)
	if err != nil {
		log.Fatal(err)
	}
	clock, err := sky.NewClock(eph.EpochTime, time.Time{}, 60)
	if err != nil {
		log.Fatal(err)
	}
	began := time.Now()
	clock.SetNow(func() time.Time { return eph.EpochTime.Add(time.Since(began)) })
	h := &harness{}
	c := clustertest.New(h, spec, clustertest.Options{})
	_, conn := c.AddGateway(h, "live-gateway", &gateway.LiveOptions{Clock: clock, Ephemeris: eph, Spec: s})
	gw = client.NewGateway(conn, 10*time.Second)
	code := m.Run()
	for i := len(h.cleanups) - 1; i >= 0; i-- {
		h.cleanups[i]()
	}
	os.Exit(code)
}

// Open a session where the client is, write a page, read it back, end the
// session; a request after the end fails with ErrSessionExpired.
func Example() {
	ctx := context.Background()
	// In an application: gw, err := client.Dial("gateway:7000", client.Options{TLSDir: "/etc/satpage/tls"})
	s, err := gw.Open(ctx, 59.9, 10.7, client.OnDemand) // Oslo
	if err != nil {
		log.Fatal(err)
	}
	if _, err := s.Write(ctx, 7, []byte("hello")); err != nil {
		log.Fatal(err)
	}
	data, _, err := s.Read(ctx, 7)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("page 7: %s\n", data)
	deleted, err := s.Close(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("pages deleted:", deleted)
	_, _, err = s.Read(ctx, 7)
	fmt.Println("after close, expired:", errors.Is(err, client.ErrSessionExpired))
	// Output:
	// page 7: hello
	// pages deleted: 1
	// after close, expired: true
}

func TestASessionFollowsTheSkyAndKeepsItsPages(t *testing.T) {
	ctx := context.Background()
	s, err := gw.Open(ctx, -6.2, 106.8, client.PushAhead)
	if err != nil {
		t.Fatal(err)
	}
	// 60x: 8 s of wall time are 8 constellation minutes; Jakarta's serving satellite changes every few minutes
	deadline := time.Now().Add(8 * time.Second)
	for page := uint32(0); time.Now().Before(deadline); page = (page + 1) % 16 {
		if _, err := s.Write(ctx, page, []byte{byte(page)}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for page := range uint32(16) {
		data, _, err := s.Read(ctx, page)
		if err != nil || len(data) != 1 || data[0] != byte(page) {
			t.Fatalf("page %d: got %v, %v", page, data, err)
		}
	}
	st, err := s.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Schedule) < 2 || st.PushMoves == 0 {
		t.Fatalf("after 8 constellation minutes: schedule %v, %d pushed", st.Schedule, st.PushMoves)
	}
}

func TestErrorsAreTyped(t *testing.T) {
	ctx := context.Background()
	if _, err := gw.Open(ctx, 95, 0, client.OnDemand); !errors.Is(err, client.ErrInvalidArgument) {
		t.Fatalf("latitude 95: got %v, want ErrInvalidArgument", err)
	}
	if _, err := client.Dial("127.0.0.1:1", client.Options{TLSDir: t.TempDir()}); !errors.Is(err, client.ErrInvalidArgument) {
		t.Fatalf("a TLS directory without material: got %v, want ErrInvalidArgument", err)
	}
	g, err := client.Dial("127.0.0.1:1", client.Options{Timeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if _, err := g.Open(ctx, 0, 0, client.OnDemand); !errors.Is(err, client.ErrUnavailable) {
		t.Fatalf("no gateway: got %v, want ErrUnavailable", err)
	}
}

// Over mutual TLS the gateway issues the session's token at open and every
// request carries it: the satellites refuse page requests without one.
func TestOverTLSTheSessionCarriesItsToken(t *testing.T) {
	const spec = "walker-star:150/10/1:500:87"
	s, _ := constellation.ParseSpec(spec)
	eph, err := sky.ReadEphemeris("../testdata/live_ephemeris.bin", s)
	if err != nil {
		t.Fatal(err)
	}
	clock, err := sky.NewClock(eph.EpochTime, time.Time{}, 60)
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	clock.SetNow(func() time.Time { return eph.EpochTime.Add(time.Since(began)) })
	dir := t.TempDir()
	tlstest.Write(t, dir, 150)
	c := clustertest.New(t, spec, clustertest.Options{TLSDir: dir, Live: &gateway.LiveOptions{Clock: clock, Ephemeris: eph, Spec: s}})
	g, err := client.Dial("passthrough:///gateway", client.Options{TLSDir: dir, DialOptions: []grpc.DialOption{grpc.WithContextDialer(c.Dialer())}})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	ctx := context.Background()
	sess, err := g.Open(ctx, 59.9, 10.7, client.Proactive)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sess.Write(ctx, 3, []byte("over TLS")); err != nil {
		t.Fatal(err)
	}
	if data, _, err := sess.Read(ctx, 3); err != nil || string(data) != "over TLS" {
		t.Fatalf("read back: got %q, %v", data, err)
	}
	if _, err := sess.Stats(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := sess.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// Without the client certificate the gateway refuses to open a session.
	plain, err := client.Dial("passthrough:///gateway", client.Options{DialOptions: []grpc.DialOption{grpc.WithContextDialer(c.Dialer())}})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if _, err := plain.Open(ctx, 59.9, 10.7, client.OnDemand); err == nil {
		t.Fatal("a plain-text client opened a session at a TLS gateway")
	}
}
