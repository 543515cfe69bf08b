package node_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/clustertest"
	"github.com/satpage/satpage/services/internal/errs"
	"github.com/satpage/satpage/services/internal/store"
)

func TestProactiveMovesBringEveryPageToTheServingSatellite(t *testing.T) {
	c := clustertest.New(t, "walker-star:30/2/1:500:87", clustertest.Options{})
	ctx := context.Background()
	p0, s0 := c.Satellite(t, 0)
	if _, err := s0.OpenSession(ctx, &satpagev1.OpenSessionRequest{SessionId: "s"}); err != nil {
		t.Fatal(err)
	}
	for pg := range uint32(300) {
		if _, err := p0.WritePage(ctx, &satpagev1.WritePageRequest{SessionId: "s", Page: pg, Data: []byte(fmt.Sprint(pg))}); err != nil {
			t.Fatal(err)
		}
	}
	h, err := s0.HandOver(ctx, &satpagev1.HandOverRequest{SessionId: "s", ToSatellite: 17})
	if err != nil || h.TablePages != 300 || h.Hops != 3 {
		t.Fatalf("HandOver: got %v, %v, want 300 pages over 3 hops", h, err)
	}
	if _, err := c.Stores[0].GetTable(ctx, "s"); !errors.Is(err, errs.ErrUnknownSession) {
		t.Errorf("table at the old satellite: got %v, want none", err)
	}
	_, s17 := c.Satellite(t, 17)
	m, err := s17.MovePages(ctx, &satpagev1.MovePagesRequest{SessionId: "s"})
	if err != nil || m.Moved != 300 || m.PageHops != 900 {
		t.Fatalf("MovePages: got %v, %v, want 300 pages, 900 page-hops", m, err)
	}
	got, err := c.Stores[17].GetFrames(ctx, "s", []uint32{0, 299})
	if err != nil || string(got[1].Data) != "299" {
		t.Errorf("frames at the new satellite: got %v, %v", got, err)
	}
	if n, _ := c.Stores[0].CountFrames(ctx, "s"); n != 0 {
		t.Errorf("frames left behind: got %d, want 0", n)
	}
	p17, _ := c.Satellite(t, 17)
	e, err := p17.EndSession(ctx, &satpagev1.EndSessionRequest{SessionId: "s"})
	if err != nil || e.PagesDeleted != 300 {
		t.Errorf("EndSession: got %v, %v, want 300 deleted", e, err)
	}
}

func TestMovePagesWithAPageListMovesOnlyThosePages(t *testing.T) {
	c := clustertest.New(t, "walker-star:30/2/1:500:87", clustertest.Options{})
	ctx := context.Background()
	p0, s0 := c.Satellite(t, 0)
	if _, err := s0.OpenSession(ctx, &satpagev1.OpenSessionRequest{SessionId: "s"}); err != nil {
		t.Fatal(err)
	}
	for pg := range uint32(10) {
		if _, err := p0.WritePage(ctx, &satpagev1.WritePageRequest{SessionId: "s", Page: pg, Data: []byte{byte(pg)}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s0.HandOver(ctx, &satpagev1.HandOverRequest{SessionId: "s", ToSatellite: 17}); err != nil {
		t.Fatal(err)
	}
	_, s17 := c.Satellite(t, 17)
	// 2 and 5 twice, 99 never written: two pages move, three hops each
	m, err := s17.MovePages(ctx, &satpagev1.MovePagesRequest{SessionId: "s", Pages: []uint32{5, 2, 99, 5}})
	if err != nil || m.Moved != 2 || m.PageHops != 6 {
		t.Fatalf("MovePages of [5 2 99 5]: got %v, %v, want 2 pages, 6 page-hops", m, err)
	}
	if _, err := s17.SessionFrames(ctx, &satpagev1.SessionFramesRequest{SessionId: "s"}); err != nil { // flushes the releases
		t.Fatal(err)
	}
	if n, _ := c.Stores[17].CountFrames(ctx, "s"); n != 2 {
		t.Errorf("frames at the new satellite: got %d, want 2", n)
	}
	if n, _ := c.Stores[0].CountFrames(ctx, "s"); n != 8 {
		t.Errorf("frames left at the old satellite: got %d, want 8", n)
	}
}

// failDeleteTable is a memory store whose next `fails` DeleteTable calls fail
// as an unreachable Redis would.
type failDeleteTable struct {
	*store.Memory
	fails atomic.Int32
}

func (f *failDeleteTable) DeleteTable(ctx context.Context, session string) error {
	if f.fails.Add(-1) >= 0 {
		return fmt.Errorf("delete table of %q (injected): %w", session, errs.ErrUnavailable)
	}
	return f.Memory.DeleteTable(ctx, session)
}

// staleAfterHandover opens session "s" at satellite 0, writes page 7 there and
// hands the session to 3 while 0's store fails the delete of its table once.
func staleAfterHandover(t *testing.T) *clustertest.Cluster {
	t.Helper()
	flaky := &failDeleteTable{Memory: store.NewMemory()}
	flaky.fails.Store(1)
	c := clustertest.New(t, "walker-star:30/2/1:500:87", clustertest.Options{
		Store: func(_ testing.TB, i int) store.PageStore {
			if i == 0 {
				return flaky
			}
			return store.NewMemory()
		}})
	placePage(t, c, "s", 0, 3, []byte("payload"))
	if _, err := c.Stores[0].GetTable(context.Background(), "s"); err != nil {
		t.Fatalf("precondition: the old satellite's table should be left by the failed delete, got %v", err)
	}
	return c
}

// The old satellite never serves from a table it handed over: the session's
// next request there deletes it and finds none.
func TestAHandedOverTableWhoseDeleteFailedServesNothing(t *testing.T) {
	c := staleAfterHandover(t)
	ctx := context.Background()
	p0, _ := c.Satellite(t, 0)
	_, err := p0.WritePage(ctx, &satpagev1.WritePageRequest{SessionId: "s", Page: 7, Data: []byte("diverged")})
	if status.Code(err) != codes.NotFound {
		t.Errorf("write at the old satellite: got %v, want NotFound (no page table there)", err)
	}
	if _, err := c.Stores[0].GetTable(ctx, "s"); !errors.Is(err, errs.ErrUnknownSession) {
		t.Errorf("table at the old satellite: got %v, want none", err)
	}
	p3, _ := c.Satellite(t, 3)
	r, err := p3.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: "s", Page: 7})
	if err != nil || string(r.Data) != "payload" || r.PreviousOwner != 0 {
		t.Errorf("read at the serving satellite: got %v, %v, want the page written before the handover", r, err)
	}
}

// The new satellite's release reaches an old owner whose handed-over table is
// still there: the table goes, and so does the released copy (before, the old
// owner refused the release as if it still owned the page, and kept both).
func TestAReleaseClearsTheStaleTableAndTheCopyAtTheOldOwner(t *testing.T) {
	c := staleAfterHandover(t)
	ctx := context.Background()
	p3, s3 := c.Satellite(t, 3)
	if r, err := p3.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: "s", Page: 7}); err != nil || r.Outcome != satpagev1.Outcome_OUTCOME_MOVED {
		t.Fatalf("read at the new satellite: got %v, %v, want MOVED", r, err)
	}
	if _, err := s3.SessionFrames(ctx, &satpagev1.SessionFramesRequest{SessionId: "s"}); err != nil {
		t.Fatal(err) // sends the batched release to 0
	}
	if _, err := c.Stores[0].GetTable(ctx, "s"); !errors.Is(err, errs.ErrUnknownSession) {
		t.Errorf("table at the old satellite: got %v, want none", err)
	}
	if n, _ := c.Stores[0].CountFrames(ctx, "s"); n != 0 {
		t.Errorf("frames at the old satellite: got %d, want 0", n)
	}
	_, s0 := c.Satellite(t, 0)
	if f, err := s0.SessionFrames(ctx, &satpagev1.SessionFramesRequest{SessionId: "s"}); err != nil || f.Serving {
		t.Errorf("old satellite's report: got %v, %v, want not serving", f, err)
	}
}

// Ending the session sweeps the old satellite although its table delete failed
// (before, its DropSession was refused with FailedPrecondition and EndSession failed).
func TestEndingASessionClearsAStaleTableOnTheTrail(t *testing.T) {
	c := staleAfterHandover(t)
	ctx := context.Background()
	p3, _ := c.Satellite(t, 3)
	e, err := p3.EndSession(ctx, &satpagev1.EndSessionRequest{SessionId: "s"})
	if err != nil || e.PagesDeleted != 1 {
		t.Fatalf("EndSession: got %v, %v, want the page deleted at its owner", e, err)
	}
	for _, i := range []int{0, 3} {
		if _, err := c.Stores[i].GetTable(ctx, "s"); !errors.Is(err, errs.ErrUnknownSession) {
			t.Errorf("table at satellite %d: got %v, want none", i, err)
		}
		if n, _ := c.Stores[i].CountFrames(ctx, "s"); n != 0 {
			t.Errorf("frames at satellite %d: got %d, want 0", i, n)
		}
	}
}

// A handover sent on an out-of-date view of a session (a gateway that missed
// the handovers another one made) must not replace the newer table at its
// destination: the pages created under the newer table would be lost.
func TestAnOlderTableNeverReplacesANewerOne(t *testing.T) {
	c := clustertest.New(t, "walker-star:30/2/1:500:87", clustertest.Options{})
	ctx := context.Background()
	_, s0 := c.Satellite(t, 0)
	if _, err := s0.OpenSession(ctx, &satpagev1.OpenSessionRequest{SessionId: "s"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s0.HandOver(ctx, &satpagev1.HandOverRequest{SessionId: "s", ToSatellite: 1, ScenarioTimeNs: 10}); err != nil {
		t.Fatal(err)
	}
	p1, _ := c.Satellite(t, 1)
	if _, err := p1.WritePage(ctx, &satpagev1.WritePageRequest{SessionId: "s", Page: 2, Data: []byte("new"), ScenarioTimeNs: 11}); err != nil {
		t.Fatal(err)
	}
	// Satellite 3 holds an old table of the session (one restored there, say).
	if err := c.Stores[3].PutTable(ctx, "s", store.Table{}); err != nil {
		t.Fatal(err)
	}
	_, s3 := c.Satellite(t, 3)
	_, err := s3.HandOver(ctx, &satpagev1.HandOverRequest{SessionId: "s", ToSatellite: 1, ScenarioTimeNs: 5})
	if status.Code(err) != codes.FailedPrecondition || !errs.Has(err, errs.ErrStaleTable) {
		t.Fatalf("handover of an older table: got %v, want FailedPrecondition STALE_TABLE", err)
	}
	if _, err := c.Stores[3].GetTable(ctx, "s"); err != nil {
		t.Errorf("the refused sender's table: got %v, want it kept (nothing deleted on a refusal)", err)
	}
	// The same version again is a retried handover: acknowledged, the table
	// at 1 kept as it is now.
	if _, err := s3.HandOver(ctx, &satpagev1.HandOverRequest{SessionId: "s", ToSatellite: 1, ScenarioTimeNs: 10}); err != nil {
		t.Fatalf("a retried handover (same version): %v", err)
	}
	r, err := p1.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: "s", Page: 2, ScenarioTimeNs: 12})
	if err != nil || string(r.Data) != "new" || r.Outcome == satpagev1.Outcome_OUTCOME_CREATED {
		t.Fatalf("page 2 at the serving satellite: got %v, %v, want the write kept", r, err)
	}
	// A newer one replaces it (the session's next visit there).
	_, s1 := c.Satellite(t, 1)
	if _, err := s1.HandOver(ctx, &satpagev1.HandOverRequest{SessionId: "s", ToSatellite: 2, ScenarioTimeNs: 20}); err != nil {
		t.Fatal(err)
	}
	_, s2 := c.Satellite(t, 2)
	if _, err := s2.HandOver(ctx, &satpagev1.HandOverRequest{SessionId: "s", ToSatellite: 1, ScenarioTimeNs: 30}); err != nil {
		t.Fatalf("handover back at a newer version: %v", err)
	}
	if tb, err := c.Stores[1].GetTable(ctx, "s"); err != nil || tb[2] != 1 {
		t.Errorf("table at 1 after the newer handover: got %v, %v, want page 2 owned by 1", tb, err)
	}
}
