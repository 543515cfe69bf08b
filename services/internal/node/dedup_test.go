package node_test

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/clustertest"
)

// A retried request (same request_id) gets the first answer and acts once: a
// write retried after a newer one does not undo it, and a read retried after
// its move reports the move again instead of moving or counting twice.
func TestARetriedRequestActsOnce(t *testing.T) {
	c := clustertest.New(t, faultSpec, clustertest.Options{Replicas: 2})
	ctx := context.Background()
	writeAt(t, c, "s", 5, 1) // page 0 at 5
	_, sc5 := c.Satellite(t, 5)
	if _, err := sc5.HandOver(ctx, &satpagev1.HandOverRequest{SessionId: "s", ToSatellite: 6}); err != nil {
		t.Fatal(err)
	}
	pc, _ := c.Satellite(t, 6)
	first, err := pc.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: "s", Page: 0, RequestId: "r1"})
	if err != nil || first.Outcome != satpagev1.Outcome_OUTCOME_MOVED || first.Hops != 1 {
		t.Fatalf("first read: %v, %v; want the page moved 1 hop", first, err)
	}
	again, err := pc.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: "s", Page: 0, RequestId: "r1"})
	if err != nil || again.Outcome != satpagev1.Outcome_OUTCOME_MOVED || again.Hops != 1 || string(again.Data) != string(first.Data) {
		t.Errorf("retried read: %v, %v; want the first answer %v", again, err, first)
	}
	if got := testutil.ToFloat64(c.Metrics[6].Accesses.WithLabelValues("moved")); got != 1 {
		t.Errorf("moves counted at 6: %v, want 1", got)
	}
	if _, err := pc.WritePage(ctx, &satpagev1.WritePageRequest{SessionId: "s", Page: 0, Data: []byte("a"), RequestId: "w1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := pc.WritePage(ctx, &satpagev1.WritePageRequest{SessionId: "s", Page: 0, Data: []byte("b"), RequestId: "w2"}); err != nil {
		t.Fatal(err)
	}
	if _, err := pc.WritePage(ctx, &satpagev1.WritePageRequest{SessionId: "s", Page: 0, Data: []byte("a"), RequestId: "w1"}); err != nil {
		t.Fatal(err)
	}
	r, err := pc.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: "s", Page: 0})
	if err != nil || string(r.Data) != "b" {
		t.Errorf("after retrying the older write: %q, %v; want the newer b", r.GetData(), err)
	}
	// The answers are replicated with the changes: after the serving satellite
	// restarts empty, the retry is still recognised.
	c.Kill(6)
	c.Restart(t, 6)
	pc, _ = c.Satellite(t, 6)
	if _, err := pc.WritePage(ctx, &satpagev1.WritePageRequest{SessionId: "s", Page: 0, Data: []byte("a"), RequestId: "w1"}); err != nil {
		t.Fatal(err)
	}
	r, err = pc.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: "s", Page: 0})
	if err != nil || string(r.Data) != "b" {
		t.Errorf("after a restart and the retry: %q, %v; want b", r.GetData(), err)
	}
	// The kept answers do not count as the session's frames.
	_, sc6 := c.Satellite(t, 6)
	f, err := sc6.SessionFrames(ctx, &satpagev1.SessionFramesRequest{SessionId: "s"})
	if err != nil || f.Frames != 1 || f.TablePages != 1 {
		t.Errorf("SessionFrames at 6: %v, %v; want 1 frame, 1 table entry", f, err)
	}
}
