package node_test

// Read faults answered before their adopt is stored (releases.go, held): the
// old owner keeps the page until the adopt is stored, so a serving satellite
// that dies or is fenced in between loses nothing, and a write or a second
// read of the page sees it stored first.

import (
	"context"
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/clustertest"
	"github.com/satpage/satpage/services/internal/store"
	"github.com/satpage/satpage/services/internal/storetest"
)

// redisStores gives each satellite the satnode's store stack on a real
// redis-server of its own (its socket in socks), the same one again after a
// restart.
func redisStores(socks map[int]string) func(t testing.TB, i int) store.PageStore {
	return func(t testing.TB, i int) store.PageStore {
		if socks[i] == "" {
			socks[i] = storetest.RedisServer(t)
		}
		r, err := store.NewRedis(context.Background(), socks[i])
		if err != nil {
			t.Fatal(err)
		}
		return store.Stack(r, 0, 16<<20)
	}
}

// readMoved reads pages at satellite at and wants each moved there with its data.
func readMoved(t *testing.T, c *clustertest.Cluster, session string, at int, pages []uint32, want map[uint32]string) {
	t.Helper()
	pc, _ := c.Satellite(t, at)
	for _, p := range pages {
		r, err := pc.ReadPage(context.Background(), &satpagev1.ReadPageRequest{SessionId: session, Page: p})
		if err != nil || r.Outcome != satpagev1.Outcome_OUTCOME_MOVED || string(r.Data) != want[p] {
			t.Fatalf("read page %d at satellite %d: got %v, %v, want MOVED with %q", p, at, r, err, want[p])
		}
	}
}

// A serving satellite killed after answering read faults and before storing
// them loses nothing: its Redis never held them, the old owner was never
// released, and the restarted satellite moves the pages again from there.
func TestAServingSatelliteKilledBeforeItsHeldAdoptIsStoredLosesNoPage(t *testing.T) {
	ctx := context.Background()
	c := clustertest.New(t, "walker-star:4/1/0:500:87", clustertest.Options{Store: redisStores(map[int]string{}),
		HeldTimers: &clustertest.Timers{}}) // the bound never passes
	want := writeAt(t, c, "s", 0, 10)
	_, s0 := c.Satellite(t, 0)
	if _, err := s0.HandOver(ctx, &satpagev1.HandOverRequest{SessionId: "s", ToSatellite: 1}); err != nil {
		t.Fatal(err)
	}
	readMoved(t, c, "s", 1, []uint32{0, 1, 2, 3, 4}, want)
	if n, err := c.Stores[1].CountFrames(ctx, "s"); err != nil || n != 0 {
		t.Errorf("frames in the serving satellite's Redis before its adopt: got %d, %v, want 0", n, err)
	}
	if n, err := c.Stores[0].CountFrames(ctx, "s"); err != nil || n != 10 {
		t.Errorf("frames at the old owner before the adopt: got %d, %v, want 10", n, err)
	}
	c.Kill(1)
	c.Restart(t, 1)
	readMoved(t, c, "s", 1, []uint32{0, 1, 2, 3, 4}, want)
	readAll(t, c, "s", 1, want)
	_, s1 := c.Satellite(t, 1)
	if f, err := s1.SessionFrames(ctx, &satpagev1.SessionFramesRequest{SessionId: "s"}); err != nil || f.Frames != 10 || f.TablePages != 10 {
		t.Errorf("SessionFrames at the serving satellite: got %v, %v, want all 10 pages here", f, err)
	}
	if n, err := c.Stores[0].CountFrames(ctx, "s"); err != nil || n != 0 {
		t.Errorf("frames at the old owner once released: got %d, %v, want 0", n, err)
	}
}

// A serving satellite paused after answering read faults, whose session is
// taken over meanwhile (fencing its copies), cannot store them when it
// resumes: the adopt is refused, the old owner is not released, and the new
// server moves the pages from there.
func TestAFencedServingSatelliteDropsItsHeldAdoptAndTheOldOwnerKeepsThePages(t *testing.T) {
	ctx := context.Background()
	c := clustertest.New(t, faultSpec, clustertest.Options{Replicas: 2, HeldTimers: &clustertest.Timers{}})
	want := writeAt(t, c, "s", 5, 10)
	_, s5 := c.Satellite(t, 5)
	if _, err := s5.HandOver(ctx, &satpagev1.HandOverRequest{SessionId: "s", ToSatellite: 7}); err != nil {
		t.Fatal(err)
	}
	readMoved(t, c, "s", 7, []uint32{0, 1, 2}, want)
	c.Freeze(7, true)
	_, s6 := c.Satellite(t, 6)
	if r, err := s6.TakeOver(ctx, &satpagev1.TakeOverRequest{SessionId: "s", Failed: 7}); err != nil || r.TablePages != 10 || r.PagesAdopted != 0 {
		t.Fatalf("TakeOver at 6: got %v, %v, want the table of 10 pages, none owned by 7", r, err)
	}
	c.Freeze(7, false)
	// 7's flush: its adopt is refused (a fenced copy), so it releases nothing.
	_, s7 := c.Satellite(t, 7)
	if f, err := s7.SessionFrames(ctx, &satpagev1.SessionFramesRequest{SessionId: "s"}); err == nil && f.Serving {
		t.Errorf("SessionFrames at the fenced satellite: got %v, want it not serving", f)
	}
	if n, err := c.Stores[5].CountFrames(ctx, "s"); err != nil || n != 10 {
		t.Errorf("frames at the old owner after the fenced flush: got %d, %v, want 10", n, err)
	}
	readMoved(t, c, "s", 6, []uint32{0, 1, 2}, want)
	readAll(t, c, "s", 6, want)
}

// A write to a page whose read fault is held stores that fault first, then
// the write, before it is answered; a second read of a held page finds it
// here (local), stored; a request with an id is stored before its answer.
func TestWritesSecondReadsAndRequestIDsFindHeldFaultsStored(t *testing.T) {
	ctx := context.Background()
	socks := map[int]string{}
	c := clustertest.New(t, "walker-star:4/1/0:500:87", clustertest.Options{Store: redisStores(socks),
		HeldTimers: &clustertest.Timers{}})
	want := writeAt(t, c, "s", 0, 10)
	_, s0 := c.Satellite(t, 0)
	if _, err := s0.HandOver(ctx, &satpagev1.HandOverRequest{SessionId: "s", ToSatellite: 1}); err != nil {
		t.Fatal(err)
	}
	readMoved(t, c, "s", 1, []uint32{0, 1, 2, 3}, want)
	p1, _ := c.Satellite(t, 1)
	w, err := p1.WritePage(ctx, &satpagev1.WritePageRequest{SessionId: "s", Page: 1, Data: []byte("s/page-1/v2")})
	if err != nil || w.Outcome != satpagev1.Outcome_OUTCOME_LOCAL {
		t.Fatalf("write of a held page: got %v, %v, want LOCAL", w, err)
	}
	// Stored in the serving satellite's Redis (under the cache) before the answer.
	back, err := store.NewRedis(ctx, socks[1])
	if err != nil {
		t.Fatal(err)
	}
	defer back.Close()
	table, err := back.GetTable(ctx, "s")
	if err != nil || table[0] != 1 || table[1] != 1 || table[2] != 1 || table[3] != 1 || table[4] != 0 {
		t.Errorf("table in Redis after the write: got %v, %v, want pages 0-3 at 1, 4 at 0", table, err)
	}
	if f, err := back.GetFrames(ctx, "s", []uint32{1}); err != nil || string(f[0].Data) != "s/page-1/v2" {
		t.Errorf("page 1 in Redis after the write: got %v, %v, want the value written", f, err)
	}
	// Held again, then read again: local, no second move.
	readMoved(t, c, "s", 1, []uint32{5}, want)
	r, err := p1.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: "s", Page: 5})
	if err != nil || r.Outcome != satpagev1.Outcome_OUTCOME_LOCAL || string(r.Data) != want[5] {
		t.Fatalf("second read of a held page: got %v, %v, want LOCAL with %q", r, err, want[5])
	}
	// A read fault with an id is stored with its answer before it is answered.
	r, err = p1.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: "s", Page: 6, RequestId: "r6"})
	if err != nil || r.Outcome != satpagev1.Outcome_OUTCOME_MOVED {
		t.Fatalf("read fault with an id: got %v, %v, want MOVED", r, err)
	}
	if table, err := back.GetTable(ctx, "s"); err != nil || table[5] != 1 || table[6] != 1 {
		t.Errorf("table in Redis after the read with an id: got %v, %v, want pages 5 and 6 at 1", table, err)
	}
	if moved := testutil.ToFloat64(c.Metrics[1].Accesses.WithLabelValues("moved")); moved != 6 {
		t.Errorf("moves counted at the serving satellite: got %v, want 6 (pages 0-3, 5, 6, each once)", moved)
	}
	if n, err := c.Stores[0].CountFrames(ctx, "s"); err != nil || n != 10 {
		t.Errorf("frames at the old owner before the batch of releases: got %d, %v, want 10 (released in batches)", n, err)
	}
}

// A batch of releases whose moves were all stored before their answer (reads
// with a request id: nothing held) goes out in the background as before.
func TestABatchOfStoredMovesIsReleasedWithNothingHeld(t *testing.T) {
	ctx := context.Background()
	c := clustertest.New(t, "walker-star:4/1/0:500:87", clustertest.Options{})
	want := writeAt(t, c, "s", 0, 70)
	_, s0 := c.Satellite(t, 0)
	if _, err := s0.HandOver(ctx, &satpagev1.HandOverRequest{SessionId: "s", ToSatellite: 1}); err != nil {
		t.Fatal(err)
	}
	p1, s1 := c.Satellite(t, 1)
	for p := range uint32(66) {
		r, err := p1.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: "s", Page: p, RequestId: fmt.Sprintf("r%d", p)})
		if err != nil || r.Outcome != satpagev1.Outcome_OUTCOME_MOVED || string(r.Data) != want[p] {
			t.Fatalf("read %d with an id: got %v, %v, want MOVED with %q", p, r, err, want[p])
		}
	}
	if f, err := s1.SessionFrames(ctx, &satpagev1.SessionFramesRequest{SessionId: "s"}); err != nil || f.Frames != 66 {
		t.Fatalf("SessionFrames at the serving satellite: got %v, %v, want 66 frames", f, err)
	}
	if n, err := c.Stores[0].CountFrames(ctx, "s"); err != nil || n != 4 {
		t.Errorf("frames at the old owner after the releases: got %d, %v, want 4", n, err)
	}
}
