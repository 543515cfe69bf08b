// Command gateway is the ground entry point (wiring only; logic in internal/).
// Settings: flags or SATPAGE_* environment variables (services/README.md).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/satpage/satpage/services/internal/auth"
	"github.com/satpage/satpage/services/internal/config"
	"github.com/satpage/satpage/services/internal/constellation"
	"github.com/satpage/satpage/services/internal/daemon"
	"github.com/satpage/satpage/services/internal/gateway"
	"github.com/satpage/satpage/services/internal/metrics"
)

func main() {
	if err := run(); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "gateway:", err)
		os.Exit(2)
	}
}

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
	pool := sec.Pool(cfg.PeerAddr)
	defer pool.Close()
	g, err := gateway.New(gateway.Options{Grid: grid, Peers: pool, Logger: log, Metrics: m, RPCTimeout: cfg.RPCTimeout,
		Issuer: sec.Issuer, MaxTablePages: uint32(cfg.MaxTablePages), SessionIdle: cfg.SessionIdle})
	if err != nil {
		return err
	}
	go g.ExpireIdle(ctx)
	log.Info("starting", "constellation", cfg.Constellation, "peer_template", cfg.PeerTemplate, "peer_port_base", cfg.PeerPortBase)
	return daemon.Run(ctx, daemon.Options{Listen: cfg.Listen, MetricsListen: cfg.MetricsListen,
		StopTimeout: cfg.StopTimeout, Registry: m.Registry, Register: g.Register, Logger: log,
		Services:      []string{"satpage.v1.PageService", "satpage.v1.GatewayService"},
		ServerOptions: sec.ServerOptions(), Reflection: cfg.Reflection, Pprof: cfg.Pprof, HealthListen: cfg.HealthListen})
}
