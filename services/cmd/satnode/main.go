// Command satnode is the satellite node daemon (wiring only; logic in internal/).
// Settings: flags or SATPAGE_* environment variables (services/README.md).
package main

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/satpage/satpage/services/internal/auth"
	"github.com/satpage/satpage/services/internal/config"
	"github.com/satpage/satpage/services/internal/daemon"
	"github.com/satpage/satpage/services/internal/linkemu"
	"github.com/satpage/satpage/services/internal/metrics"
	"github.com/satpage/satpage/services/internal/node"
	"github.com/satpage/satpage/services/internal/peers"
	"github.com/satpage/satpage/services/internal/podcert"
	"github.com/satpage/satpage/services/internal/podkeys"
	"github.com/satpage/satpage/services/internal/retry"
	"github.com/satpage/satpage/services/internal/store"
	"github.com/satpage/satpage/services/internal/tlsconf"
)

func main() { daemon.Main("satnode", run) }

func run() error {
	host, _ := os.Hostname()
	if len(os.Args) > 1 && os.Args[1] == "fetch-tls" { // a satellite pod's init step (docs/security.md)
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
		defer stop()
		log := daemon.Logger(os.Stderr, slog.LevelInfo, "json", "satnode").With("step", "fetch-tls")
		return podkeys.Run(ctx, os.Args[2:], os.Getenv, host, os.Stderr, log)
	}
	cfg, err := config.Load(config.Satnode, os.Args[1:], os.Getenv, host, os.Stderr)
	if err != nil {
		return err
	}
	log := daemon.Logger(os.Stderr, cfg.SlogLevel(), cfg.LogFormat, "satnode").With("satellite", cfg.Index)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	if cfg.CertSigner != "" {
		// Its own key, made here; its certificate from the signer (docs/security.md).
		err := podcert.Ensure(ctx, podcert.Options{Signer: cfg.CertSigner, ServerName: tlsconf.GatewayName(),
			CAFile: cfg.CertSignerCA, TokenFile: cfg.CertSignerToken, Index: uint32(cfg.Index), Dir: cfg.TLSDir,
			Timeout: cfg.CertSignerWait, Backoff: retry.Backoff{First: 250 * time.Millisecond, Max: 2 * time.Second, Jitter: 0.5},
			Reuse: time.Hour, Logger: log})
		if err != nil {
			return err
		}
	}
	grid, err := cfg.Grid()
	if err != nil {
		return err
	}
	links, positions, err := linkemu.Open(cfg.LinkPositions(), cfg.Spec(), cfg.ISLCapacityGbps)
	if err != nil {
		return err
	}
	if links != nil {
		grid = grid.WithDelays(links) // relays take the engine's path: the fastest of the fewest-hop ones
	}
	var st store.PageStore = store.NewMemory()
	if cfg.Store == "redis" {
		if st, err = waitRedis(ctx, cfg.RedisAddr, cfg.RedisWait, log); err != nil {
			return err
		}
	}
	defer st.Close()
	cache := 0
	if cfg.Store == "redis" {
		// Tables and recent frames in memory, written through: a one-page fault
		// makes one Redis round trip instead of three (docs/services.md, "Speed").
		cache = cfg.StoreCacheMiB << 20
	}
	st = store.Stack(st, cfg.StoreQuota, cache) // the quota (Redis only): new frames stop short of maxmemory
	m := metrics.NewNode(cfg.Index)
	sec, err := auth.Load(cfg, config.Satnode, log, m.Registry)
	if err != nil {
		return err
	}
	pool := sec.Pool(cfg.PeerAddr)
	defer pool.Close()
	n, err := node.New(node.Options{Index: uint32(cfg.Index), Grid: grid, Store: st, Peers: pool,
		Logger: log, Metrics: m, PageBytes: cfg.PageBytes, Replicas: cfg.Replicas, Generation: cfg.Generation, HeldWait: cfg.HeldWait,
		AdmitMessage: sec.Policy.AdmitMessage})
	if err != nil {
		return err
	}
	log.Info("starting", "constellation", cfg.Constellation, "store", cfg.Store, "redis", cfg.RedisAddr,
		"neighbors", grid.Neighbors(uint32(cfg.Index), 0))
	// after the access policy, which knows the caller: SetFaults' ground cut
	serverOpts := append(sec.ServerOptions(), grpc.ChainUnaryInterceptor(n.GroundInterceptor()))
	var wg sync.WaitGroup // the substrate measurement
	defer wg.Wait()
	if links != nil {
		self := uint32(cfg.Index)
		links.SetPerHop(time.Duration(cfg.PerHopMs * float64(time.Millisecond)))
		pool.Intercept(links.ClientInterceptor)
		m.Registry.MustRegister(links.Collectors()...)
		serverOpts = append(serverOpts, grpc.ChainUnaryInterceptor(links.ServerInterceptor(self)))
		mctx, cancel := context.WithCancel(ctx)
		defer cancel()
		nb := grid.Neighbors(self, 0)
		wg.Go(func() { links.Measure(mctx, neighbourHealth(pool, nb), cfg.SubstrateEvery, log) })
		wg.Go(func() { positions.Watch(mctx, linkemu.WatchEvery, log) }) // a refreshed or replaced file
		log.Info("link emulation on", "ephemeris", cfg.LinkPositions(), "covers_ns", [2]int64{positions.Ephemeris().T0Ns, positions.Ephemeris().EndNs()},
			"isl_capacity_gbps", cfg.ISLCapacityGbps, "substrate_every", cfg.SubstrateEvery)
	} else {
		// Fetches to a neighbour share one stream (docs/services.md, "The fetch
		// stream"); with links emulated each is a unary call its interceptors time.
		pool.StreamFetches()
		log.Info("link emulation off", "emulate_links", cfg.EmulateLinks, "why", "no --link-ephemeris or --ephemeris, or --emulate-links=false")
	}
	// A call that fails as unreachable makes the detector probe that satellite.
	pool.OnUnavailable(func(ctx context.Context, i uint32) { n.Faults().Suspect(ctx, i) })
	pool.OnAnswer(n.Faults().MarkAlive) // any answer proves a peer alive
	return daemon.Run(ctx, daemon.Options{Start: n.Start, Listen: cfg.Listen, MetricsListen: cfg.MetricsListen,
		StopTimeout: cfg.StopTimeout, Registry: m.Registry, Register: n.Register, Close: n.Close, Drain: n.Drain, Logger: log,
		Services:      []string{"satpage.v1.PageService", "satpage.v1.SatelliteService"},
		ServerOptions: serverOpts, Reflection: cfg.Reflection, Pprof: cfg.Pprof, HealthListen: cfg.HealthListen})
}

// neighbourHealth is a health check of an ISL neighbour over the connection
// relayed requests take (the substrate's probe); the first that answers.
func neighbourHealth(pool *peers.Pool, neighbours []uint32) func(context.Context) error {
	return func(ctx context.Context) error {
		err := errors.New("no ISL neighbour")
		for _, i := range neighbours {
			var h healthpb.HealthClient
			if h, err = pool.Health(i); err == nil {
				if _, err = h.Check(ctx, &healthpb.HealthCheckRequest{}); err == nil {
					return nil
				}
			}
		}
		return err
	}
}

// waitRedis connects to this satellite's Redis, trying again for up to wait:
// started beside the satnode (a Swarm service, a pod's container), it may not
// answer, or its name may not resolve, for a while. Exiting at once made Swarm
// restart satnodes in a loop on a loaded host, which slowed everything more.
func waitRedis(ctx context.Context, addr string, wait time.Duration, log *slog.Logger) (*store.Redis, error) {
	deadline := time.Now().Add(wait)
	bo := retry.Backoff{First: time.Second, Max: 10 * time.Second, Jitter: 0.2}
	for try := 0; ; try++ {
		st, err := store.NewRedis(ctx, addr)
		backoff := bo.Delay(try)
		if err == nil || time.Now().Add(backoff).After(deadline) {
			return st, err
		}
		log.Warn("redis does not answer yet; trying again", "redis", addr, "in", backoff, "err", err)
		if !retry.Sleep(ctx, backoff) {
			return nil, ctx.Err()
		}
	}
}
