package node_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/clustertest"
	"github.com/satpage/satpage/services/internal/constellation"
	"github.com/satpage/satpage/services/internal/tlsconf/tlstest"
	"github.com/satpage/satpage/services/internal/token"
)

const faultSpec = "walker-star:30/2/1:500:87" // 2 planes of 15: satellite p*15 + k

// writeAt opens session at satellite at and writes pages 0..n-1 there.
func writeAt(t *testing.T, c *clustertest.Cluster, session string, at, n int) map[uint32]string {
	t.Helper()
	ctx := context.Background()
	pc, sc := c.Satellite(t, at)
	if _, err := sc.OpenSession(ctx, &satpagev1.OpenSessionRequest{SessionId: session}); err != nil {
		t.Fatal(err)
	}
	want := map[uint32]string{}
	for p := range uint32(n) {
		want[p] = fmt.Sprintf("%s/page-%d/v1", session, p)
		if _, err := pc.WritePage(ctx, &satpagev1.WritePageRequest{SessionId: session, Page: p, Data: []byte(want[p])}); err != nil {
			t.Fatal(err)
		}
	}
	return want
}

// readAll reads pages 0..len(want)-1 at satellite at and compares.
func readAll(t *testing.T, c *clustertest.Cluster, session string, at int, want map[uint32]string) {
	t.Helper()
	pc, _ := c.Satellite(t, at)
	for p := range uint32(len(want)) {
		r, err := pc.ReadPage(context.Background(), &satpagev1.ReadPageRequest{SessionId: session, Page: p})
		if err != nil || string(r.Data) != want[p] {
			t.Fatalf("read page %d at satellite %d: got %q, %v, want %q", p, at, r.GetData(), err, want[p])
		}
	}
}

func TestWithTwoReplicasADeadOwnersPagesAreServedByItsReplica(t *testing.T) {
	c := clustertest.New(t, faultSpec, clustertest.Options{Replicas: 2})
	want := writeAt(t, c, "s", 5, 20) // owner 5; its replica is 4, the slot behind
	_, sc := c.Satellite(t, 5)
	if _, err := sc.HandOver(context.Background(), &satpagev1.HandOverRequest{SessionId: "s", ToSatellite: 20}); err != nil {
		t.Fatal(err)
	}
	c.Kill(5) // memory gone
	start := time.Now()
	readAll(t, c, "s", 20, want)
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("20 reads of a dead owner's pages took %v", took)
	}
	// The pages live at 20 now, copied to 19.
	if got := testutil.ToFloat64(c.Metrics[20].Accesses.WithLabelValues("moved")); got != 20 {
		t.Errorf("pages moved to 20: got %v, want 20", got)
	}
}

func TestARestartedServingSatelliteServesEveryAcknowledgedPage(t *testing.T) {
	c := clustertest.New(t, faultSpec, clustertest.Options{Replicas: 2})
	want := writeAt(t, c, "s", 7, 30)
	c.Kill(7)
	pc, _ := c.Satellite(t, 7)
	start := time.Now()
	_, err := pc.ReadPage(context.Background(), &satpagev1.ReadPageRequest{SessionId: "s", Page: 1})
	if status.Code(err) != codes.Unavailable || time.Since(start) > 2*time.Second {
		t.Fatalf("a read at the dead satellite: got %v after %v, want Unavailable at once", err, time.Since(start))
	}
	c.Restart(t, 7)
	readAll(t, c, "s", 7, want)
	// A write after the restart is copied again: kill 7 once more, lose nothing.
	pc, _ = c.Satellite(t, 7)
	want[3] = "s/page-3/v2"
	if _, err := pc.WritePage(context.Background(), &satpagev1.WritePageRequest{SessionId: "s", Page: 3, Data: []byte(want[3])}); err != nil {
		t.Fatal(err)
	}
	c.Kill(7)
	c.Restart(t, 7)
	readAll(t, c, "s", 7, want)
}

func TestAReplicaThatRestartedEmptyIsRefilledBeforeTheOwnerDies(t *testing.T) {
	c := clustertest.New(t, faultSpec, clustertest.Options{Replicas: 2})
	want := writeAt(t, c, "s", 7, 10)
	c.Kill(6) // the replica of 7
	c.Restart(t, 6)
	c.Kill(7) // now the owner: its state must come from the refilled 6
	c.Restart(t, 7)
	readAll(t, c, "s", 7, want)
}

func TestWithOneReplicaADeadSatellitesPagesAreLostAndSaidSo(t *testing.T) {
	c := clustertest.New(t, faultSpec, clustertest.Options{Replicas: 1})
	writeAt(t, c, "s", 7, 3)
	c.Kill(7)
	c.Restart(t, 7)
	pc, _ := c.Satellite(t, 7)
	_, err := pc.ReadPage(context.Background(), &satpagev1.ReadPageRequest{SessionId: "s", Page: 0})
	if status.Code(err) != codes.NotFound {
		t.Fatalf("read after losing the only copy: got %v, want NotFound (never stale or empty data)", err)
	}
}

// Routing goes around a dead relay and a cut ISL, and the hops counted are
// those of the live graph (its BFS distance is the authority).
func TestRequestsGoAroundDeadSatellitesAndCutLinks(t *testing.T) {
	c := clustertest.New(t, faultSpec, clustertest.Options{})
	want := writeAt(t, c, "s", 0, 4) // owner 0; read from 3 (3 hops in plane: 3-2-1-0)
	_, sc := c.Satellite(t, 0)
	if _, err := sc.HandOver(context.Background(), &satpagev1.HandOverRequest{SessionId: "s", ToSatellite: 3}); err != nil {
		t.Fatal(err)
	}
	c.Kill(1)
	cut := &satpagev1.SetFaultsRequest{Cut: []*satpagev1.Link{{A: 2, B: 17}}}
	for i := range 30 {
		if i == 1 {
			continue
		}
		_, s := c.Satellite(t, i)
		if _, err := s.SetFaults(context.Background(), cut); err != nil {
			t.Fatal(err)
		}
	}
	// The live graph's distance from 3 to 0 without satellite 1 and the ISL 2-17.
	f := liveFaults{down: map[uint32]bool{1: true}, cut: [2]uint32{2, 17}}
	dist, err := c.Grid.LiveDistances(0, 0, f)
	if err != nil {
		t.Fatal(err)
	}
	pc, _ := c.Satellite(t, 3)
	for p := range uint32(4) {
		r, err := pc.ReadPage(context.Background(), &satpagev1.ReadPageRequest{SessionId: "s", Page: p})
		if err != nil || string(r.Data) != want[p] {
			t.Fatalf("page %d: got %v, %v", p, r, err)
		}
		if r.Hops != uint32(dist[3]) || dist[3] <= 3 {
			t.Errorf("page %d travelled %d hops, want the live graph's %d (> 3, the path through 1 is gone)", p, r.Hops, dist[3])
		}
	}
}

type liveFaults struct {
	down map[uint32]bool
	cut  [2]uint32
}

func (f liveFaults) Any() bool                   { return true }
func (f liveFaults) SatelliteDown(i uint32) bool { return f.down[i] }
func (f liveFaults) LinkCut(a, b uint32) bool {
	return [2]uint32{min(a, b), max(a, b)} == f.cut
}

var _ constellation.Faults = liveFaults{}

// The same through the gateway of a secure cluster (mutual TLS, tokens): the
// replication RPCs pass the satellites' access policy.
func TestReplicationWorksInASecureCluster(t *testing.T) {
	dir := t.TempDir()
	tlstest.Write(t, dir, 30)
	c := clustertest.New(t, faultSpec, clustertest.Options{Replicas: 2, TLSDir: dir})
	ctx := context.Background()
	reg, err := c.Control.RegisterSession(ctx, &satpagev1.RegisterSessionRequest{SessionId: "s",
		Visits: []*satpagev1.Visit{{Satellite: 5}, {Satellite: 20, StartNs: 100}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx = metadata.AppendToOutgoingContext(ctx, token.MetadataKey, reg.Token)
	for p := range uint32(10) {
		if _, err := c.Gateway.WritePage(ctx, &satpagev1.WritePageRequest{SessionId: "s", Page: p, ScenarioTimeNs: 1,
			Data: []byte(fmt.Sprint("v", p))}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Gateway.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: "s", Page: 0, ScenarioTimeNs: 101}); err != nil {
		t.Fatal(err) // handed over to 20 while 5 is alive
	}
	c.Kill(5)
	for p := range uint32(10) {
		r, err := c.Gateway.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: "s", Page: p, ScenarioTimeNs: 102})
		if err != nil || string(r.Data) != fmt.Sprint("v", p) {
			t.Fatalf("page %d after its owner died: got %q, %v", p, r.GetData(), err)
		}
	}
}

// A session whose table names a dead owner ends anyway (R = 2): the owner's
// frames are dropped from the copies of its state and counted, and the owner,
// restarted from such a copy, holds nothing of the session.
func TestASessionEndsWhileAnOwnerOfItsPagesIsDead(t *testing.T) {
	c := clustertest.New(t, faultSpec, clustertest.Options{Replicas: 2})
	ctx := context.Background()
	writeAt(t, c, "s", 5, 12) // owner 5 (its copy at 4)
	_, sc := c.Satellite(t, 5)
	if _, err := sc.HandOver(ctx, &satpagev1.HandOverRequest{SessionId: "s", ToSatellite: 20}); err != nil {
		t.Fatal(err)
	}
	pc, _ := c.Satellite(t, 20)
	for p := range uint32(4) { // 4 pages move to 20; 8 stay owned by 5
		if _, err := pc.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: "s", Page: p}); err != nil {
			t.Fatal(err)
		}
	}
	c.Kill(5)
	r, err := pc.EndSession(ctx, &satpagev1.EndSessionRequest{SessionId: "s"})
	if err != nil {
		t.Fatalf("end with owner 5 dead: %v", err)
	}
	if r.PagesDeleted != 12 {
		t.Errorf("pages deleted: %d, want 12 (4 at 20, 8 of the dead 5)", r.PagesDeleted)
	}
	c.Restart(t, 5)
	_, sc = c.Satellite(t, 5)
	f, err := sc.SessionFrames(ctx, &satpagev1.SessionFramesRequest{SessionId: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if f.Frames != 0 || f.Serving {
		t.Errorf("restarted satellite 5 holds %d frames of the ended session (serving %v), want none", f.Frames, f.Serving)
	}
}
