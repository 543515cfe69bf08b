package node_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/clustertest"
	"github.com/satpage/satpage/services/internal/errs"
)

// A relay that dies with a fetch in flight (here: answers Unavailable once) costs
// the origin one more attempt over the whole path, not the fault; the hops the
// client sees are those of the attempt that arrived.
func TestAFetchLostAtARelayIsSentAgainByTheOrigin(t *testing.T) {
	var mu sync.Mutex
	failures := 1
	c := clustertest.New(t, defaultSpec, clustertest.Options{
		// Satellite 1 is the relay between 0 and 2.
		Interceptor: clustertest.Inject(1, "FetchPages", func(context.Context) error {
			mu.Lock()
			defer mu.Unlock()
			if failures == 0 {
				return nil
			}
			failures--
			return status.Error(codes.Unavailable, "connection reset by peer (injected)")
		})})
	placePage(t, c, "s", 0, 2, []byte("payload"))
	before := testutil.ToFloat64(c.Metrics[2].RelayedHops.WithLabelValues("FetchPages"))
	rp, _ := c.Satellite(t, 2)
	r, err := rp.ReadPage(context.Background(), &satpagev1.ReadPageRequest{SessionId: "s", Page: 7})
	if err != nil || string(r.Data) != "payload" || r.Hops != 2 || r.Outcome != satpagev1.Outcome_OUTCOME_MOVED {
		t.Fatalf("got %v, %v, want the page moved over 2 hops", r, err)
	}
	if got := testutil.ToFloat64(c.Metrics[2].RelayedHops.WithLabelValues("FetchPages")) - before; got != 2 {
		t.Errorf("fetch attempts sent by the origin: got %v, want 2", got)
	}
}

// A relay that finds no route answers Unavailable like a dead peer, but the
// route of a scenario time cannot change: the origin does not send it again.
func TestNoRouteAtARelayIsNotSentAgain(t *testing.T) {
	c := clustertest.New(t, defaultSpec, clustertest.Options{
		// Satellite 1 is the relay between 0 and 2.
		Interceptor: clustertest.Inject(1, "FetchPages", func(context.Context) error {
			return errs.Status(fmt.Errorf("from satellite 1 to 0 at 0 ns (injected): %w", errs.ErrNoRoute))
		})})
	placePage(t, c, "s", 0, 2, []byte("payload"))
	before := testutil.ToFloat64(c.Metrics[2].RelayedHops.WithLabelValues("FetchPages"))
	rp, _ := c.Satellite(t, 2)
	_, err := rp.ReadPage(context.Background(), &satpagev1.ReadPageRequest{SessionId: "s", Page: 7})
	if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "no ISL route") {
		t.Fatalf("got %v, want Unavailable naming the missing route", err)
	}
	if got := testutil.ToFloat64(c.Metrics[2].RelayedHops.WithLabelValues("FetchPages")) - before; got != 1 {
		t.Errorf("fetch attempts sent by the origin: got %v, want 1", got)
	}
	if n, _ := c.Stores[0].CountFrames(context.Background(), "s"); n != 1 {
		t.Errorf("frames at the owner: got %d, want 1", n)
	}
}
