// Command floornode is the floor under a one-page page fault: a
// satnode's transport, security and runtime with none of its page logic
// (internal/floor; wiring only). It takes satnode's flags and ignores those
// of the page store and link emulation; bench/bench_services.py runs a
// cluster of them beside the satnodes' (docs/services.md, "The floor,
// measured as the fault is"). It is a benchmark's instrument: it keeps no
// page and must not be deployed.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/satpage/satpage/services/internal/auth"
	"github.com/satpage/satpage/services/internal/config"
	"github.com/satpage/satpage/services/internal/daemon"
	"github.com/satpage/satpage/services/internal/floor"
	"github.com/satpage/satpage/services/internal/metrics"
)

func main() { daemon.Main("floornode", run) }

func run() error {
	host, _ := os.Hostname()
	cfg, err := config.Load(config.Satnode, os.Args[1:], os.Getenv, host, os.Stderr)
	if err != nil {
		return err
	}
	log := daemon.Logger(os.Stderr, cfg.SlogLevel(), cfg.LogFormat, "floornode").With("satellite", cfg.Index)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	grid, err := cfg.Grid()
	if err != nil {
		return err
	}
	m := metrics.NewNode(cfg.Index)
	sec, err := auth.Load(cfg, config.Satnode, log, m.Registry)
	if err != nil {
		return err
	}
	pool := sec.Pool(cfg.PeerAddr)
	defer pool.Close()
	pool.StreamFetches() // as a satnode without link emulation
	f, err := floor.New(uint32(cfg.Index), grid, pool, cfg.PageBytes)
	if err != nil {
		return err
	}
	log.Warn("the floor under a page fault: no page is kept (a benchmark's instrument, not a satellite)")
	return daemon.Run(ctx, daemon.Options{Listen: cfg.Listen, MetricsListen: cfg.MetricsListen,
		StopTimeout: cfg.StopTimeout, Registry: m.Registry, Register: f.Register, Drain: f.Drain, Logger: log,
		Services:      []string{"satpage.v1.PageService", "satpage.v1.SatelliteService"},
		ServerOptions: sec.ServerOptions(), Pprof: cfg.Pprof})
}
