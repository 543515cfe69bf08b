// Package retry is the one way satpage waits before trying again: capped
// exponential backoff with jitter, and a retry budget that bounds how many
// retries a process sends beside its first attempts (docs/faults.md, "Start-up
// without storms"). A fleet that retries in lock step, or without bound, turns
// a slow moment into overload that outlives its cause: 150 satellites started
// at once sent routed requests again within 50 ms, looked names up at every
// attempt, and kept a loaded machine loaded (make e2e-swarm, 2026-11-27).
package retry

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"
)

// Backoff is capped exponential backoff with jitter: try n (0-based) waits
// First x 2^n, at most Max, then scaled by a random factor in
// [1 - Jitter, 1 + Jitter) so that peers that failed together do not try
// again together. The zero Jitter waits exactly.
type Backoff struct {
	First, Max time.Duration
	Jitter     float64 // 0..1
}

// Delay is the wait before try n+1 after n+1 failures (n = 0: after the first).
func (b Backoff) Delay(n int) time.Duration {
	d := b.First
	for i := 0; i < n && d < b.Max; i++ {
		d *= 2
	}
	d = min(d, b.Max)
	if b.Jitter > 0 {
		d = time.Duration(float64(d) * (1 - b.Jitter + 2*b.Jitter*rand.Float64()))
	}
	return d
}

// Sleep waits d unless ctx ends first; it reports whether it waited d.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// Budget bounds retries to a share of first attempts (as gRPC's retry
// throttling and Finagle's retry budget do): every first attempt deposits
// Ratio of a token, every retry withdraws one, and tokens also trickle in at
// Floor per second so that a quiet process may still retry now and then. The
// balance never exceeds Max. When the budget is spent, a retry is refused and
// the caller fails at once: under overload the retries that would have made it
// worse are the ones not sent. Safe for concurrent use.
type Budget struct {
	ratio, floor, most float64
	now                func() time.Time

	mu     sync.Mutex // guards tokens and at
	tokens float64
	at     time.Time // last trickle
}

// NewBudget returns a full budget: ratio tokens per first attempt, floor
// tokens per second, at most most tokens.
func NewBudget(ratio, floor, most float64) *Budget {
	return newBudget(ratio, floor, most, time.Now)
}

func newBudget(ratio, floor, most float64, now func() time.Time) *Budget {
	return &Budget{ratio: ratio, floor: floor, most: most, now: now, tokens: most, at: now()}
}

// refill adds the floor's trickle since the last call. b.mu must be held.
func (b *Budget) refill() {
	t := b.now()
	if dt := t.Sub(b.at).Seconds(); dt > 0 {
		b.tokens = min(b.most, b.tokens+dt*b.floor)
	}
	b.at = t
}

// Attempt records a first attempt.
func (b *Budget) Attempt() {
	b.mu.Lock()
	b.refill()
	b.tokens = min(b.most, b.tokens+b.ratio)
	b.mu.Unlock()
}

// Retry reports whether a retry may be sent now, and if so spends a token.
func (b *Budget) Retry() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill()
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}
