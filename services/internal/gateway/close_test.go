package gateway_test

import (
	"context"
	"testing"
	"time"

	"github.com/satpage/satpage/services/internal/constellation"
	"github.com/satpage/satpage/services/internal/gateway"
	"github.com/satpage/satpage/services/internal/leakcheck"
	"github.com/satpage/satpage/services/internal/peers"
	"github.com/satpage/satpage/services/internal/sky"
)

// Close stops and waits for the gateway's background work (idle expiry, the
// live handovers and ephemeris reloads), although the context Start was given
// never ends: the peers can be closed after it with nothing still using them.
func TestCloseJoinsTheGatewaysBackgroundWork(t *testing.T) {
	const spec = "walker-star:150/10/1:500:87"
	s, _ := constellation.ParseSpec(spec)
	grid, err := constellation.NewGrid(s)
	if err != nil {
		t.Fatal(err)
	}
	eph, err := sky.ReadEphemeris("../../testdata/live_ephemeris.bin", s)
	if err != nil {
		t.Fatal(err)
	}
	clock, err := sky.NewClock(eph.EpochTime, time.Time{}, 60)
	if err != nil {
		t.Fatal(err)
	}
	before := leakcheck.Snapshot()
	pool := peers.NewPool(func(uint32) string { return "127.0.0.1:1" })
	g, err := gateway.New(gateway.Options{Grid: grid, Peers: pool, SessionIdle: time.Second,
		Live: &gateway.LiveOptions{Clock: clock, Ephemeris: eph, Spec: s}})
	if err != nil {
		t.Fatal(err)
	}
	g.Start(context.Background())
	time.Sleep(50 * time.Millisecond) // both loops running
	g.Close()
	pool.Close()
	leakcheck.Check(t, before, 0)
}
