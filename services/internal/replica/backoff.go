package replica

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/satpage/satpage/services/internal/liveness"
	"github.com/satpage/satpage/services/internal/retry"
)

// Per-replica backoff of failed copies (docs/faults.md, "Under load"): after a
// snapshot to a replica fails, the next attempt waits retryFirst, then twice as
// long after each failure, up to retryMax. A replica whose copies have failed
// for asideAfter is set aside: the primary's member set skips it as it skips a
// dead satellite, so the next live satellite behind holds the copies, until a
// snapshot to the replica succeeds (the upkeep tries one at the backoff's pace,
// and a replica that asks for its copy gets one at once). A change meanwhile
// waits for the replica's next try or for it to be set aside, whichever comes
// first: a replica that cannot take a copy (restarting, or out of reach while
// the detector holds it alive) delays its primary's changes by at most
// asideAfter and fails none. The replica's answer (a copy stored, or it asking
// for a snapshot) ends the backoff. Logs say when a replica starts failing, is
// set aside and is back, not every attempt.
const (
	retryFirst = time.Second
	retryMax   = 8 * time.Second
	// retryJitter spreads the next tries of primaries whose replica failed for
	// all of them at once (a loaded machine), so they do not try again together.
	retryJitter = 0.2
	// asideAfter is the failure detector's own bound (liveness.DetectionBound):
	// a replica that takes no copy for as long as a silent satellite takes to be
	// found dead is replaced as a dead one would be. On Swarm a killed replica's
	// new task took 36 s to be reached, and its primary failed every change
	// meanwhile (make e2e-swarm: "change 124 stored at 0 replica(s) of 1, not at
	// [14] (backing off 4.181s)").
	asideAfter = liveness.DetectionBound
)

// backoff is the retry state of every replica. Safe for concurrent use.
type backoff struct {
	first, most time.Duration
	aside       time.Duration // asideAfter
	jitter      float64       // retryJitter (tests: 0, exact)
	log         *slog.Logger
	mu          sync.Mutex // guards at
	at          map[uint32]*tries
}

type tries struct {
	failures int
	next     time.Time
	acked    time.Time // last copy the replica stored
	// since: the first failure since the replica last stored a copy (zero:
	// none). A reset (the replica asked for its copy) keeps it: only a copy
	// stored proves the replica takes copies again.
	since time.Time
	aside bool // set aside (since + aside passed); until it stores a copy
}

func newBackoff(log *slog.Logger) *backoff {
	return &backoff{first: retryFirst, most: retryMax, aside: asideAfter, jitter: retryJitter, log: log, at: map[uint32]*tries{}}
}

func (b *backoff) get(m uint32) *tries {
	r := b.at[m]
	if r == nil {
		r = &tries{}
		b.at[m] = r
	}
	return r
}

// due reports whether a copy to m may be tried now, and if not, how long a
// change waits for m: until its next try or until it is set aside, whichever
// comes first (never more than the aside bound).
func (b *backoff) due(m uint32, now time.Time) (bool, time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.at[m]
	if r == nil || !now.Before(r.next) {
		return true, 0
	}
	wait := r.next.Sub(now)
	if !r.since.IsZero() && !r.aside {
		wait = min(wait, max(r.since.Add(b.aside).Sub(now), 0))
	}
	return false, wait
}

// setAside reports whether m is set aside at now: its copies have failed
// since b.aside ago or longer, and none succeeded since. The first time it is
// so is logged.
func (b *backoff) setAside(ctx context.Context, m uint32, now time.Time) bool {
	b.mu.Lock()
	r := b.at[m]
	if r == nil || r.since.IsZero() {
		b.mu.Unlock()
		return false
	}
	if r.aside {
		b.mu.Unlock()
		return true
	}
	if now.Sub(r.since) < b.aside {
		b.mu.Unlock()
		return false
	}
	r.aside = true
	since := r.since
	b.mu.Unlock()
	b.log.WarnContext(ctx, "replica set aside: it took no copy since its first failure; the next satellite behind holds the copies until it takes one",
		"replica", m, "failing_for", now.Sub(since).Round(time.Millisecond), "bound", b.aside)
	return true
}

// isAside reports whether m was set aside (without moving it there).
func (b *backoff) isAside(m uint32) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.at[m]
	return r != nil && r.aside
}

// failed records a failed copy to m; the first failure of a run is logged.
func (b *backoff) failed(ctx context.Context, m uint32, what string, err error) {
	b.mu.Lock()
	r := b.get(m)
	r.failures++
	wait := retry.Backoff{First: b.first, Max: b.most, Jitter: b.jitter}.Delay(r.failures - 1)
	now := time.Now()
	r.next = now.Add(wait)
	if r.since.IsZero() {
		r.since = now
	}
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
	failures, aside, since := r.failures, r.aside, r.since
	r.failures, r.next, r.acked, r.since, r.aside = 0, time.Time{}, now, time.Time{}, false
	b.mu.Unlock()
	switch {
	case aside:
		b.log.InfoContext(ctx, "replica set aside is in sync again and back in the replica set", "replica", m,
			"after", now.Sub(since).Round(time.Millisecond))
	case failures > 0:
		b.log.InfoContext(ctx, "replica is in sync again", "replica", m, "after_failures", failures)
	}
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

// keep forgets the replicas not in members, but those set aside: they stay
// aside (also while the detector holds them dead) until one stores a copy, so
// a replica that calls (and is held alive) but cannot be reached is not taken
// back into the set, to fail changes again, before it has taken a copy.
func (b *backoff) keep(members []uint32) {
	b.mu.Lock()
	for m, r := range b.at {
		if !r.aside && !slices.Contains(members, m) {
			delete(b.at, m)
		}
	}
	b.mu.Unlock()
}
