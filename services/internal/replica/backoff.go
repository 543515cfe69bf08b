package replica

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/satpage/satpage/services/internal/retry"
)

// Per-replica backoff of failed copies (docs/faults.md, "Under load"): after a
// snapshot to a replica fails, the next attempt waits retryFirst, then twice as
// long after each failure, up to retryMax; a change meanwhile waits out a short
// backoff (up to 2 x retryFirst) and tries again, and fails at once as
// unavailable during a longer one (the write is not acknowledged). The
// replica's answer (a copy stored, or it asking for a snapshot) ends the backoff.
// Logs say when a replica starts failing and when it is back, not every attempt.
const (
	retryFirst = time.Second
	retryMax   = 8 * time.Second
	// retryJitter spreads the next tries of primaries whose replica failed for
	// all of them at once (a loaded machine), so they do not try again together.
	retryJitter = 0.2
)

// backoff is the retry state of every replica. Safe for concurrent use.
type backoff struct {
	first, most time.Duration
	jitter      float64 // retryJitter (tests: 0, exact)
	log         *slog.Logger
	mu          sync.Mutex // guards at
	at          map[uint32]*tries
}

type tries struct {
	failures int
	next     time.Time
	acked    time.Time // last copy the replica stored
}

func newBackoff(log *slog.Logger) *backoff {
	return &backoff{first: retryFirst, most: retryMax, jitter: retryJitter, log: log, at: map[uint32]*tries{}}
}

func (b *backoff) get(m uint32) *tries {
	r := b.at[m]
	if r == nil {
		r = &tries{}
		b.at[m] = r
	}
	return r
}

// due reports whether a copy to m may be tried now, and if not, how long until it may.
func (b *backoff) due(m uint32, now time.Time) (bool, time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.at[m]
	if r == nil || !now.Before(r.next) {
		return true, 0
	}
	return false, r.next.Sub(now)
}

// failed records a failed copy to m; the first failure of a run is logged.
func (b *backoff) failed(ctx context.Context, m uint32, what string, err error) {
	b.mu.Lock()
	r := b.get(m)
	r.failures++
	wait := retry.Backoff{First: b.first, Max: b.most, Jitter: b.jitter}.Delay(r.failures - 1)
	r.next = time.Now().Add(wait)
	failures := r.failures
	b.mu.Unlock()
	if failures == 1 {
		b.log.WarnContext(ctx, "replica is failing; retrying with backoff", "replica", m, "what", what, "retry_in", wait, "err", err)
	} else {
		b.log.DebugContext(ctx, "replica still failing", "replica", m, "what", what, "failures", failures, "retry_in", wait, "err", err)
	}
}

// ok records that m stored a copy; a replica back from failing is logged.
func (b *backoff) ok(ctx context.Context, m uint32) {
	now := time.Now()
	b.mu.Lock()
	r := b.get(m)
	failures := r.failures
	r.failures, r.next, r.acked = 0, time.Time{}, now
	b.mu.Unlock()
	if failures > 0 {
		b.log.InfoContext(ctx, "replica is in sync again", "replica", m, "after_failures", failures)
	}
}

// shortWait is the longest backoff a change waits out rather than failing at
// once: the first two steps (a replica that just started failing).
func (b *backoff) shortWait() time.Duration {
	return time.Duration(float64(2*b.first) * (1 + b.jitter))
}

// reset ends m's backoff (it answered: it asked for a snapshot).
func (b *backoff) reset(m uint32) {
	b.mu.Lock()
	if r := b.at[m]; r != nil {
		r.failures, r.next = 0, time.Time{}
	}
	b.mu.Unlock()
}

// ackedSince reports whether m stored a copy at or after t.
func (b *backoff) ackedSince(m uint32, t time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.at[m]
	return r != nil && !r.acked.Before(t)
}

// keep forgets the replicas not in members.
func (b *backoff) keep(members []uint32) {
	b.mu.Lock()
	for m := range b.at {
		keep := false
		for _, x := range members {
			keep = keep || x == m
		}
		if !keep {
			delete(b.at, m)
		}
	}
	b.mu.Unlock()
}
