package gateway_test

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/clustertest"
	"github.com/satpage/satpage/services/internal/constellation"
	"github.com/satpage/satpage/services/internal/store"
	"github.com/satpage/satpage/services/internal/storetest"
)

// workload is one session: the serving satellite of each visit and the pages accessed in each.
type workload struct {
	sats     []uint32
	accesses [][]uint32
}

// zipfWorkload draws accesses with popularity 1/r (the paper's s = 1).
func zipfWorkload(seed uint64, sats []uint32, nPages, perVisit int) workload {
	r := rand.New(rand.NewPCG(seed, 1))
	cdf := make([]float64, nPages)
	sum := 0.0
	for i := range nPages {
		sum += 1 / float64(i+1)
		cdf[i] = sum
	}
	w := workload{sats: sats}
	for range sats {
		var v []uint32
		for range perVisit {
			x := r.Float64() * sum
			i, _ := slices.BinarySearch(cdf, x)
			v = append(v, uint32(min(i, nPages-1)))
		}
		w.accesses = append(w.accesses, v)
	}
	return w
}

// counts is what the cluster must reproduce.
type counts struct {
	tables, lastRow                         []uint32
	ondemandMoves, ondemandHops             uint64
	proactiveMoves, proactiveHops, accesses uint64
}

// scalarModel is the paper's model written plainly (docs/design.md section 1):
// the authority the cluster's measured counts are checked against.
func scalarModel(w workload, grid *constellation.Grid, proactive bool) counts {
	owner := map[uint32]int{} // page -> visit whose satellite holds it
	var c counts
	for v := range w.sats {
		if v > 0 {
			c.tables = append(c.tables, uint32(len(owner)))
			if proactive {
				h, _ := grid.Hops(w.sats[v-1], w.sats[v], 0)
				for p := range owner {
					owner[p] = v
				}
				c.proactiveMoves += uint64(len(owner))
				c.proactiveHops += uint64(len(owner) * h)
			}
		}
		for _, p := range w.accesses[v] {
			c.accesses++
			o, ok := owner[p]
			if ok && o != v {
				h, _ := grid.Hops(w.sats[o], w.sats[v], 0)
				c.ondemandMoves++
				c.ondemandHops += uint64(h)
			}
			owner[p] = v
		}
	}
	c.tables = append(c.tables, uint32(len(owner)))
	c.lastRow = make([]uint32, len(w.sats))
	for _, o := range owner {
		c.lastRow[o]++
	}
	return c
}

const second = int64(1e9)

func replay(t *testing.T, c *clustertest.Cluster, id string, w workload, strategy satpagev1.Strategy, batched bool) counts {
	t.Helper()
	ctx := context.Background()
	var visits []*satpagev1.Visit
	for v, s := range w.sats {
		visits = append(visits, &satpagev1.Visit{Satellite: s, StartNs: int64(v) * second})
	}
	if _, err := c.Control.RegisterSession(ctx, &satpagev1.RegisterSessionRequest{SessionId: id, Visits: visits, Strategy: strategy}); err != nil {
		t.Fatal(err)
	}
	if batched {
		var pages []uint32
		var times []int64
		for v, acc := range w.accesses {
			for i, p := range acc {
				pages = append(pages, p)
				times = append(times, int64(v)*second+int64(i))
			}
		}
		r, err := c.Gateway.ReadPages(ctx, &satpagev1.ReadPagesRequest{SessionId: id, Pages: pages, ScenarioTimeNs: times, OmitData: true})
		if err != nil || len(r.Results) != len(pages) {
			t.Fatalf("ReadPages: got %d results, %v, want %d", len(r.GetResults()), err, len(pages))
		}
	} else {
		for v, acc := range w.accesses {
			for i, p := range acc {
				r, err := c.Gateway.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: id, Page: p, ScenarioTimeNs: int64(v)*second + int64(i)})
				if err != nil {
					t.Fatal(err)
				}
				if r.Satellite != w.sats[v] {
					t.Fatalf("access at visit %d served by satellite %d, want %d", v, r.Satellite, w.sats[v])
				}
			}
		}
	}
	end := int64(len(w.sats)-1) * second
	st, err := c.Control.SessionStats(ctx, &satpagev1.SessionStatsRequest{SessionId: id, ScenarioTimeNs: end})
	if err != nil {
		t.Fatal(err)
	}
	e, err := c.Gateway.EndSession(ctx, &satpagev1.EndSessionRequest{SessionId: id, ScenarioTimeNs: end})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := e.PagesDeleted, st.TablePages[len(st.TablePages)-1]; got != want {
		t.Errorf("EndSession deleted %d pages, want the %d in existence", got, want)
	}
	return counts{tables: st.TablePages, lastRow: st.FramesByVisit, ondemandMoves: st.OndemandMoves,
		ondemandHops: st.OndemandHops, proactiveMoves: st.ProactiveMoves, proactiveHops: st.ProactiveHops, accesses: st.Accesses}
}

func compare(t *testing.T, got, want counts) {
	t.Helper()
	if !slices.Equal(got.tables, want.tables) {
		t.Errorf("pages before each handover and at the end: got %v, want %v", got.tables, want.tables)
	}
	if !slices.Equal(got.lastRow, want.lastRow) {
		t.Errorf("pages held by each visit's satellite: got %v, want %v", got.lastRow, want.lastRow)
	}
	if got.ondemandMoves != want.ondemandMoves || got.ondemandHops != want.ondemandHops {
		t.Errorf("on-demand moves, hops: got %d, %d, want %d, %d", got.ondemandMoves, got.ondemandHops, want.ondemandMoves, want.ondemandHops)
	}
	if got.proactiveMoves != want.proactiveMoves || got.proactiveHops != want.proactiveHops {
		t.Errorf("proactive moves, hops: got %d, %d, want %d, %d", got.proactiveMoves, got.proactiveHops, want.proactiveMoves, want.proactiveHops)
	}
	if got.accesses != want.accesses {
		t.Errorf("accesses: got %d, want %d", got.accesses, want.accesses)
	}
}

func TestTheClusterGivesTheScalarModelsCounts(t *testing.T) {
	c := clustertest.New(t, "walker-star:150/10/1:500:87", clustertest.Options{})
	tests := []struct {
		name     string
		sats     []uint32
		strategy satpagev1.Strategy
		batched  bool
	}{
		{"the paper trail on demand", []uint32{0, 1, 2, 3, 4, 5}, satpagev1.Strategy_STRATEGY_ON_DEMAND, true},
		{"the paper trail proactive", []uint32{0, 1, 2, 3, 4, 5}, satpagev1.Strategy_STRATEGY_PROACTIVE, true},
		{"a trail across planes, one access per call", []uint32{0, 16, 47, 140, 3}, satpagev1.Strategy_STRATEGY_ON_DEMAND, false},
		{"a trail across planes proactive", []uint32{0, 16, 47, 140, 3}, satpagev1.Strategy_STRATEGY_PROACTIVE, false},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := zipfWorkload(uint64(i), tt.sats, 120, 80)
			want := scalarModel(w, c.Grid, tt.strategy == satpagev1.Strategy_STRATEGY_PROACTIVE)
			compare(t, replay(t, c, tt.name, w, tt.strategy, tt.batched), want)
		})
	}
}

func TestTheClusterOnRedisGivesTheScalarModelsCounts(t *testing.T) {
	const spec = "walker-star:12/1/0:500:87"
	c := clustertest.New(t, spec, clustertest.Options{Store: func(t testing.TB, i int) store.PageStore {
		r, err := store.NewRedis(context.Background(), storetest.RedisServer(t))
		if err != nil {
			t.Fatal(err)
		}
		return store.Stack(r, 0.8, 16<<20) // as a satnode builds it: tables and recent frames held in memory
	}})
	w := zipfWorkload(7, []uint32{0, 1, 2, 3, 4, 5}, 200, 100)
	for _, s := range []satpagev1.Strategy{satpagev1.Strategy_STRATEGY_ON_DEMAND, satpagev1.Strategy_STRATEGY_PROACTIVE} {
		want := scalarModel(w, c.Grid, s == satpagev1.Strategy_STRATEGY_PROACTIVE)
		compare(t, replay(t, c, s.String(), w, s, true), want)
	}
}

func TestBadSessionRequestsAtTheGatewayGetTheRightCode(t *testing.T) {
	c := clustertest.New(t, "walker-star:30/2/1:500:87", clustertest.Options{})
	ctx := context.Background()
	if _, err := c.Control.RegisterSession(ctx, &satpagev1.RegisterSessionRequest{SessionId: "s",
		Visits: []*satpagev1.Visit{{Satellite: 0, StartNs: 10}, {Satellite: 1, StartNs: 20}}}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		call     func() error
		wantCode codes.Code
		wantText string
	}{
		{"an unregistered session", func() error {
			_, err := c.Gateway.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: "other", ScenarioTimeNs: 10})
			return err
		}, codes.NotFound, `"other"`},
		{"a time before the session", func() error {
			_, err := c.Gateway.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: "s", ScenarioTimeNs: 5})
			return err
		}, codes.OutOfRange, "5 ns"},
		{"a satellite out of range", func() error {
			_, err := c.Control.RegisterSession(ctx, &satpagev1.RegisterSessionRequest{SessionId: "x", Visits: []*satpagev1.Visit{{Satellite: 30}}})
			return err
		}, codes.OutOfRange, "satellite 30"},
		{"no visits", func() error {
			_, err := c.Control.RegisterSession(ctx, &satpagev1.RegisterSessionRequest{SessionId: "x"})
			return err
		}, codes.InvalidArgument, "0 visits"},
		{"visits out of order", func() error {
			_, err := c.Control.RegisterSession(ctx, &satpagev1.RegisterSessionRequest{SessionId: "x",
				Visits: []*satpagev1.Visit{{Satellite: 0, StartNs: 9}, {Satellite: 1, StartNs: 3}}})
			return err
		}, codes.InvalidArgument, "3 ns"},
		{"a session registered twice", func() error {
			_, err := c.Control.RegisterSession(ctx, &satpagev1.RegisterSessionRequest{SessionId: "s", Visits: []*satpagev1.Visit{{Satellite: 0}}})
			return err
		}, codes.AlreadyExists, `"s"`},
		{"an oversize page through the gateway", func() error {
			_, err := c.Gateway.WritePage(ctx, &satpagev1.WritePageRequest{SessionId: "s", ScenarioTimeNs: 10, Data: make([]byte, 5000)})
			return err
		}, codes.InvalidArgument, "5000"},
		{"a time that goes back past a handover", func() error {
			if _, err := c.Gateway.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: "s", ScenarioTimeNs: math.MaxInt64}); err != nil {
				return err
			}
			_, err := c.Gateway.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: "s", ScenarioTimeNs: 11})
			return err
		}, codes.OutOfRange, "11 ns"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := status.Convert(tt.call())
			if st.Code() != tt.wantCode || !strings.Contains(st.Message(), tt.wantText) {
				t.Errorf("got %v: %q, want %v naming %q", st.Code(), st.Message(), tt.wantCode, tt.wantText)
			}
		})
	}
}

// The old satellite moved the table and then lost its reply (it died before
// answering): the gateway's retry finds no table there, sees that the new
// satellite serves the session, and carries on instead of failing every request.
func TestAHandoverWhoseReplyWasLostIsRecognisedAsDone(t *testing.T) {
	c := clustertest.New(t, "walker-star:30/2/1:500:87", clustertest.Options{})
	ctx := context.Background()
	if _, err := c.Control.RegisterSession(ctx, &satpagev1.RegisterSessionRequest{SessionId: "s",
		Visits: []*satpagev1.Visit{{Satellite: 0, StartNs: 10}, {Satellite: 16, StartNs: 20}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Gateway.WritePage(ctx, &satpagev1.WritePageRequest{SessionId: "s", Page: 3, Data: []byte("x"), ScenarioTimeNs: 10}); err != nil {
		t.Fatal(err)
	}
	_, s0 := c.Satellite(t, 0)
	if _, err := s0.HandOver(ctx, &satpagev1.HandOverRequest{SessionId: "s", ToSatellite: 16, ScenarioTimeNs: 20}); err != nil {
		t.Fatal(err)
	}
	r, err := c.Gateway.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: "s", Page: 3, ScenarioTimeNs: 25})
	if err != nil || r.Satellite != 16 || r.Outcome != satpagev1.Outcome_OUTCOME_MOVED || string(r.Data) != "x" {
		t.Fatalf("read after the lost reply: got %v, %v, want page 3 moved to satellite 16", r, err)
	}
	// When the table went elsewhere (not to the next satellite), the handover still fails, naming both.
	if _, err := c.Control.RegisterSession(ctx, &satpagev1.RegisterSessionRequest{SessionId: "u",
		Visits: []*satpagev1.Visit{{Satellite: 1, StartNs: 10}, {Satellite: 17, StartNs: 20}}}); err != nil {
		t.Fatal(err)
	}
	_, s1 := c.Satellite(t, 1)
	if _, err := s1.HandOver(ctx, &satpagev1.HandOverRequest{SessionId: "u", ToSatellite: 5, ScenarioTimeNs: 20}); err != nil {
		t.Fatal(err)
	}
	_, err = c.Gateway.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: "u", Page: 0, ScenarioTimeNs: 25})
	if st := status.Convert(err); st.Code() != codes.NotFound || !strings.Contains(st.Message(), "from satellite 1 to 17") {
		t.Errorf("handover of a session no satellite holds: got %v, want NotFound naming satellites 1 and 17", err)
	}
}

// A proactive move that fails part-way (the old owner stops answering after
// its first batch) is not skipped: the request fails, the next one sends the
// MovePages again before anything else, and the counts cover every page once,
// as if the move had not failed.
func TestAFailedProactiveMoveIsSentAgainAndCountedOnce(t *testing.T) {
	var mu sync.Mutex
	allow := -1 // FetchPages the old owner still answers; -1: all
	c := clustertest.New(t, "walker-star:30/2/1:500:87", clustertest.Options{
		Interceptor: clustertest.Inject(0, "FetchPages", func(context.Context) error {
			mu.Lock()
			defer mu.Unlock()
			switch {
			case allow == 0:
				return status.Error(codes.Unavailable, "satellite 0 stopped answering (injected)")
			case allow > 0:
				allow--
			}
			return nil
		})})
	ctx := context.Background()
	if _, err := c.Control.RegisterSession(ctx, &satpagev1.RegisterSessionRequest{SessionId: "p",
		Strategy: satpagev1.Strategy_STRATEGY_PROACTIVE,
		Visits:   []*satpagev1.Visit{{Satellite: 0, StartNs: 0}, {Satellite: 17, StartNs: 10}}}); err != nil {
		t.Fatal(err)
	}
	const pages = 300 // two FetchPages batches of a proactive move (256 + 44)
	for pg := range uint32(pages) {
		if _, err := c.Gateway.WritePage(ctx, &satpagev1.WritePageRequest{SessionId: "p", Page: pg, Data: []byte{byte(pg)}}); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	allow = 1
	mu.Unlock()
	if _, err := c.Gateway.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: "p", Page: 299, ScenarioTimeNs: 10}); status.Code(err) != codes.Unavailable {
		t.Fatalf("read during the failing move: got %v, want Unavailable", err)
	}
	mu.Lock()
	allow = -1
	mu.Unlock()
	r, err := c.Gateway.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: "p", Page: 299, ScenarioTimeNs: 11})
	if err != nil || r.Outcome != satpagev1.Outcome_OUTCOME_LOCAL || r.Satellite != 17 || !slices.Equal(r.Data, []byte{byte(299 % 256)}) {
		t.Fatalf("read after the failure: got %v, %v, want page 299 local at satellite 17 (moved proactively)", r, err)
	}
	hops, _ := c.Grid.Hops(0, 17, 10)
	st, err := c.Control.SessionStats(ctx, &satpagev1.SessionStatsRequest{SessionId: "p", ScenarioTimeNs: 11})
	if err != nil {
		t.Fatal(err)
	}
	if st.ProactiveMoves != pages || st.ProactiveHops != uint64(pages*hops) || st.OndemandMoves != 0 {
		t.Errorf("counts: got %d proactive moves, %d page-hops, %d on-demand; want %d, %d, 0",
			st.ProactiveMoves, st.ProactiveHops, st.OndemandMoves, pages, pages*hops)
	}
	if n, _ := c.Stores[17].CountFrames(ctx, "p"); n != pages {
		t.Errorf("frames at the serving satellite: got %d, want %d", n, pages)
	}
	if n, _ := c.Stores[0].CountFrames(ctx, "p"); n != 0 {
		t.Errorf("frames left at the old satellite: got %d, want 0", n)
	}
}
