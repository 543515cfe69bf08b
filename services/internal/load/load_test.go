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
