package retry

import (
	"context"
	"testing"
	"time"
)

func TestBackoffDoublesUpToItsCap(t *testing.T) {
	b := Backoff{First: 100 * time.Millisecond, Max: time.Second}
	for _, c := range []struct {
		n    int
		want time.Duration
	}{{0, 100 * time.Millisecond}, {1, 200 * time.Millisecond}, {3, 800 * time.Millisecond}, {4, time.Second}, {60, time.Second}} {
		if got := b.Delay(c.n); got != c.want {
			t.Errorf("Delay(%d): got %v, want %v", c.n, got, c.want)
		}
	}
}

// Jitter spreads peers that failed together: the delays of many callers after
// the same failure fall across the whole band, never outside it.
func TestJitterSpreadsDelaysOverTheBand(t *testing.T) {
	b := Backoff{First: time.Second, Max: time.Second, Jitter: 0.5}
	lo, hi := time.Hour, time.Duration(0)
	for range 2000 {
		d := b.Delay(0)
		if d < 500*time.Millisecond || d >= 1500*time.Millisecond {
			t.Fatalf("Delay(0) = %v outside [0.5 s, 1.5 s)", d)
		}
		lo, hi = min(lo, d), max(hi, d)
	}
	if hi-lo < 800*time.Millisecond {
		t.Errorf("2000 delays span only %v..%v: no spread", lo, hi)
	}
}

// A budget lets through the retries its first attempts paid for and refuses
// the rest at once; the floor's trickle lets a quiet caller retry again later.
func TestABudgetRefusesRetriesBeyondItsShare(t *testing.T) {
	now := time.Unix(0, 0)
	b := newBudget(0.1, 1, 5, func() time.Time { return now })
	got := 0
	for range 100 { // a storm: every request fails and wants a retry
		b.Attempt()
		if b.Retry() {
			got++
		}
	}
	// 5 tokens to start with, then 0.1 per attempt: 5 + 10 retries at most.
	if got > 15 || got < 14 {
		t.Errorf("%d retries allowed for 100 failed attempts, want 14..15 (5 + 10 %%)", got)
	}
	if b.Retry() {
		t.Error("a retry was allowed with the budget spent")
	}
	now = now.Add(3 * time.Second)
	for i := range 3 {
		if !b.Retry() {
			t.Fatalf("retry %d after 3 s of floor (1/s) refused", i+1)
		}
	}
	if b.Retry() {
		t.Error("a fourth retry after 3 s of a 1/s floor was allowed")
	}
}

func TestSleepEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if Sleep(ctx, time.Hour) {
		t.Error("Sleep with a cancelled context reported that it waited")
	}
	if !Sleep(context.Background(), time.Millisecond) {
		t.Error("Sleep(1 ms) reported that it did not wait")
	}
}
