package node_test

import (
	"context"
	"testing"
	"time"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/clustertest"
)

// servedAtThree is a cluster with session "s" whose two pages are owned by
// satellite 0 and which is served by 3: a read travels 3-2-1-0.
func servedAtThree(t *testing.T) (*clustertest.Cluster, map[uint32]string) {
	t.Helper()
	c := clustertest.New(t, faultSpec, clustertest.Options{})
	want := writeAt(t, c, "s", 0, 2)
	_, sc := c.Satellite(t, 0)
	if _, err := sc.HandOver(context.Background(), &satpagev1.HandOverRequest{SessionId: "s", ToSatellite: 3}); err != nil {
		t.Fatal(err)
	}
	return c, want
}

// A satellite whose detector wrongly holds live satellites dead (a loaded
// machine: probes timed out) so that its live graph has no route to a
// destination it does not hold dead still sends the request, on the graph with
// the cut ISLs only, as origin and as relay (docs/faults.md, "Relays").
func TestARouteThroughSatellitesWronglyHeldDeadIsStillTried(t *testing.T) {
	for _, tc := range []struct {
		name  string
		at    int // the satellite with the wrong view
		wrong func(c *clustertest.Cluster) []uint32
	}{
		{"origin", 3, func(c *clustertest.Cluster) []uint32 { return c.Grid.Neighbors(3, 0) }},
		{"relay", 2, func(c *clustertest.Cluster) []uint32 { return c.Grid.Neighbors(2, 0) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, want := servedAtThree(t)
			for _, j := range tc.wrong(c) {
				c.Nodes[tc.at].Faults().MarkDead(j)
			}
			if _, err := c.Grid.LiveNextHop(uint32(tc.at), 0, 0, c.Nodes[tc.at].Faults()); err == nil {
				t.Fatalf("satellite %d's live graph still has a route to 0: the test sets up nothing", tc.at)
			}
			pc, _ := c.Satellite(t, 3)
			r, err := pc.ReadPage(context.Background(), &satpagev1.ReadPageRequest{SessionId: "s", Page: 1})
			if err != nil || string(r.Data) != want[1] {
				t.Fatalf("read through satellite %d's wrong view: got %v, %v, want %q", tc.at, r, err, want[1])
			}
			if r.Hops != 3 {
				t.Errorf("travelled %d hops, want the static route's 3", r.Hops)
			}
			// The hop it took answered: no longer held dead (peers.Pool.OnAnswer).
			hop := uint32(2)
			if tc.at == 2 {
				hop = 1
			}
			if c.Nodes[tc.at].Faults().SatelliteDown(hop) {
				t.Errorf("satellite %d answered satellite %d but is still held dead", hop, tc.at)
			}
		})
	}
}

// A satellite that died silently (dials to it time out, as a dead task's name
// in Docker Swarm: only a miss for the failure detector) is gone around at
// once by the request that found it unreachable, as origin and as relay.
func TestARequestGoesAroundAHopThatDiedSilently(t *testing.T) {
	for _, tc := range []struct {
		name   string
		silent uint32 // on the route 3-2-1-0
	}{{"origin's hop", 2}, {"relay's hop", 1}} {
		t.Run(tc.name, func(t *testing.T) {
			c, want := servedAtThree(t)
			pc, _ := c.Satellite(t, 3)
			if _, err := pc.ReadPage(context.Background(), &satpagev1.ReadPageRequest{SessionId: "s", Page: 0}); err != nil {
				t.Fatal(err) // the route's connections are up before the silence
			}
			c.Silence(tc.silent)
			start := time.Now()
			r, err := pc.ReadPage(context.Background(), &satpagev1.ReadPageRequest{SessionId: "s", Page: 1})
			if err != nil || string(r.Data) != want[1] {
				t.Fatalf("read around the silent satellite %d: got %v, %v, want %q", tc.silent, r, err, want[1])
			}
			if r.Hops <= 3 {
				t.Errorf("travelled %d hops: not around satellite %d", r.Hops, tc.silent)
			}
			if took := time.Since(start); took > 8*time.Second {
				t.Errorf("the read took %v", took)
			}
		})
	}
}
