package node_test

import (
	"bytes"
	"context"
	"maps"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/clustertest"
	"github.com/satpage/satpage/services/internal/store"
	"github.com/satpage/satpage/services/internal/storetest"
)

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

func TestAFetchThatFailsLeavesThePageWithItsOwner(t *testing.T) {
	on := true
	c := clustertest.New(t, "walker-star:30/2/1:500:87", clustertest.Options{Interceptor: clustertest.Inject(0, "FetchPages", unavailableWhile(&on))})
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

func TestTheClientsDeadlineHoldsAtTheEndOfTheRelay(t *testing.T) {
	seen := make(chan time.Duration, 4)
	c := clustertest.New(t, "walker-star:15/1/0:500:87", clustertest.Options{
		// The owner, 4 hops from the requester: report the deadline it got, then stall.
		Interceptor: clustertest.Inject(0, "FetchPages", func(ctx context.Context) error {
			if d, ok := ctx.Deadline(); ok {
				seen <- time.Until(d)
			} else {
				seen <- -1
			}
			<-ctx.Done()
			return status.FromContextError(ctx.Err()).Err()
		})})
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

// redisCalls is the calls per command a redis-server has served (INFO commandstats).
func redisCalls(t *testing.T, sock string) map[string]int {
	t.Helper()
	r := redis.NewClient(&redis.Options{Network: "unix", Addr: sock, Protocol: 2})
	defer r.Close()
	info, err := r.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	calls := map[string]int{}
	for _, m := range regexp.MustCompile(`cmdstat_([\w|]+):calls=(\d+)`).FindAllStringSubmatch(info, -1) {
		calls[m[1]], _ = strconv.Atoi(m[2])
	}
	return calls
}

// The fast path on the satnode's own store stack (store.Stack, real Redis): a
// one-page, one-hop fault looks the owner up and reads the frame at the old
// owner from memory, and is answered before its adopt is stored (a read;
// the old owner keeps the page until it is), so neither Redis serves a call
// during it. The adopt (frame and table entry in one script) goes out with
// the session's next batch or flush, one call for all the faults held.
func TestAOneHopFaultMakesNoRedisCallAndItsAdoptOneLater(t *testing.T) {
	socks := map[int]string{}
	c := clustertest.New(t, "walker-star:4/1/0:500:87", clustertest.Options{Store: func(t testing.TB, i int) store.PageStore {
		if i > 1 {
			return store.NewMemory()
		}
		socks[i] = storetest.RedisServer(t)
		r, err := store.NewRedis(context.Background(), socks[i])
		if err != nil {
			t.Fatal(err)
		}
		return store.Stack(r, 0, 16<<20) // no quota: its usage readings would be Redis calls too
	}})
	data := bytes.Repeat([]byte{7}, 4096)
	placePage(t, c, "s", 0, 1, data)
	rp, sp := c.Satellite(t, 1)
	// A page created at the serving satellite first: its Redis then knows the
	// adopt script (the first call of a script may load it with an EVAL).
	if r, err := rp.ReadPage(context.Background(), &satpagev1.ReadPageRequest{SessionId: "s", Page: 8}); err != nil || r.Outcome != satpagev1.Outcome_OUTCOME_CREATED {
		t.Fatalf("ReadPage of a new page: got %v, %v, want CREATED", r, err)
	}
	atS, atO := redisCalls(t, socks[1]), redisCalls(t, socks[0])
	r, err := rp.ReadPage(context.Background(), &satpagev1.ReadPageRequest{SessionId: "s", Page: 7})
	if err != nil || r.Outcome != satpagev1.Outcome_OUTCOME_MOVED || r.Hops != 1 || !bytes.Equal(r.Data, data) {
		t.Fatalf("ReadPage: got %v, %v, want MOVED over 1 hop with the data written", r, err)
	}
	diff := func(after, before map[string]int) map[string]int {
		d := map[string]int{}
		for k, v := range after {
			if v != before[k] && k != "info" && k != "hello" { // the test's own reading
				d[k] = v - before[k]
			}
		}
		return d
	}
	if got := diff(redisCalls(t, socks[1]), atS); len(got) != 0 {
		t.Errorf("Redis calls at the serving satellite during the fault: got %v, want none", got)
	}
	if got := diff(redisCalls(t, socks[0]), atO); len(got) != 0 {
		t.Errorf("Redis calls at the old owner: got %v, want none", got)
	}
	// SessionFrames settles the session: the held adopt is stored (a script's
	// own commands count too: evalsha + hexists + 2 hset), then the release;
	// hlen is SessionFrames' own count.
	if f, err := sp.SessionFrames(context.Background(), &satpagev1.SessionFramesRequest{SessionId: "s"}); err != nil || f.Frames != 2 {
		t.Fatalf("SessionFrames: got %v, %v, want 2 frames", f, err)
	}
	if got, want := diff(redisCalls(t, socks[1]), atS), map[string]int{"evalsha": 1, "hexists": 1, "hset": 2, "hlen": 1}; !maps.Equal(got, want) {
		t.Errorf("Redis calls at the serving satellite for the held adopt: got %v, want %v", got, want)
	}

	// With a request id (exactly-once: the gateway sends one): the slot of the
	// id is looked up in memory (the first request of the session lists the
	// kept answers once, keys only), and the answer goes in the adopt script.
	placePage(t, c, "u", 0, 1, data)
	if r, err := rp.ReadPage(context.Background(), &satpagev1.ReadPageRequest{SessionId: "u", Page: 9, RequestId: "first"}); err != nil || r.Outcome != satpagev1.Outcome_OUTCOME_CREATED {
		t.Fatalf("ReadPage of a new page with an id: got %v, %v, want CREATED", r, err)
	}
	atS, atO = redisCalls(t, socks[1]), redisCalls(t, socks[0])
	r, err = rp.ReadPage(context.Background(), &satpagev1.ReadPageRequest{SessionId: "u", Page: 7, RequestId: "r7"})
	if err != nil || r.Outcome != satpagev1.Outcome_OUTCOME_MOVED || r.Hops != 1 || !bytes.Equal(r.Data, data) {
		t.Fatalf("ReadPage with an id: got %v, %v, want MOVED over 1 hop with the data written", r, err)
	}
	// evalsha + hexists + 3 hset: the frame, its table entry and the answer.
	if got, want := diff(redisCalls(t, socks[1]), atS), map[string]int{"evalsha": 1, "hexists": 1, "hset": 3}; !maps.Equal(got, want) {
		t.Errorf("Redis calls at the serving satellite, with a request id: got %v, want %v", got, want)
	}
	if got := diff(redisCalls(t, socks[0]), atO); len(got) != 0 {
		t.Errorf("Redis calls at the old owner, with a request id: got %v, want none", got)
	}
	// The same id again (a retry): the first answer, from memory, and no move.
	atS = redisCalls(t, socks[1])
	again, err := rp.ReadPage(context.Background(), &satpagev1.ReadPageRequest{SessionId: "u", Page: 7, RequestId: "r7"})
	if err != nil || !proto.Equal(again, r) {
		t.Fatalf("ReadPage sent again: got %v, %v, want the first answer %v", again, err, r)
	}
	if got := diff(redisCalls(t, socks[1]), atS); len(got) != 0 {
		t.Errorf("Redis calls at the serving satellite for a retry: got %v, want none", got)
	}
}
