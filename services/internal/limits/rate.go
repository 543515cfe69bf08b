// Package limits holds the limits against hostile callers that are not a
// property of one request: a per-caller token-bucket rate limit. (Request
// sizes, page bounds and quotas are checked where the request is understood:
// auth, node, gateway, store.)
package limits

import (
	"sync"
	"time"
)

// Rate is a token bucket per caller key: rate tokens per second, up to burst.
// Safe for concurrent use; a zero or negative rate allows everything.
type Rate struct {
	rate  float64
	burst float64
	now   func() time.Time

	mu      sync.Mutex // guards buckets and swept
	buckets map[string]*bucket
	swept   time.Time
}

type bucket struct {
	tokens float64
	at     time.Time
}

// maxCallers bounds the buckets kept; full buckets idle for a second are swept first.
const maxCallers = 65536

// NewRate allows rate requests per second per caller with bursts of burst.
func NewRate(rate float64, burst int) *Rate {
	return &Rate{rate: rate, burst: float64(max(burst, 1)), now: time.Now, buckets: map[string]*bucket{}}
}

// WithClock reads time from now (tests).
func (r *Rate) WithClock(now func() time.Time) *Rate { r.now = now; return r }

// Allow takes one token from caller's bucket, reporting whether there was one.
func (r *Rate) Allow(caller string) bool {
	if r == nil || r.rate <= 0 {
		return true
	}
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.buckets[caller]
	if b == nil {
		if len(r.buckets) >= maxCallers {
			r.sweep(now)
		}
		b = &bucket{tokens: r.burst, at: now}
		r.buckets[caller] = b
	}
	b.tokens = min(r.burst, b.tokens+now.Sub(b.at).Seconds()*r.rate)
	b.at = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// sweep forgets callers whose bucket has refilled (they lose nothing); if
// that frees nothing, it forgets everyone (a flood of new callers each gets a
// fresh bucket, which is what a new caller gets anyway).
func (r *Rate) sweep(now time.Time) {
	for k, b := range r.buckets {
		if b.tokens+now.Sub(b.at).Seconds()*r.rate >= r.burst {
			delete(r.buckets, k)
		}
	}
	if len(r.buckets) >= maxCallers {
		clear(r.buckets)
	}
}
