package daemon

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
)

// stuck never answers ReadPage until its context ends (an RPC that would block a graceful stop).
type stuck struct {
	satpagev1.UnimplementedPageServiceServer
	entered chan struct{}
}

func (s *stuck) ReadPage(ctx context.Context, _ *satpagev1.ReadPageRequest) (*satpagev1.ReadPageResponse, error) {
	close(s.entered)
	<-ctx.Done()
	return nil, ctx.Err()
}

func start(t *testing.T, stopTimeout time.Duration, srv *stuck) (addr string, cancel context.CancelFunc, done chan error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan net.Addr, 1)
	done = make(chan error, 1)
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "satpage_test_total", Help: "t"}))
	go func() {
		done <- Run(ctx, Options{Listen: "127.0.0.1:0", MetricsListen: "127.0.0.1:0", StopTimeout: stopTimeout,
			Registry: reg, Register: func(s grpc.ServiceRegistrar) { satpagev1.RegisterPageServiceServer(s, srv) },
			Services: []string{"satpage.v1.PageService"}, Ready: func(a net.Addr) { ready <- a }})
	}()
	select {
	case a := <-ready:
		return a.String(), cancel, done
	case err := <-done:
		t.Fatalf("Run returned early: %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("not ready within 5 s")
	}
	return "", cancel, done
}

func TestHealthIsServedOnTheListenPortAndStopIsGraceful(t *testing.T) {
	addr, cancel, done := start(t, 5*time.Second, &stuck{entered: make(chan struct{})})
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, svc := range []string{"", "satpage.v1.PageService"} {
		r, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{Service: svc})
		if err != nil || r.Status != healthpb.HealthCheckResponse_SERVING {
			t.Errorf("health of %q: got %v, %v, want SERVING", svc, r, err)
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: got %v, want nil", err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("an idle server did not stop within 3 s")
	}
}

func TestAStuckRPCIsCutOffAfterTheStopTimeout(t *testing.T) {
	srv := &stuck{entered: make(chan struct{})}
	addr, cancel, done := start(t, 300*time.Millisecond, srv)
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	go satpagev1.NewPageServiceClient(conn).ReadPage(context.Background(), &satpagev1.ReadPageRequest{SessionId: "s"})
	<-srv.entered
	began := time.Now()
	cancel()
	select {
	case <-done:
		if took := time.Since(began); took < 250*time.Millisecond {
			t.Errorf("stopped after %v, want the graceful wait of 300 ms first", took)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a stuck RPC held the server past the force-stop timeout")
	}
}

func TestMetricsAreServed(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "satpage_probe_total", Help: "t"}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	ready := make(chan net.Addr, 1)
	go func() {
		done <- Run(ctx, Options{Listen: "127.0.0.1:0", MetricsListen: addr, StopTimeout: time.Second, Registry: reg,
			Register: func(grpc.ServiceRegistrar) {}, Ready: func(a net.Addr) { ready <- a }})
	}()
	<-ready
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "satpage_probe_total 0") {
		t.Errorf("got %q, want the registered counter", body[:min(200, len(body))])
	}
	cancel()
	<-done
}

// Close runs once the server has stopped, and gets what is left of the stop
// timeout: a Close that would block longer is cut off with the server's budget.
func TestCloseRunsAfterTheServerStopsWithinTheStopTimeout(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan net.Addr, 1)
	done := make(chan error, 1)
	var addr net.Addr
	closeErr := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{Listen: "127.0.0.1:0", StopTimeout: 300 * time.Millisecond,
			Register: func(grpc.ServiceRegistrar) {}, Ready: func(a net.Addr) { ready <- a },
			Close: func(cctx context.Context) error {
				// The listener is closed by now: nothing is served any more.
				if c, err := net.DialTimeout("tcp", addr.String(), time.Second); err == nil {
					c.Close()
					closeErr <- errors.New("Close ran while the server still accepted connections")
					return nil
				}
				if _, ok := cctx.Deadline(); !ok {
					closeErr <- errors.New("Close got no deadline")
					return nil
				}
				<-cctx.Done() // background work that would outlast the stop timeout
				closeErr <- nil
				return cctx.Err()
			}})
	}()
	addr = <-ready
	began := time.Now()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: got %v, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return within 5 s")
	}
	if took := time.Since(began); took > 2*time.Second {
		t.Errorf("stop took %v with a 300 ms stop timeout", took)
	}
	select {
	case err := <-closeErr:
		if err != nil {
			t.Error(err)
		}
	default:
		t.Error("Close was not called")
	}
}

// While Start runs (a satellite taking its state back), the liveness entry is
// SERVING and the overall entry NOT_SERVING, on the plain-text health port the
// kubelet asks: a liveness probe never restarts a satellite for being slow to
// restore, a start-up or readiness probe waits for it.
func TestLivenessServesWhileStartRunsAndReadinessWaitsForIt(t *testing.T) {
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	healthAddr := hl.Addr().String()
	hl.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	release := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{Listen: "127.0.0.1:0", StopTimeout: time.Second, HealthListen: healthAddr,
			Register: func(grpc.ServiceRegistrar) {},
			Start:    func(ctx context.Context) error { <-release; return nil }})
	}()
	conn, err := grpc.NewClient(healthAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	hc := healthpb.NewHealthClient(conn)
	status := func(svc string) healthpb.HealthCheckResponse_ServingStatus {
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			r, err := hc.Check(context.Background(), &healthpb.HealthCheckRequest{Service: svc})
			if err == nil {
				return r.Status
			}
		}
		t.Fatalf("health port %s does not answer for %q", healthAddr, svc)
		return 0
	}
	if got := status(LivenessService); got != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("liveness while Start runs: got %v, want SERVING", got)
	}
	if got := status(""); got != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("overall health while Start runs: got %v, want NOT_SERVING", got)
	}
	close(release)
	for deadline := time.Now().Add(5 * time.Second); status("") != healthpb.HealthCheckResponse_SERVING; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("overall health not SERVING 5 s after Start returned")
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
}
