// Package daemon runs a gRPC server with the standard health service (and
// server reflection when asked), a Prometheus /metrics endpoint, and
// optionally a plain-text health-only port for kubelet probes, until its
// context ends; then it stops gracefully, forcing the stop after a timeout.
package daemon

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"

	"github.com/satpage/satpage/services/internal/metrics"
	"github.com/satpage/satpage/services/internal/peers"
)

// Main runs a daemon's run and exits: with 0 when it returns nil or the help
// was asked for (flag.ErrHelp), else with 2 after the error on stderr, named.
func Main(name string, run func() error) {
	if err := run(); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, name+":", err)
		os.Exit(2)
	}
}

// Options describe one daemon.
type Options struct {
	Listen        string
	MetricsListen string // "" or "off": no metrics endpoint
	StopTimeout   time.Duration
	Registry      *prometheus.Registry
	Register      func(grpc.ServiceRegistrar)
	// Services whose health is reported besides the overall "" entry.
	Services []string
	Logger   *slog.Logger
	// Ready, if set, receives the bound gRPC address once serving.
	Ready func(addr net.Addr)
	// Close, if set, ends the service's background work once the server has
	// stopped (node.Node.Close), within what is left of StopTimeout.
	Close func(ctx context.Context) error
	// Drain, if set, is called when the stop begins, before the graceful
	// stop: it ends the long-lived streams the service serves (node.Node.Drain,
	// the fetch streams), which a graceful stop would otherwise wait for.
	Drain func()
	// ServerOptions of the gRPC server (transport security, interceptors,
	// limits); default peers.ServerOptions() in plain text.
	ServerOptions []grpc.ServerOption
	// Reflection serves gRPC server reflection (off by default: it lists every RPC).
	Reflection bool
	// Pprof serves /debug/pprof on the metrics port (off by default).
	Pprof bool
	// HealthListen, unless "" or "off", serves only the health service in plain
	// text there (kubelet's gRPC probes speak no TLS).
	HealthListen string
	// Start, if set, runs once the server listens (a satnode takes its state
	// back from its replicas); health reports NOT_SERVING until it returns nil,
	// and an error from it stops the daemon.
	Start func(ctx context.Context) error
}

// LivenessService is the health service entry a liveness probe asks
// (grpc.health.v1 with service "liveness"): SERVING while the process serves.
const LivenessService = "liveness"

// Run serves until ctx is done, then stops: health turns NOT_SERVING, the
// server drains in-flight RPCs for up to StopTimeout, then is stopped hard;
// Close then gets what is left of StopTimeout.
func Run(ctx context.Context, o Options) error {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	lis, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return fmt.Errorf("listen on %q: %w", o.Listen, err)
	}
	sopts := o.ServerOptions
	if sopts == nil {
		sopts = peers.ServerOptions()
	}
	srv := grpc.NewServer(sopts...)
	hs := health.NewServer()
	healthpb.RegisterHealthServer(srv, hs)
	if o.Reflection {
		reflection.Register(srv)
	}
	o.Register(srv)
	var healthSrv *grpc.Server
	if o.HealthListen != "" && o.HealthListen != "off" {
		hl, err := net.Listen("tcp", o.HealthListen)
		if err != nil {
			lis.Close()
			return fmt.Errorf("listen on %q for health: %w", o.HealthListen, err)
		}
		healthSrv = grpc.NewServer()
		healthpb.RegisterHealthServer(healthSrv, hs)
		go func() { _ = healthSrv.Serve(hl) }()
		log.Info("health listening (plain text, health only)", "addr", hl.Addr().String())
	}
	serving := func(st healthpb.HealthCheckResponse_ServingStatus) {
		for _, s := range append([]string{""}, o.Services...) {
			hs.SetServingStatus(s, st)
		}
	}
	if o.Start == nil {
		serving(healthpb.HealthCheckResponse_SERVING)
	} else {
		serving(healthpb.HealthCheckResponse_NOT_SERVING)
	}
	// LivenessService is SERVING from now until the stop, whatever Start does:
	// the cheap local check for a liveness probe, which must not restart a
	// satellite that is still taking its state back (the overall "" entry and
	// the API services say NOT_SERVING then: readiness and start-up probes).
	hs.SetServingStatus(LivenessService, healthpb.HealthCheckResponse_SERVING)

	var metricsSrv *http.Server
	errc := make(chan error, 2)
	if o.MetricsListen != "" && o.MetricsListen != "off" && o.Registry != nil {
		ml, err := net.Listen("tcp", o.MetricsListen)
		if err != nil {
			lis.Close()
			return fmt.Errorf("listen on %q for metrics: %w", o.MetricsListen, err)
		}
		metricsSrv = &http.Server{Handler: metrics.Handler(o.Registry, o.Pprof), ReadHeaderTimeout: 5 * time.Second}
		go func() {
			if err := metricsSrv.Serve(ml); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errc <- fmt.Errorf("metrics server: %w", err)
			}
		}()
		log.Info("metrics listening", "addr", ml.Addr().String())
	}
	go func() {
		if err := srv.Serve(lis); err != nil {
			errc <- fmt.Errorf("grpc server: %w", err)
		}
	}()
	log.Info("serving", "addr", lis.Addr().String())
	if o.Start != nil {
		go func() {
			if err := o.Start(ctx); err != nil {
				if ctx.Err() == nil {
					errc <- fmt.Errorf("start: %w", err)
				}
				return
			}
			serving(healthpb.HealthCheckResponse_SERVING)
			log.Info("ready")
		}()
	}
	if o.Ready != nil {
		o.Ready(lis.Addr())
	}

	var runErr error
	select {
	case <-ctx.Done():
		log.Info("stopping", "cause", context.Cause(ctx))
	case runErr = <-errc:
		log.Error("server failed", "err", runErr)
	}
	hs.Shutdown() // every service NOT_SERVING: load balancers and probes stop sending
	stopCtx, cancelStop := context.WithTimeout(context.WithoutCancel(ctx), o.StopTimeout)
	defer cancelStop()
	if healthSrv != nil {
		defer healthSrv.Stop()
	}
	if o.Drain != nil {
		o.Drain()
	}
	stopped := make(chan struct{})
	go func() { srv.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
		log.Info("stopped gracefully")
	case <-stopCtx.Done():
		log.Warn("graceful stop timed out; forcing", "timeout", o.StopTimeout)
		srv.Stop()
		<-stopped
	}
	if o.Close != nil {
		if err := o.Close(stopCtx); err != nil {
			log.Warn("background work cut off at the stop timeout", "err", err)
		}
	}
	if metricsSrv != nil {
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = metricsSrv.Shutdown(sctx)
	}
	return runErr
}

// Logger builds the slog logger of a daemon.
func Logger(w interface{ Write([]byte) (int, error) }, level slog.Level, format, binary string) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler = slog.NewJSONHandler(w, opts)
	if format == "text" {
		h = slog.NewTextHandler(w, opts)
	}
	return slog.New(h).With("binary", binary)
}
