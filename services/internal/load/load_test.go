package load_test

import (
	"context"
	"testing"
	"time"

	"github.com/satpage/satpage/services/internal/clustertest"
	"github.com/satpage/satpage/services/internal/load"
)

// The same bounded load over read streams and as ReadPage calls: every read
// a one-hop move of the page as written, the relays' hop counts summing to
// one per access, in both.
func TestOneHopLoadOverReadStreamsCountsAsReadPage(t *testing.T) {
	c := clustertest.New(t, "walker-star:30/2/1:500:87", clustertest.Options{FetchStreams: true})
	pool := c.Pool()
	t.Cleanup(func() { pool.Close() })
	for _, stream := range []bool{false, true} {
		res, err := load.Run(context.Background(), c.Grid, pool, load.Options{Hops: 1, Workers: 3, Pages: 8, PageBytes: 64,
			Duration: 10 * time.Second, MaxFaults: 60, Batch: 1, Seed: 1, ReadStream: stream})
		if err != nil {
			t.Fatalf("read stream %v: %v", stream, err)
		}
		wantRPC := map[bool]string{false: "ReadPage", true: "ReadStream"}[stream]
		if res.RPC != wantRPC || res.Accesses != 60 || res.UnexpectedOut != 0 || res.MeasuredHops != 60 {
			t.Errorf("read stream %v: %s, %d accesses, %d unexpected outcomes, %d hops; want %s, 60, 0, 60",
				stream, res.RPC, res.Accesses, res.UnexpectedOut, res.MeasuredHops, wantRPC)
		}
	}
}

// Two hop counts measured at once: each run's reads travel its own hop count
// exactly (the sessions of one are not the other's), and a hop count no pair
// of satellites spans fails the whole measurement before any clock starts.
func TestInterleavedHopCountsEachCountTheirOwnHops(t *testing.T) {
	c := clustertest.New(t, "walker-star:30/2/1:500:87", clustertest.Options{FetchStreams: true})
	pool := c.Pool()
	t.Cleanup(func() { pool.Close() })
	run := func(hops int) load.Options {
		return load.Options{Hops: hops, Workers: 2, Pages: 8, PageBytes: 64, Duration: 10 * time.Second,
			MaxFaults: 40, Batch: 1, RatePerS: 400, Seed: 1, CPUPids: []int{1}}
	}
	res, err := load.Interleaved(context.Background(), c.Grid, pool, []load.Options{run(1), run(2)})
	if err != nil {
		t.Fatal(err)
	}
	for i, hops := range []int{1, 2} {
		r := res[i]
		if r.Hops != hops || r.Accesses != 40 || r.UnexpectedOut != 0 || r.MeasuredHops != uint64(40*hops) ||
			r.Requests != 40 || r.CPUMicrosPerAccess != 0 {
			t.Errorf("run %d: %d hops, %d accesses, %d unexpected, %d hops measured, %d requests, %g us CPU; "+
				"want %d, 40, 0, %d, 40, 0", i, r.Hops, r.Accesses, r.UnexpectedOut, r.MeasuredHops, r.Requests,
				r.CPUMicrosPerAccess, hops, 40*hops)
		}
	}
	if _, err := load.Interleaved(context.Background(), c.Grid, pool, []load.Options{run(1), run(99)}); err == nil {
		t.Error("a hop count of 99 on 30 satellites was measured")
	}
}
