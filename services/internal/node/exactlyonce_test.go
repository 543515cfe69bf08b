package node_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/clustertest"
	"github.com/satpage/satpage/services/internal/errs"
	"github.com/satpage/satpage/services/internal/store"
	"github.com/satpage/satpage/services/internal/storetest"
)

// crashAfterChange is a store whose n-th AdoptAnswered applies the change and
// then fails, as a satellite that dies after its Redis ran the step and before
// it replied.
type crashAfterChange struct {
	store.PageStore
	n atomic.Int32 // the call that fails (counting down to 0)
}

func (c *crashAfterChange) AdoptAnswered(ctx context.Context, session string, frames []store.Frame, owner uint32, answers string, answer store.Frame) error {
	if err := c.PageStore.AdoptAnswered(ctx, session, frames, owner, answers, answer); err != nil {
		return err
	}
	if c.n.Add(-1) == 0 {
		return fmt.Errorf("satellite died after the change (injected): %w", errs.ErrUnavailable)
	}
	return nil
}

// redisCluster is a one-plane constellation whose satellites 0 and 1 keep
// their state in real redis-servers, 1's behind crash.
func redisCluster(t *testing.T, crash *crashAfterChange) *clustertest.Cluster {
	return clustertest.New(t, "walker-star:4/1/0:500:87", clustertest.Options{Store: func(t testing.TB, i int) store.PageStore {
		if i > 1 {
			return store.NewMemory()
		}
		r, err := store.NewRedis(context.Background(), storetest.RedisServer(t))
		if err != nil {
			t.Fatal(err)
		}
		st := store.Stack(r, 0.8, 16<<20) // as a satnode builds it
		if i == 1 {
			crash.PageStore = st
			return crash
		}
		return st
	}})
}

// A write that moves a page, retried after the serving satellite failed
// between storing it and replying, is answered as the first attempt was
// (moved, 1 hop), and the gateway counts one movement: the gateway sends it
// again itself (the satellite is alive, nobody takes it over).
func TestARetriedMoveAfterACrashBetweenChangeAndReplyMovesOnce(t *testing.T) {
	crash := &crashAfterChange{}
	c := redisCluster(t, crash)
	ctx := context.Background()
	if _, err := c.Control.RegisterSession(ctx, &satpagev1.RegisterSessionRequest{SessionId: "s",
		Visits: []*satpagev1.Visit{{Satellite: 0, StartNs: 0}, {Satellite: 1, StartNs: 100}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Gateway.WritePage(ctx, &satpagev1.WritePageRequest{SessionId: "s", Page: 3, Data: []byte("a"), ScenarioTimeNs: 10, RequestId: "w1"}); err != nil {
		t.Fatal(err)
	}
	crash.n.Store(1)
	req := &satpagev1.WritePageRequest{SessionId: "s", Page: 3, Data: []byte("b"), ScenarioTimeNs: 150, RequestId: "w2"}
	again, err := c.Gateway.WritePage(ctx, req)
	if err != nil || again.Outcome != satpagev1.Outcome_OUTCOME_MOVED || again.Hops != 1 || again.Satellite != 1 {
		t.Fatalf("the gateway's retry of the attempt that crashed: got %v, %v, want the first attempt's answer (moved 1 hop to satellite 1)", again, err)
	}
	if crash.n.Load() != 0 {
		t.Fatalf("the injected crash did not happen (%d calls to go)", crash.n.Load())
	}
	st, err := c.Control.SessionStats(ctx, &satpagev1.SessionStatsRequest{SessionId: "s", ScenarioTimeNs: 150})
	if err != nil {
		t.Fatal(err)
	}
	if st.OndemandMoves != 1 || st.OndemandHops != 1 {
		t.Errorf("movements counted: %d (%d hops), want 1 (1 hop)", st.OndemandMoves, st.OndemandHops)
	}
	r, err := c.Gateway.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: "s", Page: 3, ScenarioTimeNs: 160})
	if err != nil || string(r.Data) != "b" || r.Outcome != satpagev1.Outcome_OUTCOME_LOCAL {
		t.Errorf("read after the retry: got %v, %v, want b, local", r, err)
	}
	owners, err := c.Stores[1].Owners(ctx, "s", []uint32{3})
	if err != nil || owners[3] != 1 {
		t.Errorf("page table at 1: got %v, %v, want page 3 owned by 1", owners, err)
	}
}

// A proactive move of 600 pages (3 chunks) cut off after its second chunk is
// finished by the retry, which moves only the third and answers the whole
// move once; a further retry answers the same.
func TestARetriedMovePagesCutOffMidwayMovesEveryPageOnce(t *testing.T) {
	crash := &crashAfterChange{}
	c := redisCluster(t, crash)
	ctx := context.Background()
	p0, s0 := c.Satellite(t, 0)
	if _, err := s0.OpenSession(ctx, &satpagev1.OpenSessionRequest{SessionId: "s"}); err != nil {
		t.Fatal(err)
	}
	pages := make([]uint32, 600)
	for i := range pages {
		pages[i] = uint32(i)
	}
	if _, err := p0.ReadPages(ctx, &satpagev1.ReadPagesRequest{SessionId: "s", Pages: pages, ScenarioTimeNs: make([]int64, len(pages))}); err != nil {
		t.Fatal(err)
	}
	if _, err := s0.HandOver(ctx, &satpagev1.HandOverRequest{SessionId: "s", ToSatellite: 1}); err != nil {
		t.Fatal(err)
	}
	_, s1 := c.Satellite(t, 1)
	crash.n.Store(2)
	req := &satpagev1.MovePagesRequest{SessionId: "s", ScenarioTimeNs: 5, RequestId: "m1"}
	if _, err := s1.MovePages(ctx, req); status.Code(err) != codes.Unavailable {
		t.Fatalf("the attempt cut off: got %v, want Unavailable", err)
	}
	if n, _ := c.Stores[1].CountFrames(ctx, "s"); n != 512 {
		t.Fatalf("frames at 1 after the cut-off attempt: %d, want 512 (two chunks)", n)
	}
	for attempt := range 2 {
		m, err := s1.MovePages(ctx, req)
		if err != nil || m.Moved != 600 || m.PageHops != 600 {
			t.Fatalf("retry %d: got %v, %v, want 600 pages, 600 page-hops", attempt, m, err)
		}
	}
	if n, _ := c.Stores[1].CountFrames(ctx, "s"); n != 600 {
		t.Errorf("frames at 1: %d, want 600", n)
	}
	owners, err := c.Stores[1].Owners(ctx, "s", pages)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pages {
		if owners[p] != 1 {
			t.Fatalf("page %d owned by %d, want 1", p, owners[p])
		}
	}
}

// A client that sends a request again after it was answered (its reply lost
// on the way back, say) gets the satellite's kept answer, and the gateway
// counts the movement once: SessionStats matches what the satellites did.
func TestARequestSentAgainAfterItsAnswerIsCountedOnce(t *testing.T) {
	c := clustertest.New(t, "walker-star:4/1/0:500:87", clustertest.Options{})
	ctx := context.Background()
	if _, err := c.Control.RegisterSession(ctx, &satpagev1.RegisterSessionRequest{SessionId: "s",
		Visits: []*satpagev1.Visit{{Satellite: 0, StartNs: 0}, {Satellite: 1, StartNs: 100}}}); err != nil {
		t.Fatal(err)
	}
	// Pages 1, 2 and 3 created at 0; at 1 each is moved by one request, each sent twice.
	if _, err := c.Gateway.ReadPages(ctx, &satpagev1.ReadPagesRequest{SessionId: "s", Pages: []uint32{1, 2, 3},
		ScenarioTimeNs: []int64{10, 10, 10}, RequestId: "create"}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		w, err := c.Gateway.WritePage(ctx, &satpagev1.WritePageRequest{SessionId: "s", Page: 3, Data: []byte("b"),
			ScenarioTimeNs: 150, RequestId: "w"})
		if err != nil || w.Outcome != satpagev1.Outcome_OUTCOME_MOVED || w.Hops != 1 {
			t.Fatalf("write: got %v, %v, want moved 1 hop (the first answer, also when sent again)", w, err)
		}
		r, err := c.Gateway.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: "s", Page: 2, ScenarioTimeNs: 150, RequestId: "r"})
		if err != nil || r.Outcome != satpagev1.Outcome_OUTCOME_MOVED || r.Hops != 1 {
			t.Fatalf("read: got %v, %v, want moved 1 hop", r, err)
		}
		rs, err := c.Gateway.ReadPages(ctx, &satpagev1.ReadPagesRequest{SessionId: "s", Pages: []uint32{1},
			ScenarioTimeNs: []int64{150}, RequestId: "rs"})
		if err != nil || len(rs.Results) != 1 || rs.Results[0].Outcome != satpagev1.Outcome_OUTCOME_MOVED {
			t.Fatalf("batch: got %v, %v, want one access, moved", rs, err)
		}
	}
	// A request without an id acts at every send: a local read, counted twice.
	for range 2 {
		if _, err := c.Gateway.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: "s", Page: 3, ScenarioTimeNs: 160}); err != nil {
			t.Fatal(err)
		}
	}
	st, err := c.Control.SessionStats(ctx, &satpagev1.SessionStatsRequest{SessionId: "s", ScenarioTimeNs: 160})
	if err != nil {
		t.Fatal(err)
	}
	if st.Accesses != 3+3+2 || st.Created != 3 || st.OndemandMoves != 3 || st.OndemandHops != 3 {
		t.Errorf("counted %d accesses, %d created, %d moves (%d hops); want 8, 3, 3 (3)",
			st.Accesses, st.Created, st.OndemandMoves, st.OndemandHops)
	}
}
