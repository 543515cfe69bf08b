package store

import (
	"bufio"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/satpage/satpage/services/internal/errs"
)

// Usage is a backend that knows how full it is.
type Usage interface {
	// Usage is the bytes in use and the limit (0: none).
	Usage(ctx context.Context) (used, limit int64, err error)
}

// Usage reads used_memory and maxmemory from INFO memory.
func (r *Redis) Usage(ctx context.Context) (int64, int64, error) {
	info, err := r.c.Info(ctx, "memory").Result()
	if err != nil {
		return 0, 0, wrap(err, "INFO memory")
	}
	var used, limit int64
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":")
		if !ok {
			continue
		}
		switch k {
		case "used_memory":
			used, _ = strconv.ParseInt(v, 10, 64)
		case "maxmemory":
			limit, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	return used, limit, nil
}

// Quota refuses new page frames (PutFrames, AdoptFrames: pages created or
// moved here) with errs.ErrResourceExhausted once the backend is above a
// fraction of its limit. Everything else passes, so a satellite that is full
// can still end sessions, hand them over and release pages: Redis with
// noeviction refuses writes (even the scripts that delete) once it is at its
// maxmemory, and the quota keeps it below. Usage is read at most every
// refresh (1 s); the bytes stored since are added to it as an estimate.
type Quota struct {
	PageStore
	usage    Usage
	fraction float64
	refresh  time.Duration

	mu    sync.Mutex // guards the fields below
	used  int64
	limit int64
	at    time.Time
	added int64
}

// frameOverhead is an upper bound of Redis's cost of a hash field beyond its
// data (measured here: about 4.5 KiB per 4 KiB frame, allocator size classes included).
const frameOverhead = 640

// WithQuota wraps s when it reports its usage and fraction is in (0, 1).
func WithQuota(s PageStore, fraction float64) PageStore {
	u, ok := s.(Usage)
	if !ok || fraction <= 0 || fraction >= 1 {
		return s
	}
	// A reading costs an INFO round trip to Redis; at 100 ms, a busy satellite made
	// one per 6 one-page faults (bench-services). The estimate only errs high
	// (deleted frames are not subtracted) and a refusal re-reads, so a longer
	// interval never refuses wrongly.
	return &Quota{PageStore: s, usage: u, fraction: fraction, refresh: time.Second}
}

func (q *Quota) admit(ctx context.Context, frames []Frame) error {
	var bytes int64
	for _, f := range frames {
		bytes += int64(len(f.Data)) + frameOverhead
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	read := func() error {
		used, limit, err := q.usage.Usage(ctx)
		if err != nil {
			return err
		}
		q.used, q.limit, q.at, q.added = used, limit, time.Now(), 0
		return nil
	}
	// Re-read when stale, or when the estimate has grown by 1/64 of the limit
	// (so the estimate's error stays a small share of the headroom).
	if time.Since(q.at) > q.refresh || (q.limit > 0 && q.added > q.limit/64) {
		if err := read(); err != nil {
			return err
		}
	}
	if q.limit <= 0 {
		return nil
	}
	quota := int64(q.fraction * float64(q.limit))
	if q.used+q.added+bytes > quota && time.Since(q.at) > time.Millisecond {
		// About to refuse on an estimate: refuse only on a fresh reading (frames
		// deleted since, e.g. by an ended session, count at once).
		if err := read(); err != nil {
			return err
		}
	}
	if q.used+q.added+bytes > quota {
		return fmt.Errorf("page store holds %d of %d bytes (quota %.0f %% = %d): %d new frames refused; ending or handing over sessions still works: %w",
			q.used+q.added, q.limit, 100*q.fraction, quota, len(frames), errs.ErrResourceExhausted)
	}
	q.added += bytes
	return nil
}

// PutFrames stores frames within the quota.
func (q *Quota) PutFrames(ctx context.Context, session string, frames []Frame) error {
	if err := q.admit(ctx, frames); err != nil {
		return err
	}
	return q.PageStore.PutFrames(ctx, session, frames)
}

// AdoptFrames stores frames within the quota.
func (q *Quota) AdoptFrames(ctx context.Context, session string, frames []Frame, owner uint32) error {
	if err := q.admit(ctx, frames); err != nil {
		return err
	}
	return q.PageStore.AdoptFrames(ctx, session, frames, owner)
}

// AdoptAnswered stores frames within the quota (the answer is not counted:
// refusing it would refuse reads).
func (q *Quota) AdoptAnswered(ctx context.Context, session string, frames []Frame, owner uint32, answers string, answer Frame) error {
	if err := q.admit(ctx, frames); err != nil {
		return err
	}
	return q.PageStore.AdoptAnswered(ctx, session, frames, owner, answers, answer)
}

// FramePages passes through a quota.
func (q *Quota) FramePages(ctx context.Context, session string) ([]uint32, error) {
	l, ok := q.PageStore.(FrameLister)
	if !ok {
		return nil, fmt.Errorf("store %T lists no frames: %w", q.PageStore, errs.ErrInvalid)
	}
	return l.FramePages(ctx, session)
}
