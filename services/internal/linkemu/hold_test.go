package linkemu

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/satpage/satpage/services/internal/leakcheck"
)

func TestHoldsEndAtTheirInstantsInAnyOrderOrWhenTheirContextEnds(t *testing.T) {
	before := leakcheck.Snapshot()
	const n = 400
	rng := rand.New(rand.NewPCG(1, 2))
	start := time.Now().UnixNano()
	late := make([]time.Duration, n)
	var wg sync.WaitGroup
	for k := range n {
		at := start + int64(2*time.Millisecond) + rng.Int64N(int64(20*time.Millisecond)) // added out of order
		wg.Go(func() {
			if !holdUntil(context.Background(), at) {
				t.Errorf("hold %d: ended without its context ending", k)
			}
			late[k] = time.Duration(time.Now().UnixNano() - at)
		})
	}
	// Holds whose context ends leave the queue and say so, at once: the
	// first of them leads (nothing else is held), the others wait behind it.
	var ends sync.WaitGroup
	for range 3 {
		ends.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
			defer cancel()
			began := time.Now()
			if holdUntil(ctx, time.Now().UnixNano()+int64(time.Hour)) {
				t.Error("a hold an hour away ended before its context did")
			}
			if d := time.Since(began); d > 10*time.Second {
				t.Errorf("a hold whose context ended after 30 ms returned after %v", d)
			}
		})
	}
	wg.Wait()
	ends.Wait()
	slices.Sort(late)
	if late[0] < 0 {
		t.Errorf("a hold ended %v before its instant", -late[0])
	}
	// Only the order of magnitude: a loaded machine wakes anything late.
	if p50 := late[n/2]; p50 > 2*time.Second {
		t.Errorf("holds ended %v after their instants at the median", p50)
	}
	t.Logf("lateness p50 %v, p99 %v, max %v", late[n/2], late[n*99/100], late[n-1])
	holds.mu.Lock()
	left := len(holds.q)
	holds.mu.Unlock()
	if left != 0 {
		t.Errorf("%d holds left in the queue", left)
	}
	holds.mu.Lock()
	leader := holds.leader
	holds.mu.Unlock()
	if leader != nil {
		t.Error("a leader is left with nothing held")
	}
	leakcheck.Check(t, before, time.Second)
}

// BenchmarkHold is one message held 2 ms, many at once (the releaser's
// batching); compare with go test -bench Hold -benchtime 2000x.
func BenchmarkHold(b *testing.B) {
	var wg sync.WaitGroup
	for b.Loop() {
		at := time.Now().UnixNano() + int64(2*time.Millisecond)
		wg.Go(func() { holdUntil(context.Background(), at) })
	}
	wg.Wait()
}
