package node_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/clustertest"
)

const defaultSpec = "walker-star:150/10/1:500:87"

// placePage opens session at owner, writes page there, and hands the table to requester.
func placePage(t *testing.T, c *clustertest.Cluster, session string, owner, requester int, data []byte) {
	t.Helper()
	ctx := context.Background()
	op, os := c.Satellite(t, owner)
	if _, err := os.OpenSession(ctx, &satpagev1.OpenSessionRequest{SessionId: session}); err != nil {
		t.Fatal(err)
	}
	w, err := op.WritePage(ctx, &satpagev1.WritePageRequest{SessionId: session, Page: 7, Data: data})
	if err != nil || w.Outcome != satpagev1.Outcome_OUTCOME_CREATED {
		t.Fatalf("WritePage: got %v, %v, want CREATED", w, err)
	}
	if _, err := os.HandOver(ctx, &satpagev1.HandOverRequest{SessionId: session, ToSatellite: uint32(requester)}); err != nil {
		t.Fatal(err)
	}
}

func relayed(c *clustertest.Cluster, rpc string) float64 {
	sum := 0.0
	for _, m := range c.Metrics {
		sum += testutil.ToFloat64(m.RelayedHops.WithLabelValues(rpc))
	}
	return sum
}

// unavailableWhile is a clustertest.Inject fault: Unavailable while *on is true.
func unavailableWhile(on *bool) func(context.Context) error {
	return func(context.Context) error {
		if *on {
			return status.Error(codes.Unavailable, "injected failure")
		}
		return nil
	}
}

func TestConcurrentSessionsDoNotDisturbEachOther(t *testing.T) {
	c := clustertest.New(t, "walker-star:30/2/1:500:87", clustertest.Options{})
	ctx := context.Background()
	errc := make(chan error, 8)
	for w := range 8 {
		go func() {
			session := fmt.Sprint("w", w)
			p, s := c.Satellite(t, w)
			if _, err := s.OpenSession(ctx, &satpagev1.OpenSessionRequest{SessionId: session}); err != nil {
				errc <- err
				return
			}
			for pg := range uint32(50) {
				if _, err := p.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: session, Page: pg}); err != nil {
					errc <- err
					return
				}
			}
			if _, err := s.HandOver(ctx, &satpagev1.HandOverRequest{SessionId: session, ToSatellite: uint32(w + 10)}); err != nil {
				errc <- err
				return
			}
			p2, _ := c.Satellite(t, w+10)
			r, err := p2.ReadPages(ctx, &satpagev1.ReadPagesRequest{SessionId: session, Pages: []uint32{1, 2, 3}, ScenarioTimeNs: []int64{0, 0, 0}})
			want, _ := c.Grid.Hops(uint32(w), uint32(w+10), 0)
			if err == nil && (len(r.Results) != 3 || r.Results[2].Hops != uint32(want)) {
				err = fmt.Errorf("session %s: got %v, want 3 moves of %d hops", session, r, want)
			}
			errc <- err
		}()
	}
	for range 8 {
		if err := <-errc; err != nil {
			t.Error(err)
		}
	}
}
