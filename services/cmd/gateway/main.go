// Command gateway is the ground entry point (wiring only; logic in internal/).
// Settings: flags or SATPAGE_* environment variables (services/README.md).
package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/satpage/satpage/services/internal/auth"
	"github.com/satpage/satpage/services/internal/config"
	"github.com/satpage/satpage/services/internal/constellation"
	"github.com/satpage/satpage/services/internal/daemon"
	"github.com/satpage/satpage/services/internal/gateway"
	"github.com/satpage/satpage/services/internal/linkemu"
	"github.com/satpage/satpage/services/internal/metrics"
	"github.com/satpage/satpage/services/internal/podkeys"
	"github.com/satpage/satpage/services/internal/signer"
	"github.com/satpage/satpage/services/internal/sky"
	"github.com/satpage/satpage/services/internal/tlsconf"
)

func main() { daemon.Main("gateway", run) }

func run() error {
	host, _ := os.Hostname()
	cfg, err := config.Load(config.Gateway, os.Args[1:], os.Getenv, host, os.Stderr)
	if err != nil {
		return err
	}
	log := daemon.Logger(os.Stderr, cfg.SlogLevel(), cfg.LogFormat, "gateway")
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	// The gateway routes to the serving satellite, never over ISLs: no --isl-schedule.
	grid, err := constellation.NewGrid(cfg.Spec())
	if err != nil {
		return err
	}
	m := metrics.NewGateway()
	sec, err := auth.Load(cfg, config.Gateway, log, m.Registry)
	if err != nil {
		return err
	}
	var wg sync.WaitGroup // the signer and the substrate measurement
	defer wg.Wait()
	if cfg.SignerListen != "" && cfg.SignerListen != "off" {
		// Before the ephemeris and the rest: every satellite's start waits for it.
		serve, err := startSigner(cfg, sec, log)
		if err != nil {
			return err
		}
		sctx, cancel := context.WithCancel(ctx)
		defer cancel()
		wg.Go(func() {
			if err := serve(sctx); err != nil {
				log.Error("certificate signer stopped", "err", err)
			}
		})
	}
	pool := sec.Pool(cfg.PeerAddr)
	defer pool.Close()
	live, err := liveOptions(cfg)
	if err != nil {
		return err
	}
	links, positions, err := linkemu.Open(cfg.LinkPositions(), cfg.Spec(), cfg.ISLCapacityGbps)
	if err != nil {
		return err
	}
	g, err := gateway.New(gateway.Options{Grid: grid, Peers: pool, Logger: log, Metrics: m, RPCTimeout: cfg.RPCTimeout,
		Issuer: sec.Issuer, Tickets: sec.Policy.Verifier, MaxTablePages: uint32(cfg.MaxTablePages), SessionIdle: cfg.SessionIdle, Live: live, Links: links})
	if err != nil {
		return err
	}
	if links != nil {
		mctx, cancel := context.WithCancel(ctx)
		m.Registry.MustRegister(links.Collectors()...)
		defer cancel()
		// The ground link's substrate: a health check of a satellite (the gateway talks to each directly).
		probe := func(ctx context.Context) error {
			h, err := pool.Health(0)
			if err == nil {
				_, err = h.Check(ctx, &healthpb.HealthCheckRequest{})
			}
			return err
		}
		wg.Go(func() { links.Measure(mctx, probe, cfg.SubstrateEvery, log) })
		wg.Go(func() { positions.Watch(mctx, linkemu.WatchEvery, log) }) // a refreshed or replaced file
		log.Info("link emulation on (ground links of sessions with a place)", "ephemeris", cfg.LinkPositions(),
			"covers_ns", [2]int64{positions.Ephemeris().T0Ns, positions.Ephemeris().EndNs()}, "substrate_every", cfg.SubstrateEvery)
	} else {
		log.Info("link emulation off", "emulate_links", cfg.EmulateLinks, "why", "no --link-ephemeris or --ephemeris, or --emulate-links=false")
	}
	if live != nil {
		log.Info("live mode", "ephemeris", cfg.Ephemeris, "epoch", live.Clock.Epoch, "speed", live.Clock.Speed, "push_lead", cfg.PushLead,
			"horizon_ns", live.Ephemeris.EndNs(), "now_ns", live.Clock.NowNs())
	}
	// Idle expiry and live handovers; stopped and waited for (deferred after
	// pool.Close, so before it: they call satellites until they end).
	g.Start(ctx)
	defer g.Close()
	log.Info("starting", "constellation", cfg.Constellation, "peer_template", cfg.PeerTemplate, "peer_port_base", cfg.PeerPortBase)
	return daemon.Run(ctx, daemon.Options{Listen: cfg.Listen, MetricsListen: cfg.MetricsListen,
		StopTimeout: cfg.StopTimeout, Registry: m.Registry, Register: g.Register, Logger: log,
		Services:      []string{"satpage.v1.PageService", "satpage.v1.GatewayService"},
		ServerOptions: sec.ServerOptions(), Reflection: cfg.Reflection, Pprof: cfg.Pprof, HealthListen: cfg.HealthListen})
}

// startSigner loads the CA key, listens on --signer-listen and returns the
// signer's serving loop (docs/security.md, "Keys that stay in their pod").
func startSigner(cfg config.Config, sec *auth.Security, log *slog.Logger) (func(context.Context) error, error) {
	keyFile := cfg.SignerCAKey
	if keyFile == "" {
		keyFile = filepath.Join(cfg.TLSDir, "ca-key.pem")
	}
	caCert, caKey, err := signer.LoadCA(filepath.Join(cfg.TLSDir, tlsconf.CAFile), keyFile)
	if err != nil {
		return nil, err
	}
	rev, err := signer.InCluster(podkeys.CredentialsDir, os.Getenv)
	if err != nil {
		return nil, err
	}
	ns, sa, _ := strings.Cut(cfg.SignerAccount, ":")
	var names []string
	for _, n := range strings.Split(cfg.SignerDNSNames, ",") {
		if n = strings.TrimSpace(n); n != "" {
			names = append(names, n)
		}
	}
	slg := log.With("part", "signer")
	s, err := signer.New(signer.Options{CACert: caCert, CAKey: caKey, Reviewer: rev, Logger: slg,
		Policy: signer.Policy{Audience: cfg.SignerAudience, Namespace: ns, ServiceAccount: sa, StatefulSet: cfg.SignerPods,
			Satellites: cfg.Spec().Satellites, DNSNames: names, TTL: cfg.SignerCertTTL}})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.SignerListen)
	if err != nil {
		return nil, fmt.Errorf("--signer-listen %q: %v", cfg.SignerListen, err)
	}
	slg.Info("certificate signer listening", "addr", ln.Addr().String(), "audience", cfg.SignerAudience,
		"service_account", cfg.SignerAccount, "statefulset", cfg.SignerPods)
	return func(ctx context.Context) error {
		return signer.Serve(ctx, ln, signer.ServerTLS(sec.Material.Cert), s.Handler(), slg)
	}, nil
}

// liveOptions reads the ephemeris and sets the clock (nil: replay only).
func liveOptions(cfg config.Config) (*gateway.LiveOptions, error) {
	if cfg.Ephemeris == "" {
		return nil, nil
	}
	eph, err := sky.ReadEphemeris(cfg.Ephemeris, cfg.Spec())
	if err != nil {
		return nil, fmt.Errorf("--ephemeris: %w", err)
	}
	epoch, start := cfg.ClockTimes()
	if epoch.IsZero() {
		epoch = eph.EpochTime
	} else if !epoch.Equal(eph.EpochTime) {
		return nil, fmt.Errorf("--epoch %s differs from the ephemeris' epoch %s (the constellation's elements are at the latter)",
			cfg.Epoch, eph.Epoch)
	}
	clock, err := sky.NewClock(epoch, start, cfg.Speed)
	if err != nil {
		return nil, err
	}
	return &gateway.LiveOptions{Clock: clock, Ephemeris: eph, EphemerisPath: cfg.Ephemeris, Spec: cfg.Spec(),
		PushLeadNs: cfg.PushLead.Nanoseconds()}, nil
}
