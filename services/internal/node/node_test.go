package node_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/clustertest"
	"github.com/satpage/satpage/services/internal/errs"
	"github.com/satpage/satpage/services/internal/store"
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

func TestAMovedPageTravelsTheShortestPathHopByHop(t *testing.T) {
	c := clustertest.New(t, defaultSpec, clustertest.Options{})
	tests := []struct {
		name             string
		owner, requester int
		wantHops         uint32
	}{
		{"neighbours in plane", 0, 1, 1},
		{"two in plane", 0, 2, 2},
		{"across the in-plane wrap", 0, 11, 4},
		{"four planes and four slots", 0, 4*15 + 4, 8},
		{"plane 9 to plane 0", 9 * 15, 0, 9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			session := "s-" + tt.name
			data := bytes.Repeat([]byte(tt.name[:1]), 4096)
			placePage(t, c, session, tt.owner, tt.requester, data)
			before := relayed(c, "FetchPages")
			rp, _ := c.Satellite(t, tt.requester)
			r, err := rp.ReadPage(context.Background(), &satpagev1.ReadPageRequest{SessionId: session, Page: 7})
			if err != nil {
				t.Fatal(err)
			}
			if r.Outcome != satpagev1.Outcome_OUTCOME_MOVED || r.Hops != tt.wantHops || r.PreviousOwner != uint32(tt.owner) {
				t.Errorf("got outcome %v, %d hops from %d, want MOVED, %d hops from %d", r.Outcome, r.Hops, r.PreviousOwner, tt.wantHops, tt.owner)
			}
			if !bytes.Equal(r.Data, data) {
				t.Errorf("got %d bytes of data, want the %d written", len(r.Data), len(data))
			}
			if got := relayed(c, "FetchPages") - before; got != float64(tt.wantHops) {
				t.Errorf("relays counted: got %v, want %d", got, tt.wantHops)
			}
			ctx := context.Background()
			// The release to the old owner is batched; asking the serving satellite
			// what it holds sends it.
			_, rs := c.Satellite(t, tt.requester)
			beforeRelease := relayed(c, "ReleasePages")
			if _, err := rs.SessionFrames(ctx, &satpagev1.SessionFramesRequest{SessionId: session}); err != nil {
				t.Fatal(err)
			}
			if got := relayed(c, "ReleasePages") - beforeRelease; got != float64(tt.wantHops) {
				t.Errorf("release relays: got %v, want %d", got, tt.wantHops)
			}
			if n, _ := c.Stores[tt.owner].CountFrames(ctx, session); n != 0 {
				t.Errorf("frames left at the old owner: got %d, want 0", n)
			}
			if n, _ := c.Stores[tt.requester].CountFrames(ctx, session); n != 1 {
				t.Errorf("frames at the new owner: got %d, want 1", n)
			}
			r, err = rp.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: session, Page: 7})
			if err != nil || r.Outcome != satpagev1.Outcome_OUTCOME_LOCAL || r.Hops != 0 {
				t.Errorf("second read: got %v, %v, want LOCAL with 0 hops", r, err)
			}
		})
	}
}

func TestBadRequestsGetTheRightCodeAndNameTheValue(t *testing.T) {
	c := clustertest.New(t, "walker-star:30/2/1:500:87", clustertest.Options{})
	ctx := context.Background()
	p, s := c.Satellite(t, 0)
	if _, err := s.OpenSession(ctx, &satpagev1.OpenSessionRequest{SessionId: "known"}); err != nil {
		t.Fatal(err)
	}
	expired, cancel := context.WithDeadline(ctx, time.Now().Add(-time.Second))
	defer cancel()
	tests := []struct {
		name     string
		call     func() error
		wantCode codes.Code
		wantText string
	}{
		{"oversize page", func() error {
			_, err := p.WritePage(ctx, &satpagev1.WritePageRequest{SessionId: "known", Page: 1, Data: make([]byte, 4097)})
			return err
		}, codes.InvalidArgument, "4097"},
		{"unknown session", func() error {
			_, err := p.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: "nobody", Page: 1})
			return err
		}, codes.NotFound, `"nobody"`},
		{"missing session id", func() error {
			_, err := p.ReadPage(ctx, &satpagev1.ReadPageRequest{Page: 1})
			return err
		}, codes.InvalidArgument, "session_id"},
		{"handover to a satellite out of range", func() error {
			_, err := s.HandOver(ctx, &satpagev1.HandOverRequest{SessionId: "known", ToSatellite: 30})
			return err
		}, codes.OutOfRange, "30"},
		{"missing route", func() error {
			_, err := s.FetchPages(ctx, &satpagev1.FetchPagesRequest{SessionId: "known", Pages: []uint32{1}})
			return err
		}, codes.InvalidArgument, "route"},
		{"route to a satellite out of range", func() error {
			_, err := s.FetchPages(ctx, &satpagev1.FetchPagesRequest{SessionId: "known", Pages: []uint32{1},
				Route: &satpagev1.Route{Destination: 1000}})
			return err
		}, codes.OutOfRange, "1000"},
		{"a relay loop", func() error {
			_, err := s.FetchPages(ctx, &satpagev1.FetchPagesRequest{SessionId: "known", Pages: []uint32{1},
				Route: &satpagev1.Route{Origin: 2, Destination: 5, Hops: 2, Path: []uint32{0, 1}}})
			return err
		}, codes.Aborted, "twice"},
		{"a hop that is not an ISL", func() error {
			_, err := s.FetchPages(ctx, &satpagev1.FetchPagesRequest{SessionId: "known", Pages: []uint32{1},
				Route: &satpagev1.Route{Origin: 7, Destination: 5, Hops: 1, Path: []uint32{7}}})
			return err
		}, codes.Aborted, "not its ISL neighbour"},
		{"hops that disagree with the path", func() error {
			_, err := s.FetchPages(ctx, &satpagev1.FetchPagesRequest{SessionId: "known", Pages: []uint32{1},
				Route: &satpagev1.Route{Origin: 1, Destination: 0, Hops: 5, Path: []uint32{1}}})
			return err
		}, codes.InvalidArgument, "hops 5"},
		{"a page its owner does not hold", func() error {
			_, err := s.FetchPages(ctx, &satpagev1.FetchPagesRequest{SessionId: "known", Pages: []uint32{99},
				Route: &satpagev1.Route{Origin: 0, Destination: 0}})
			return err
		}, codes.NotFound, "page 99"},
		{"an expired deadline", func() error {
			_, err := p.ReadPage(expired, &satpagev1.ReadPageRequest{SessionId: "known", Page: 1})
			return err
		}, codes.DeadlineExceeded, ""},
		{"a session opened twice", func() error {
			_, err := s.OpenSession(ctx, &satpagev1.OpenSessionRequest{SessionId: "known"})
			return err
		}, codes.AlreadyExists, `"known"`},
		{"a batch with mismatched times", func() error {
			_, err := p.ReadPages(ctx, &satpagev1.ReadPagesRequest{SessionId: "known", Pages: []uint32{1, 2}, ScenarioTimeNs: []int64{0}})
			return err
		}, codes.InvalidArgument, "2 pages but 1"},
		{"an oversize session id", func() error {
			_, err := p.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: strings.Repeat("x", 300), Page: 1})
			return err
		}, codes.InvalidArgument, "300 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			st := status.Convert(err)
			if st.Code() != tt.wantCode || !strings.Contains(st.Message(), tt.wantText) {
				t.Errorf("got %v: %q, want %v naming %q", st.Code(), st.Message(), tt.wantCode, tt.wantText)
			}
		})
	}
}

// failing returns an interceptor that fails one RPC (by method suffix) while *on is true.
func failing(method string, on *bool) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if *on && strings.HasSuffix(info.FullMethod, "/"+method) {
			return nil, status.Error(codes.Unavailable, "injected failure")
		}
		return h(ctx, req)
	}
}

func TestAReleaseThatFailsLeavesAStaleCopyNotALostPage(t *testing.T) {
	on := true
	c := clustertest.New(t, "walker-star:30/2/1:500:87", clustertest.Options{
		Interceptor: func(i int) grpc.UnaryServerInterceptor {
			if i == 0 {
				return failing("ReleasePages", &on)
			}
			return nil
		}})
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
	c := clustertest.New(t, "walker-star:30/2/1:500:87", clustertest.Options{
		Interceptor: func(i int) grpc.UnaryServerInterceptor {
			if i == 0 {
				return failing("ReleasePages", &on)
			}
			return nil
		}})
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

func TestAFetchThatFailsLeavesThePageWithItsOwner(t *testing.T) {
	on := true
	c := clustertest.New(t, "walker-star:30/2/1:500:87", clustertest.Options{
		Interceptor: func(i int) grpc.UnaryServerInterceptor {
			if i == 0 {
				return failing("FetchPages", &on)
			}
			return nil
		}})
	placePage(t, c, "s", 0, 2, []byte("payload"))
	rp, _ := c.Satellite(t, 2)
	ctx := context.Background()
	_, err := rp.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: "s", Page: 7})
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("got %v, want Unavailable", err)
	}
	if tab, _ := c.Stores[2].GetTable(ctx, "s"); tab[7] != 0 {
		t.Errorf("owner in the table after a failed fetch: got %d, want 0", tab[7])
	}
	if n, _ := c.Stores[2].CountFrames(ctx, "s"); n != 0 {
		t.Errorf("frames at the requester: got %d, want 0", n)
	}
	on = false
	r, err := rp.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: "s", Page: 7})
	if err != nil || string(r.Data) != "payload" {
		t.Fatalf("retry: got %v, %v, want the page", r, err)
	}
}

func TestAPartitionedRelayFailsTheFetchAndLosesNothing(t *testing.T) {
	c := clustertest.New(t, "walker-star:15/1/0:500:87", clustertest.Options{})
	placePage(t, c, "s", 0, 2, []byte("payload"))
	c.Partition(1, true) // the only shortest path 2 -> 0 runs through 1
	rp, _ := c.Satellite(t, 2)
	ctx := context.Background()
	if _, err := rp.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: "s", Page: 7}); status.Code(err) != codes.Unavailable {
		t.Fatalf("got %v, want Unavailable", err)
	}
	if n, _ := c.Stores[0].CountFrames(ctx, "s"); n != 1 {
		t.Errorf("frames at the owner: got %d, want 1", n)
	}
	c.Partition(1, false)
	if r, err := rp.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: "s", Page: 7}); err != nil || r.Hops != 2 {
		t.Fatalf("after the partition heals: got %v, %v, want 2 hops", r, err)
	}
}

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

var _ store.PageStore = store.NewMemory()

func TestTheClientsDeadlineHoldsAtTheEndOfTheRelay(t *testing.T) {
	seen := make(chan time.Duration, 4)
	c := clustertest.New(t, "walker-star:15/1/0:500:87", clustertest.Options{
		Interceptor: func(i int) grpc.UnaryServerInterceptor {
			if i != 0 {
				return nil
			}
			// The owner, 4 hops from the requester: report the deadline it got, then stall.
			return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
				if strings.HasSuffix(info.FullMethod, "/FetchPages") {
					d, ok := ctx.Deadline()
					if !ok {
						seen <- -1
					} else {
						seen <- time.Until(d)
					}
					<-ctx.Done()
					return nil, status.FromContextError(ctx.Err()).Err()
				}
				return h(ctx, req)
			}
		}})
	placePage(t, c, "s", 0, 4, []byte("x"))
	rp, _ := c.Satellite(t, 4)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	began := time.Now()
	_, err := rp.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: "s", Page: 7})
	if status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("got %v, want DeadlineExceeded", err)
	}
	if took := time.Since(began); took > 3*time.Second {
		t.Errorf("the stalled relay held the client for %v", took)
	}
	if left := <-seen; left <= 0 || left > 500*time.Millisecond {
		t.Errorf("deadline left at the owner after 4 relays: got %v, want within the client's 500 ms", left)
	}
	if n, _ := c.Stores[0].CountFrames(context.Background(), "s"); n != 1 {
		t.Errorf("frames at the owner after the timeout: got %d, want 1 (not lost)", n)
	}
}

// A batch read must give what reading the pages one by one gives (outcome, hops,
// previous owner, data, and the state left behind), with one FetchPages per
// (owner, scenario time) instead of one per fault.
func TestABatchReadEqualsReadingOneByOne(t *testing.T) {
	ctx := context.Background()
	pages := []uint32{3, 20, 11, 3, 99, 5, 14, 99, 20, 0, 12, 7}
	const min = int64(60e9)
	times := []int64{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, min, min}
	// Pages 0-9 written at satellite 0, 10-14 at 16, page 20 at 2, which then serves.
	setup := func(c *clustertest.Cluster) {
		t.Helper()
		write := func(sat int, from, to uint32) {
			p, _ := c.Satellite(t, sat)
			for pg := from; pg <= to; pg++ {
				if _, err := p.WritePage(ctx, &satpagev1.WritePageRequest{SessionId: "b", Page: pg, Data: []byte{byte(pg), byte(sat)}}); err != nil {
					t.Fatal(err)
				}
			}
		}
		hand := func(from, to int) {
			_, s := c.Satellite(t, from)
			if _, err := s.HandOver(ctx, &satpagev1.HandOverRequest{SessionId: "b", ToSatellite: uint32(to)}); err != nil {
				t.Fatal(err)
			}
		}
		_, s0 := c.Satellite(t, 0)
		if _, err := s0.OpenSession(ctx, &satpagev1.OpenSessionRequest{SessionId: "b"}); err != nil {
			t.Fatal(err)
		}
		write(0, 0, 9)
		hand(0, 16)
		write(16, 10, 14)
		hand(16, 2)
		write(2, 20, 20)
	}
	batch := clustertest.New(t, defaultSpec, clustertest.Options{})
	single := clustertest.New(t, defaultSpec, clustertest.Options{})
	setup(batch)
	setup(single)

	before := relayed(batch, "FetchPages")
	pb, _ := batch.Satellite(t, 2)
	got, err := pb.ReadPages(ctx, &satpagev1.ReadPagesRequest{SessionId: "b", Pages: pages, ScenarioTimeNs: times})
	if err != nil || len(got.Results) != len(pages) {
		t.Fatalf("ReadPages: got %v, %v", got, err)
	}
	ps, _ := single.Satellite(t, 2)
	for i, pg := range pages {
		want, err := ps.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: "b", Page: pg, ScenarioTimeNs: times[i]})
		if err != nil {
			t.Fatal(err)
		}
		g := got.Results[i]
		if g.Outcome != want.Outcome || g.Hops != want.Hops || g.PreviousOwner != want.PreviousOwner || !bytes.Equal(g.Data, want.Data) {
			t.Errorf("access %d (page %d): batch gave %v %d hops from %d data %v, one by one %v %d hops from %d data %v",
				i, pg, g.Outcome, g.Hops, g.PreviousOwner, g.Data, want.Outcome, want.Hops, want.PreviousOwner, want.Data)
		}
	}
	// Groups: (0, t0) pages 3 5 0; (16, t0) 11 14; (16, 1 min) 12; (0, 1 min) 7.
	h0, _ := batch.Grid.Hops(0, 2, 0)
	h16, _ := batch.Grid.Hops(16, 2, 0)
	if got, want := relayed(batch, "FetchPages")-before, float64(2*h0+2*h16); got != want {
		t.Errorf("relayed FetchPages hops of the batch: got %v, want %v (one FetchPages per owner and time)", got, want)
	}
	for _, sat := range []int{0, 16, 2} {
		_, sb := batch.Satellite(t, sat)
		_, ss := single.Satellite(t, sat)
		fb, err1 := sb.SessionFrames(ctx, &satpagev1.SessionFramesRequest{SessionId: "b"})
		fs, err2 := ss.SessionFrames(ctx, &satpagev1.SessionFramesRequest{SessionId: "b"})
		if err1 != nil || err2 != nil || fb.Frames != fs.Frames || fb.TablePages != fs.TablePages {
			t.Errorf("satellite %d holds %v (%v) after the batch, %v (%v) one by one", sat, fb, err1, fs, err2)
		}
	}
	tb, _ := batch.Stores[2].GetTable(ctx, "b")
	ts, _ := single.Stores[2].GetTable(ctx, "b")
	if !maps.Equal(tb, ts) {
		t.Errorf("page table after the batch %v, one by one %v", tb, ts)
	}
}

// The 64th fault from an old owner queues a batch of releases; no fault waits
// for it, and the next operation of the session (here SessionFrames) waits
// until the old owner has deleted its copies.
func TestReleasesGoOutOffTheFaultPath(t *testing.T) {
	ctx := context.Background()
	hold := make(chan struct{})
	c := clustertest.New(t, defaultSpec, clustertest.Options{
		Interceptor: func(i int) grpc.UnaryServerInterceptor {
			if i != 0 {
				return nil
			}
			return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
				if strings.HasSuffix(info.FullMethod, "/ReleasePages") {
					<-hold
				}
				return h(ctx, req)
			}
		}})
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

// A relay that dies with a fetch in flight (here: answers Unavailable once) costs
// the origin one more attempt over the whole path, not the fault; the hops the
// client sees are those of the attempt that arrived.
func TestAFetchLostAtARelayIsSentAgainByTheOrigin(t *testing.T) {
	var mu sync.Mutex
	failures := 1
	c := clustertest.New(t, defaultSpec, clustertest.Options{
		Interceptor: func(i int) grpc.UnaryServerInterceptor {
			if i != 1 { // the relay between 0 and 2
				return nil
			}
			return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
				mu.Lock()
				fail := strings.HasSuffix(info.FullMethod, "/FetchPages") && failures > 0
				if fail {
					failures--
				}
				mu.Unlock()
				if fail {
					return nil, status.Error(codes.Unavailable, "connection reset by peer (injected)")
				}
				return h(ctx, req)
			}
		}})
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
