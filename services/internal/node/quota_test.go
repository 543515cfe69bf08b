package node_test

import (
	"bytes"
	"context"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/clustertest"
	"github.com/satpage/satpage/services/internal/store"
	"github.com/satpage/satpage/services/internal/storetest"
)

// The flood, through the gateway: one session writes pages until its
// satellite's Redis (64 MB, noeviction, quota 0.8) refuses new frames; a
// bystander's new page is refused too, but the flood session can be ended,
// and then everyone writes again, and a session can still be handed over
// into the full satellite.
func TestAFloodCannotFillASatelliteSoFarThatSessionsCannotBeEnded(t *testing.T) {
	c := clustertest.New(t, "walker-star:8/2/0:500:87", clustertest.Options{Store: func(t testing.TB, i int) store.PageStore {
		if i != 0 {
			return store.NewMemory()
		}
		r, err := store.NewRedis(context.Background(), storetest.RedisServer(t))
		if err != nil {
			t.Fatal(err)
		}
		return store.Stack(r, 0.8, 16<<20)
	}})
	ctx := context.Background()
	reg := func(id string, visits ...*satpagev1.Visit) {
		if _, err := c.Control.RegisterSession(ctx, &satpagev1.RegisterSessionRequest{SessionId: id, Visits: visits}); err != nil {
			t.Fatal(err)
		}
	}
	reg("flood", &satpagev1.Visit{Satellite: 0})
	reg("bystander", &satpagev1.Visit{Satellite: 0})
	reg("arriving", &satpagev1.Visit{Satellite: 1}, &satpagev1.Visit{Satellite: 0, StartNs: 100})
	data := bytes.Repeat([]byte{1}, 4096)
	if _, err := c.Gateway.WritePage(ctx, &satpagev1.WritePageRequest{SessionId: "arriving", Page: 0, Data: data}); err != nil {
		t.Fatal(err)
	}
	var err error
	written := 0
	for p := range uint32(40_000) { // 160 MB: far beyond the 64 MB
		if _, err = c.Gateway.WritePage(ctx, &satpagev1.WritePageRequest{SessionId: "flood", Page: p, Data: data}); err != nil {
			break
		}
		written++
	}
	if status.Code(err) != codes.ResourceExhausted || written < 5000 {
		t.Fatalf("flood: got %v after %d pages, want ResourceExhausted after thousands", err, written)
	}
	_, err = c.Gateway.WritePage(ctx, &satpagev1.WritePageRequest{SessionId: "bystander", Page: 0, Data: data})
	if status.Code(err) != codes.ResourceExhausted {
		t.Errorf("bystander's new page while full: got %v, want ResourceExhausted", err)
	}
	// A handover into the full satellite moves the table (on demand: no frames).
	if _, err := c.Gateway.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: "arriving", Page: 1, ScenarioTimeNs: 100}); status.Code(err) != codes.ResourceExhausted && err != nil {
		t.Errorf("handover into the full satellite: got %v, want it done (a new page may be refused)", err)
	}
	end, err := c.Gateway.EndSession(ctx, &satpagev1.EndSessionRequest{SessionId: "flood"})
	if err != nil || int(end.PagesDeleted) != written {
		t.Fatalf("ending the flood: got %v, %v; want %d pages deleted", end, err, written)
	}
	for p := range uint32(50) { // room again at once
		if _, err := c.Gateway.WritePage(ctx, &satpagev1.WritePageRequest{SessionId: "bystander", Page: p, Data: data}); err != nil {
			t.Fatalf("bystander after the flood ended: page %d: %v", p, err)
		}
	}
}
