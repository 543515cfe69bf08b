package node_test

// The bound on held read faults (releases.go, Options.HeldWait): a session
// that reads a few pages and goes quiet has their adopt stored, and the old
// owner released, when the timer its first held fault armed fires; whatever
// stores them first stops that timer; Close stops it, or waits for it once
// fired. On real redis-servers; the timers are fired by hand
// (clustertest.Timers) but for one test that waits a real one out.

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/clustertest"
	"github.com/satpage/satpage/services/internal/leakcheck"
	"github.com/satpage/satpage/services/internal/node"
	"github.com/satpage/satpage/services/internal/store"
)

// quietReader is a session of 10 pages written at satellite 0 and handed
// to satellite 1, whose own Redis (under its cache) back reads.
func quietReader(t *testing.T, o clustertest.Options) (c *clustertest.Cluster, want map[uint32]string, back *store.Redis) {
	t.Helper()
	ctx := context.Background()
	socks := map[int]string{}
	o.Store = redisStores(socks)
	c = clustertest.New(t, "walker-star:4/1/0:500:87", o)
	want = writeAt(t, c, "s", 0, 10)
	_, s0 := c.Satellite(t, 0)
	if _, err := s0.HandOver(ctx, &satpagev1.HandOverRequest{SessionId: "s", ToSatellite: 1}); err != nil {
		t.Fatal(err)
	}
	back, err := store.NewRedis(ctx, socks[1])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { back.Close() })
	return c, want, back
}

// storedAt1 wants pages at satellite 1 in its Redis, by its table and with
// their frames, and every other page of want still at satellite 0.
func storedAt1(t *testing.T, back *store.Redis, want map[uint32]string, pages ...uint32) {
	t.Helper()
	ctx := context.Background()
	table, err := back.GetTable(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	for p := range uint32(len(want)) {
		owner := uint32(0)
		if slices.Contains(pages, p) {
			owner = 1
		}
		if table[p] != owner {
			t.Errorf("owner of page %d in satellite 1's Redis: got %d, want %d", p, table[p], owner)
		}
	}
	if len(pages) == 0 {
		return
	}
	f, err := back.GetFrames(ctx, "s", pages)
	if err != nil {
		t.Fatalf("frames of pages %v in satellite 1's Redis: %v", pages, err)
	}
	for i, p := range pages {
		if string(f[i].Data) != want[p] {
			t.Errorf("page %d in satellite 1's Redis: got %q, want %q", p, f[i].Data, want[p])
		}
	}
}

// framesAt0 wants n frames of the session at the old owner.
func framesAt0(t *testing.T, c *clustertest.Cluster, n int, why string) {
	t.Helper()
	if got, err := c.Stores[0].CountFrames(context.Background(), "s"); err != nil || got != n {
		t.Errorf("frames at the old owner %s: got %d, %v, want %d", why, got, err, n)
	}
}

// A session that reads three pages and goes quiet: one timer, armed by the
// first read, of the node's bound; when it fires the three adopts are stored
// in the serving satellite's Redis and the old owner is released, with no
// further request of the session.
func TestAQuietSessionsHeldAdoptIsStoredAndItsOldOwnerReleasedWhenTheBoundPasses(t *testing.T) {
	timers := &clustertest.Timers{}
	c, want, back := quietReader(t, clustertest.Options{HeldTimers: timers})
	readMoved(t, c, "s", 1, []uint32{0, 1, 2}, want)
	if got := timers.Armed(); !slices.Equal(got, []time.Duration{node.DefaultHeldWait}) {
		t.Fatalf("timers armed by three held faults: got %v, want one of %v", got, node.DefaultHeldWait)
	}
	storedAt1(t, back, want)
	framesAt0(t, c, 10, "while the faults are held")
	if n := timers.Fire(); n != 1 {
		t.Fatalf("timers fired: got %d, want 1", n)
	}
	storedAt1(t, back, want, 0, 1, 2)
	framesAt0(t, c, 7, "once the bound has passed")
	if got := timers.Armed(); len(got) != 0 {
		t.Errorf("timers armed after the bound passed: got %v, want none", got)
	}
	// Stored: a second read is local, and the next fault arms a timer again.
	p1, _ := c.Satellite(t, 1)
	if r, err := p1.ReadPage(context.Background(), &satpagev1.ReadPageRequest{SessionId: "s", Page: 0}); err != nil || r.Outcome != satpagev1.Outcome_OUTCOME_LOCAL {
		t.Errorf("second read of a stored page: got %v, %v, want LOCAL", r, err)
	}
	readMoved(t, c, "s", 1, []uint32{3}, want)
	if got := timers.Armed(); len(got) != 1 {
		t.Errorf("timers armed by the next held fault: got %v, want one", got)
	}
}

// Held faults stored before the bound passes stop its timer: by a write to a
// held page, by the batch of 64, by SessionFrames. The timer of a held set
// that is gone never fires.
func TestTheBoundDoesNotFireForHeldFaultsAlreadyStored(t *testing.T) {
	ctx := context.Background()
	timers := &clustertest.Timers{}
	c := clustertest.New(t, "walker-star:4/1/0:500:87", clustertest.Options{Store: redisStores(map[int]string{}), HeldTimers: timers})
	want := writeAt(t, c, "s", 0, 70)
	_, s0 := c.Satellite(t, 0)
	if _, err := s0.HandOver(ctx, &satpagev1.HandOverRequest{SessionId: "s", ToSatellite: 1}); err != nil {
		t.Fatal(err)
	}
	p1, s1 := c.Satellite(t, 1)
	armed := func(want int, after string) {
		t.Helper()
		if got := timers.Armed(); len(got) != want {
			t.Errorf("timers armed %s: got %v, want %d", after, got, want)
		}
	}
	readMoved(t, c, "s", 1, []uint32{0, 1}, want)
	armed(1, "by two held faults")
	if _, err := p1.WritePage(ctx, &satpagev1.WritePageRequest{SessionId: "s", Page: 1, Data: []byte("v2")}); err != nil {
		t.Fatal(err)
	}
	armed(0, "once a write stored the held faults")
	// Pages 0 and 1 are stored, their releases pending: 62 more faults make
	// the batch of 64, which stores the held faults and sends the releases.
	pages := make([]uint32, 0, 62)
	for p := uint32(2); p < 64; p++ {
		pages = append(pages, p)
	}
	readMoved(t, c, "s", 1, pages, want)
	armed(0, "once the batch stored the held faults")
	readMoved(t, c, "s", 1, []uint32{64}, want)
	armed(1, "by the fault after the batch")
	if f, err := s1.SessionFrames(ctx, &satpagev1.SessionFramesRequest{SessionId: "s"}); err != nil || f.Frames != 65 {
		t.Fatalf("SessionFrames: got %v, %v, want 65 frames here", f, err)
	}
	armed(0, "once SessionFrames stored the held faults")
	if n := timers.Fire(); n != 0 {
		t.Errorf("timers fired after every held fault was stored: got %d, want 0", n)
	}
	if n, err := c.Stores[0].CountFrames(ctx, "s"); err != nil || n != 70-65 {
		t.Errorf("frames at the old owner: got %d, %v, want %d", n, err, 70-65)
	}
}

// A bound that passes while the session's batch is still being released
// waits for that send, then stores its own held faults and releases them.
func TestTheBoundWaitsForTheBatchBeingSent(t *testing.T) {
	ctx := context.Background()
	hold := make(chan struct{})
	timers := &clustertest.Timers{}
	c := clustertest.New(t, defaultSpec, clustertest.Options{Interceptor: holdReleases(hold), HeldTimers: timers})
	movePagesFrom0To1(t, c, "r") // 64 stored and being released (held at 0), 2 held
	if got := timers.Armed(); len(got) != 1 {
		t.Fatalf("timers armed: got %v, want one (the 2 faults after the batch)", got)
	}
	fired := make(chan int)
	go func() { fired <- timers.Fire() }()
	close(hold)
	if n := <-fired; n != 1 {
		t.Fatalf("timers fired: got %d, want 1", n)
	}
	if n, _ := c.Stores[0].CountFrames(ctx, "r"); n != 70-66 {
		t.Errorf("frames at the old owner once the bound passed: got %d, want %d", n, 70-66)
	}
	table, err := c.Stores[1].GetTable(ctx, "r")
	if err != nil || table[64] != 1 || table[65] != 1 {
		t.Errorf("table at the serving satellite: got pages 64, 65 at %d, %d (%v), want both at 1", table[64], table[65], err)
	}
}

// A real timer: the node's own (time.AfterFunc) with a bound of 20 ms. The
// quiet session's adopts are stored and its old owner released by it alone.
func TestAHeldAdoptIsStoredByARealTimer(t *testing.T) {
	c, want, back := quietReader(t, clustertest.Options{HeldWait: 20 * time.Millisecond})
	readMoved(t, c, "s", 1, []uint32{4, 5}, want)
	deadline := time.Now().Add(10 * time.Second)
	for {
		n, err := c.Stores[0].CountFrames(context.Background(), "s")
		if err == nil && n == 8 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("frames at the old owner 10 s after a 20 ms bound: got %d, %v, want 8", n, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	storedAt1(t, back, want, 4, 5)
}

// Close stops a timer that has not fired (a bound of an hour does not hold
// it up) and stores the held faults itself; nothing of the node outlives it.
func TestCloseStopsTheBoundsTimerAndStoresTheHeldFaults(t *testing.T) {
	c, want, back := quietReader(t, clustertest.Options{HeldWait: time.Hour})
	readMoved(t, c, "s", 1, []uint32{0, 1}, want)
	before := leakcheck.Snapshot()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Nodes[1].Close(ctx); err != nil {
		t.Fatalf("Close: got %v, want nil", err)
	}
	storedAt1(t, back, want, 0, 1)
	framesAt0(t, c, 8, "after Close")
	leakcheck.Check(t, before, 2*time.Second)
}

// A timer that fired while the batch's releases are stuck waits for them;
// Close, cut off at its deadline, cancels the send and joins the timer's
// goroutine too: the 2 held faults are dropped (not stored, the old owner
// keeps every page) and nothing of the node outlives Close.
func TestCloseJoinsABoundThatFiredWhileTheBatchWasStuck(t *testing.T) {
	ctx := context.Background()
	hold := make(chan struct{})
	defer close(hold)
	timers := &clustertest.Timers{}
	c := clustertest.New(t, defaultSpec, clustertest.Options{Interceptor: holdReleases(hold), HeldTimers: timers})
	movePagesFrom0To1(t, c, "r")
	before := leakcheck.Snapshot()
	fired := make(chan int, 1)
	go func() { fired <- timers.Fire() }()
	for len(timers.Armed()) > 0 {
		time.Sleep(time.Millisecond) // until Fire has taken the timer: its function runs
	}
	cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if err := c.Nodes[1].Close(cctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Close: got %v, want DeadlineExceeded", err)
	}
	select {
	case n := <-fired:
		if n != 1 {
			t.Errorf("timers fired: got %d, want 1", n)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the timer's function still runs 5 s after Close returned")
	}
	if n, _ := c.Stores[0].CountFrames(ctx, "r"); n != 70 {
		t.Errorf("frames at the old owner: got %d, want 70 (stale copies)", n)
	}
	table, err := c.Stores[1].GetTable(ctx, "r")
	if err != nil || table[64] != 0 || table[65] != 0 || table[63] != 1 {
		t.Errorf("table at the serving satellite: got pages 63, 64, 65 at %d, %d, %d (%v), want 1, 0, 0", table[63], table[64], table[65], err)
	}
	leakcheck.Check(t, before, 2*time.Second)
}
