package node_test

import (
	"bytes"
	"context"
	"slices"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/clustertest"
	"github.com/satpage/satpage/services/internal/store"
	"github.com/satpage/satpage/services/internal/storetest"
)

// The staged push-ahead (docs/live.md) on real Redis stores: satellite 0 serves,
// copies its pages ahead to satellite 2 (two hops along the plane), keeps
// serving them as hits, a page is written after the copy, then the handover:
// 2 claims the copies still valid in place, the written page and one created
// after the copy move, and every page reads back with its newest bytes.
func TestCopyAheadThenClaimKeepsEveryPageAndMovesOnlyWhatChanged(t *testing.T) {
	c := clustertest.New(t, "walker-star:8/2/0:500:87", clustertest.Options{Store: func(t testing.TB, i int) store.PageStore {
		if i != 0 && i != 2 {
			return store.NewMemory()
		}
		r, err := store.NewRedis(context.Background(), storetest.RedisServer(t))
		if err != nil {
			t.Fatal(err)
		}
		return store.Stack(r, 0.8, 16<<20) // as a satnode builds it
	}})
	ctx := context.Background()
	const id = "live.pa.1.2.staged"
	p0, s0 := c.Satellite(t, 0)
	p2, s2 := c.Satellite(t, 2)
	if _, err := s0.OpenSession(ctx, &satpagev1.OpenSessionRequest{SessionId: id}); err != nil {
		t.Fatal(err)
	}
	data := func(p uint32, v byte) []byte { return bytes.Repeat([]byte{byte(p), v}, 512) }
	for p := range uint32(4) {
		if _, err := p0.WritePage(ctx, &satpagev1.WritePageRequest{SessionId: id, Page: p, Data: data(p, 1), ScenarioTimeNs: 10}); err != nil {
			t.Fatal(err)
		}
	}

	// The copy at 70 (page 9 was never created: skipped).
	cp, err := s0.CopyAhead(ctx, &satpagev1.CopyAheadRequest{SessionId: id, ToSatellite: 2, ScenarioTimeNs: 70, Pages: []uint32{3, 0, 1, 2, 9}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []uint32{0, 1, 2, 3}; !slices.Equal(cp.Copied, want) || cp.PageHops != 4*2 {
		t.Fatalf("CopyAhead: got %v and %d page-hops, want %v and 8 (two hops each)", cp.Copied, cp.PageHops, want)
	}
	f2, err := s2.SessionFrames(ctx, &satpagev1.SessionFramesRequest{SessionId: id})
	if err != nil || f2.Frames != 4 || f2.Serving {
		t.Fatalf("satellite 2 after the copy: got %v, %v, want 4 frames and no table", f2, err)
	}
	// Until the handover the pages stay satellite 0's: a read is a hit there.
	r, err := p0.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: id, Page: 0, ScenarioTimeNs: 75})
	if err != nil || r.Outcome != satpagev1.Outcome_OUTCOME_LOCAL {
		t.Fatalf("read in the window: got %v, %v, want LOCAL", r, err)
	}
	// Written after the copy (the gateway marks it dirty), and one page new since.
	if _, err := p0.WritePage(ctx, &satpagev1.WritePageRequest{SessionId: id, Page: 1, Data: data(1, 2), ScenarioTimeNs: 80}); err != nil {
		t.Fatal(err)
	}
	if _, err := p0.WritePage(ctx, &satpagev1.WritePageRequest{SessionId: id, Page: 4, Data: data(4, 1), ScenarioTimeNs: 85}); err != nil {
		t.Fatal(err)
	}

	h, err := s0.HandOver(ctx, &satpagev1.HandOverRequest{SessionId: id, ToSatellite: 2, ScenarioTimeNs: 100})
	if err != nil || h.Hops != 2 {
		t.Fatalf("HandOver: got %v, %v, want two hops", h, err)
	}
	// Page 4 is named too although nothing was staged for it: it is moved instead.
	cl, err := s2.ClaimPages(ctx, &satpagev1.ClaimPagesRequest{SessionId: id, FromSatellite: 0, ScenarioTimeNs: 100, Pages: []uint32{0, 2, 3, 4}})
	if err != nil || cl.Claimed != 3 || cl.Moved != 1 || cl.PageHops != 2 {
		t.Fatalf("ClaimPages: got %v, %v, want 3 claimed, 1 moved over 2 hops", cl, err)
	}
	mv, err := s2.MovePages(ctx, &satpagev1.MovePagesRequest{SessionId: id, ScenarioTimeNs: 100, Pages: []uint32{1}})
	if err != nil || mv.Moved != 1 || mv.PageHops != 2 {
		t.Fatalf("MovePages of the written page: got %v, %v, want 1 moved over 2 hops", mv, err)
	}
	for p := range uint32(5) {
		want := data(p, 1)
		if p == 1 {
			want = data(1, 2) // the write after the copy, not the stale copy
		}
		r, err := p2.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: id, Page: p, ScenarioTimeNs: 110})
		if err != nil || r.Outcome != satpagev1.Outcome_OUTCOME_LOCAL || !bytes.Equal(r.Data, want) {
			t.Fatalf("page %d at satellite 2: got %v, %v, want LOCAL with its newest bytes", p, r, err)
		}
	}
	f0, err := s0.SessionFrames(ctx, &satpagev1.SessionFramesRequest{SessionId: id})
	if err != nil || f0.Frames != 0 {
		t.Fatalf("satellite 0 after the claim: got %v, %v, want every frame released", f0, err)
	}
	f2, err = s2.SessionFrames(ctx, &satpagev1.SessionFramesRequest{SessionId: id})
	if err != nil || f2.Frames != 5 || !f2.Serving || f2.TablePages != 5 {
		t.Fatalf("satellite 2 after the claim: got %v, %v, want 5 frames and a table of 5", f2, err)
	}
}

func TestCopyAheadAndClaimRefuseBadRequests(t *testing.T) {
	c := clustertest.New(t, "walker-star:8/2/0:500:87", clustertest.Options{})
	ctx := context.Background()
	_, s0 := c.Satellite(t, 0)
	if _, err := s0.OpenSession(ctx, &satpagev1.OpenSessionRequest{SessionId: "s"}); err != nil {
		t.Fatal(err)
	}
	want := map[string]codes.Code{"copy to satellite 99": codes.OutOfRange} // as HandOver's to_satellite
	for name, call := range map[string]func() error{
		"copy to itself": func() error {
			_, err := s0.CopyAhead(ctx, &satpagev1.CopyAheadRequest{SessionId: "s", ToSatellite: 0, Pages: []uint32{1}})
			return err
		},
		"copy to satellite 99": func() error {
			_, err := s0.CopyAhead(ctx, &satpagev1.CopyAheadRequest{SessionId: "s", ToSatellite: 99, Pages: []uint32{1}})
			return err
		},
		"copy of no page": func() error {
			_, err := s0.CopyAhead(ctx, &satpagev1.CopyAheadRequest{SessionId: "s", ToSatellite: 1})
			return err
		},
		"claim from itself": func() error {
			_, err := s0.ClaimPages(ctx, &satpagev1.ClaimPagesRequest{SessionId: "s", FromSatellite: 0, Pages: []uint32{1}})
			return err
		},
	} {
		code, ok := want[name]
		if !ok {
			code = codes.InvalidArgument
		}
		if err := call(); status.Code(err) != code {
			t.Errorf("%s: got %v, want %v", name, err, code)
		}
	}
}
