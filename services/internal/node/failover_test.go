package node_test

import (
	"context"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/clustertest"
)

// A dead serving satellite's session is taken over by the satellite behind
// it (its replica): every page it owned is served there, locally; a retried
// request is answered as before the death; the dead satellite, restarted
// from its copy, no longer serves the session.
func TestASessionWhoseServingSatelliteDiedIsTakenOverByItsReplica(t *testing.T) {
	c := clustertest.New(t, faultSpec, clustertest.Options{Replicas: 2})
	ctx := context.Background()
	want := writeAt(t, c, "s", 7, 30)
	p7, _ := c.Satellite(t, 7)
	first, err := p7.WritePage(ctx, &satpagev1.WritePageRequest{SessionId: "s", Page: 2, Data: []byte("w1"), RequestId: "w1"})
	if err != nil {
		t.Fatal(err)
	}
	want[2] = "w1"
	_, s6 := c.Satellite(t, 6)
	if _, err := s6.TakeOver(ctx, &satpagev1.TakeOverRequest{SessionId: "s", Failed: 7}); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("take over from a live satellite: got %v, want FailedPrecondition", err)
	}
	c.Kill(7)
	r, err := s6.TakeOver(ctx, &satpagev1.TakeOverRequest{SessionId: "s", Failed: 7})
	if err != nil || r.TablePages != 30 || r.PagesAdopted != 30 || r.CopyAt != 6 {
		t.Fatalf("TakeOver at 6: got %v, %v, want 30 entries, 30 pages adopted from 6's own copy", r, err)
	}
	p6, _ := c.Satellite(t, 6)
	again, err := p6.WritePage(ctx, &satpagev1.WritePageRequest{SessionId: "s", Page: 2, Data: []byte("w1"), RequestId: "w1"})
	if err != nil || again.Satellite != first.Satellite || again.Outcome != first.Outcome {
		t.Errorf("retry of w1 at the new server: got %v, %v, want the first answer %v", again, err, first)
	}
	for p := range uint32(len(want)) {
		a, err := p6.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: "s", Page: p})
		if err != nil || string(a.Data) != want[p] || a.Outcome != satpagev1.Outcome_OUTCOME_LOCAL {
			t.Fatalf("page %d at 6: got %v, %v, want %q, local", p, a, err, want[p])
		}
	}
	// A retried takeover changes nothing.
	if r, err := s6.TakeOver(ctx, &satpagev1.TakeOverRequest{SessionId: "s", Failed: 7}); err != nil || r.TablePages != 30 || r.PagesAdopted != 0 {
		t.Errorf("retried TakeOver: got %v, %v, want the table held, nothing adopted", r, err)
	}
	c.Restart(t, 7)
	_, s7 := c.Satellite(t, 7)
	f, err := s7.SessionFrames(ctx, &satpagev1.SessionFramesRequest{SessionId: "s"})
	if err != nil || f.Serving {
		t.Errorf("the restarted satellite: got %v, %v, want it not serving the session taken over", f, err)
	}
	// The session goes on from 6: a handover from it, and the pages follow.
	if _, err := s6.HandOver(ctx, &satpagev1.HandOverRequest{SessionId: "s", ToSatellite: 5}); err != nil {
		t.Fatal(err)
	}
	readAll(t, c, "s", 5, want)
}

func TestWithOneReplicaNoSessionIsTakenOver(t *testing.T) {
	c := clustertest.New(t, faultSpec, clustertest.Options{Replicas: 1})
	writeAt(t, c, "s", 7, 3)
	c.Kill(7)
	_, s6 := c.Satellite(t, 6)
	_, err := s6.TakeOver(context.Background(), &satpagev1.TakeOverRequest{SessionId: "s", Failed: 7})
	if status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("TakeOver with R = 1: got %v, want FailedPrecondition", err)
	}
}
