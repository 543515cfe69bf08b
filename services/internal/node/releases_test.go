package node_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/clustertest"
)

func TestAReleaseThatFailsLeavesAStaleCopyNotALostPage(t *testing.T) {
	on := true
	c := clustertest.New(t, "walker-star:30/2/1:500:87", clustertest.Options{Interceptor: clustertest.Inject(0, "ReleasePages", unavailableWhile(&on))})
	placePage(t, c, "s", 0, 3, []byte("payload"))
	rp, _ := c.Satellite(t, 3)
	r, err := rp.ReadPage(context.Background(), &satpagev1.ReadPageRequest{SessionId: "s", Page: 7})
	if err != nil || string(r.Data) != "payload" || r.Hops != 3 {
		t.Fatalf("got %v, %v, want the page after 3 hops", r, err)
	}
	ctx := context.Background()
	_, s3 := c.Satellite(t, 3)
	before := testutil.ToFloat64(c.Metrics[3].RelayedHops.WithLabelValues("ReleasePages"))
	if _, err := s3.SessionFrames(ctx, &satpagev1.SessionFramesRequest{SessionId: "s"}); err != nil {
		t.Fatal(err) // sends the batched release, which the owner fails
	}
	// Unavailable: sent again by the origin, 4 attempts in all, then given up.
	if got := testutil.ToFloat64(c.Metrics[3].RelayedHops.WithLabelValues("ReleasePages")) - before; got != 4 {
		t.Fatalf("release attempts sent: got %v, want 4", got)
	}
	tab, _ := c.Stores[3].GetTable(ctx, "s")
	if tab[7] != 3 {
		t.Errorf("owner in the table: got %d, want 3", tab[7])
	}
	if n, _ := c.Stores[0].CountFrames(ctx, "s"); n != 1 {
		t.Errorf("stale copy at the old owner: got %d frames, want 1", n)
	}
}

func TestEndingASessionAtTheGatewaySweepsStaleCopiesOffTheTrail(t *testing.T) {
	on := true
	c := clustertest.New(t, "walker-star:30/2/1:500:87", clustertest.Options{Interceptor: clustertest.Inject(0, "ReleasePages", unavailableWhile(&on))})
	ctx := context.Background()
	visits := []*satpagev1.Visit{{Satellite: 0, StartNs: 0}, {Satellite: 3, StartNs: 10}}
	if _, err := c.Control.RegisterSession(ctx, &satpagev1.RegisterSessionRequest{SessionId: "s", Visits: visits}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Gateway.WritePage(ctx, &satpagev1.WritePageRequest{SessionId: "s", Page: 7, Data: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Gateway.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: "s", Page: 7, ScenarioTimeNs: 10}); err != nil {
		t.Fatal(err)
	}
	if n, _ := c.Stores[0].CountFrames(ctx, "s"); n != 1 {
		t.Fatalf("stale copy after the failed release: got %d frames, want 1", n)
	}
	e, err := c.Gateway.EndSession(ctx, &satpagev1.EndSessionRequest{SessionId: "s", ScenarioTimeNs: 10})
	if err != nil || e.PagesDeleted != 2 {
		t.Errorf("EndSession: got %v, %v, want the page and its stale copy deleted (2)", e, err)
	}
	for _, i := range []int{0, 3} {
		if n, _ := c.Stores[i].CountFrames(ctx, "s"); n != 0 {
			t.Errorf("frames left at satellite %d: got %d, want 0", i, n)
		}
	}
}

// The 64th fault from an old owner queues a batch of releases; no fault waits
// for it, and the next operation of the session (here SessionFrames) waits
// until the old owner has deleted its copies.
func TestReleasesGoOutOffTheFaultPath(t *testing.T) {
	ctx := context.Background()
	hold := make(chan struct{})
	c := clustertest.New(t, defaultSpec, clustertest.Options{Interceptor: holdReleases(hold)})
	p0, s0 := c.Satellite(t, 0)
	if _, err := s0.OpenSession(ctx, &satpagev1.OpenSessionRequest{SessionId: "r"}); err != nil {
		t.Fatal(err)
	}
	for pg := range uint32(70) {
		if _, err := p0.WritePage(ctx, &satpagev1.WritePageRequest{SessionId: "r", Page: pg, Data: []byte{1}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s0.HandOver(ctx, &satpagev1.HandOverRequest{SessionId: "r", ToSatellite: 1}); err != nil {
		t.Fatal(err)
	}
	p1, s1 := c.Satellite(t, 1)
	for pg := range uint32(66) {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		r, err := p1.ReadPage(rctx, &satpagev1.ReadPageRequest{SessionId: "r", Page: pg})
		cancel()
		if err != nil || r.Outcome != satpagev1.Outcome_OUTCOME_MOVED {
			t.Fatalf("read %d while the old owner holds its releases: got %v, %v, want MOVED", pg, r, err)
		}
	}
	if n, _ := c.Stores[0].CountFrames(ctx, "r"); n != 70 {
		t.Errorf("frames at the old owner while its release is held: got %d, want 70 (stale copies, none lost)", n)
	}
	close(hold)
	if _, err := s1.SessionFrames(ctx, &satpagev1.SessionFramesRequest{SessionId: "r"}); err != nil {
		t.Fatal(err)
	}
	if n, _ := c.Stores[0].CountFrames(ctx, "r"); n != 70-66 {
		t.Errorf("frames at the old owner after the flush: got %d, want %d", n, 70-66)
	}
	if n, _ := c.Stores[1].CountFrames(ctx, "r"); n != 66 {
		t.Errorf("frames at the serving satellite: got %d, want 66", n)
	}
}

// holdReleases makes satellite 0 hold every ReleasePages until hold is closed
// or the request is cancelled.
func holdReleases(hold chan struct{}) func(i int) grpc.UnaryServerInterceptor {
	return clustertest.Inject(0, "ReleasePages", func(ctx context.Context) error {
		select {
		case <-hold:
			return nil
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		}
	})
}

// movePagesFrom0To1 writes pages 0..69 at satellite 0, hands the session to 1
// and reads pages 0..65 there: the 64th fault stores the 64 faults held so far
// and sends their releases in the background; 2 stay held (answered, not yet
// stored).
func movePagesFrom0To1(t *testing.T, c *clustertest.Cluster, session string) {
	t.Helper()
	ctx := context.Background()
	p0, s0 := c.Satellite(t, 0)
	if _, err := s0.OpenSession(ctx, &satpagev1.OpenSessionRequest{SessionId: session}); err != nil {
		t.Fatal(err)
	}
	for pg := range uint32(70) {
		if _, err := p0.WritePage(ctx, &satpagev1.WritePageRequest{SessionId: session, Page: pg, Data: []byte{1}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s0.HandOver(ctx, &satpagev1.HandOverRequest{SessionId: session, ToSatellite: 1}); err != nil {
		t.Fatal(err)
	}
	p1, _ := c.Satellite(t, 1)
	for pg := range uint32(66) {
		if _, err := p1.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: session, Page: pg}); err != nil {
			t.Fatal(err)
		}
	}
}

// Close is the node's shutdown: it waits for the releases it sends in the
// background and sends those still pending, so no goroutine outlives it.
func TestCloseWaitsForTheBackgroundReleasesAndSendsThePendingOnes(t *testing.T) {
	ctx := context.Background()
	hold := make(chan struct{})
	c := clustertest.New(t, defaultSpec, clustertest.Options{Interceptor: holdReleases(hold)})
	movePagesFrom0To1(t, c, "r")
	closed := make(chan error, 1)
	go func() { closed <- c.Nodes[1].Close(ctx) }()
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while its background release was held", err)
	case <-time.After(300 * time.Millisecond):
	}
	close(hold)
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: got %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return within 10 s of the release going through")
	}
	if n, _ := c.Stores[0].CountFrames(ctx, "r"); n != 70-66 {
		t.Errorf("frames at the old owner after Close: got %d, want %d (the batch and the 2 pending released)", n, 70-66)
	}
}

// A release that cannot finish is cancelled at Close's deadline: Close returns,
// and the old owner keeps stale copies, never losing a page; the 2 read faults
// still held are not stored (Close's deadline has passed) and stay at the old
// owner, which the table still names.
func TestCloseCutsOffABackgroundReleaseAtItsDeadline(t *testing.T) {
	ctx := context.Background()
	hold := make(chan struct{})
	defer close(hold)
	c := clustertest.New(t, defaultSpec, clustertest.Options{Interceptor: holdReleases(hold)})
	movePagesFrom0To1(t, c, "r")
	cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	began := time.Now()
	if err := c.Nodes[1].Close(cctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Close: got %v, want DeadlineExceeded", err)
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("Close took %v after its 200 ms deadline", took)
	}
	if n, _ := c.Stores[0].CountFrames(ctx, "r"); n != 70 {
		t.Errorf("frames at the old owner: got %d, want 70 (stale copies)", n)
	}
	if n, _ := c.Stores[1].CountFrames(ctx, "r"); n != 64 {
		t.Errorf("frames at the serving satellite: got %d, want 64 (the batch stored, the 2 held dropped)", n)
	}
	table, err := c.Stores[1].GetTable(ctx, "r")
	if err != nil || table[64] != 0 || table[65] != 0 || table[63] != 1 {
		t.Errorf("table at the serving satellite: got pages 63, 64, 65 at %d, %d, %d (%v), want 1, 0, 0", table[63], table[64], table[65], err)
	}
}
