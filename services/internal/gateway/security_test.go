package gateway_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/clustertest"
	"github.com/satpage/satpage/services/internal/errs"
	"github.com/satpage/satpage/services/internal/gateway"
)

func TestIdleSessionsAreEndedAndTheirFramesFreed(t *testing.T) {
	c := clustertest.New(t, "walker-star:8/2/0:500:87", clustertest.Options{})
	pool := c.Pool()
	defer pool.Close()
	g, err := gateway.New(gateway.Options{Grid: c.Grid, Peers: pool, SessionIdle: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, id := range []string{"idle", "busy"} {
		if err := g.RegisterSession(ctx, &satpagev1.RegisterSessionRequest{SessionId: id,
			Visits: []*satpagev1.Visit{{Satellite: 0}, {Satellite: 1, StartNs: 10}}}); err != nil {
			t.Fatal(err)
		}
		for p := range uint32(5) {
			if _, err := g.WritePage(ctx, &satpagev1.WritePageRequest{SessionId: id, Page: p, ScenarioTimeNs: 11, Data: []byte("x")}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n := g.ExpireAt(ctx, time.Now()); n != 0 || g.Sessions() != 2 {
		t.Fatalf("at once: got %d ended, %d left; want 0 and 2", n, g.Sessions())
	}
	time.Sleep(700 * time.Millisecond)
	if _, err := g.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: "busy", Page: 0, ScenarioTimeNs: 11}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	// "idle" has had no request for 1.2 s, "busy" for 0.5 s; the limit is 1 s.
	if n := g.ExpireAt(ctx, time.Now()); n != 1 || g.Sessions() != 1 {
		t.Fatalf("after 1.2 s: got %d ended, %d left; want 1 and 1", n, g.Sessions())
	}
	if _, err := g.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: "idle", Page: 0, ScenarioTimeNs: 11}); status.Code(errs.Status(err)) != codes.NotFound {
		t.Errorf("the ended session: got %v, want NotFound", err)
	}
	for i := range 2 {
		if n, _ := c.Stores[i].CountFrames(ctx, "idle"); n != 0 {
			t.Errorf("satellite %d still holds %d frames of the ended session", i, n)
		}
	}
	if n, _ := c.Stores[1].CountFrames(ctx, "busy"); n != 5 {
		t.Errorf("the busy session: got %d frames at its satellite, want 5", n)
	}
}

func TestATableLargerThanTheGatewaysLimitIsRefusedNamingIt(t *testing.T) {
	c := clustertest.New(t, "walker-star:8/2/0:500:87", clustertest.Options{})
	_, err := c.Control.RegisterSession(context.Background(), &satpagev1.RegisterSessionRequest{SessionId: "big",
		TablePages: 4097, Visits: []*satpagev1.Visit{{Satellite: 0}}})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "table_pages 4097 exceeds the gateway's --max-table-pages 4096") {
		t.Errorf("got %v, want InvalidArgument naming table_pages", err)
	}
	r, err := c.Control.RegisterSession(context.Background(), &satpagev1.RegisterSessionRequest{SessionId: "default",
		Visits: []*satpagev1.Visit{{Satellite: 0}}})
	if err != nil || r.TablePages != 4096 || r.Token != "" {
		t.Errorf("no table size on an insecure gateway: got %v, %v; want 4096 pages and no token", r, err)
	}
}
