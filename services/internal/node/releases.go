package node

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/errs"
)

// releaseBatch is how many released pages a node collects per session before
// sending them; a handover, a proactive move, SessionFrames and EndSession send
// what is pending first.
const releaseBatch = 64

// releaseTimeout bounds a release sent in the background (the request that
// queued it has returned, so its deadline no longer applies).
const releaseTimeout = 30 * time.Second

// releases are the old owners' copies that a serving satellite has yet to
// release: the pages are already stored here and the table names this
// satellite, so until the release is sent the old owner merely keeps a stale
// copy (exactly the state a crash between the two steps leaves). Batching turns
// one relayed ReleasePages per page fault into one per 64, and a full batch is
// sent in the background so that no fault waits for it. At most one background
// send per session runs; every other operation of the session waits for it
// first (flushReleases), so releases reach an old owner before the table moves on.
// Node.Close waits for the background sends (wg) and cancels them (stop) when
// its deadline comes first.
type releases struct {
	mu      sync.Mutex                            // guards m, sending and closed
	m       map[string]map[uint32]*pendingRelease // session -> old owner -> pages
	sending map[string]chan struct{}              // session -> closed when its background send ends
	closed  bool                                  // set by Close: no background send starts after it

	wg   sync.WaitGroup     // background sends running (Add under mu, before closed is set)
	stop context.Context    // done when Close gives up waiting: the sends are cancelled
	halt context.CancelFunc // ends stop
}

func newReleases() releases {
	stop, halt := context.WithCancel(context.Background())
	return releases{m: map[string]map[uint32]*pendingRelease{}, sending: map[string]chan struct{}{}, stop: stop, halt: halt}
}

type pendingRelease struct {
	pages []uint32
	tNs   int64
}

// add queues pages for release at owner and returns how many are queued for the session.
func (r *releases) add(session string, owner uint32, pages []uint32, tNs int64) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	byOwner := r.m[session]
	if byOwner == nil {
		byOwner = map[uint32]*pendingRelease{}
		r.m[session] = byOwner
	}
	p := byOwner[owner]
	if p == nil {
		p = &pendingRelease{}
		byOwner[owner] = p
	}
	p.pages = append(p.pages, pages...)
	p.tNs = tNs
	n := 0
	for _, q := range byOwner {
		n += len(q.pages)
	}
	return n
}

// take removes and returns what is pending for session.
func (r *releases) take(session string) map[uint32]*pendingRelease {
	r.mu.Lock()
	defer r.mu.Unlock()
	byOwner := r.m[session]
	delete(r.m, session)
	return byOwner
}

// releaseInBackground sends what is pending for session unless a background
// send of the session is already running (the caller holds the session lock).
func (n *Node) releaseInBackground(ctx context.Context, session string) {
	r := &n.releases
	r.mu.Lock()
	if r.sending[session] != nil || r.closed {
		r.mu.Unlock()
		return // what is pending goes with the next batch or the next flush (or Close)
	}
	byOwner := r.m[session]
	delete(r.m, session)
	done := make(chan struct{})
	r.sending[session] = done
	r.wg.Add(1)
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	unhook := context.AfterFunc(r.stop, cancel)
	go func() {
		defer r.wg.Done()
		defer unhook()
		defer cancel()
		n.sendReleases(ctx, session, byOwner)
		r.mu.Lock()
		delete(r.sending, session)
		r.mu.Unlock()
		close(done)
	}()
}

// flushReleases waits for the session's background send, then sends every
// pending release of session (the caller holds the session lock).
func (n *Node) flushReleases(ctx context.Context, session string) {
	n.releases.mu.Lock()
	done := n.releases.sending[session]
	n.releases.mu.Unlock()
	if done != nil {
		select {
		case <-done:
		case <-ctx.Done(): // the sends below then fail at once: stale copies, never lost pages
		}
	}
	n.sendReleases(ctx, session, n.releases.take(session))
}

// closeReleases stops background sends from starting, waits for those running
// (cancelling them once ctx ends: a cancelled release leaves a stale copy, never
// a lost page), then sends what is still pending within ctx.
func (n *Node) closeReleases(ctx context.Context) error {
	r := &n.releases
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		r.halt()
		<-done
	}
	r.mu.Lock()
	pending := r.m
	r.m = map[string]map[uint32]*pendingRelease{}
	r.mu.Unlock()
	if err := ctx.Err(); err != nil {
		if len(pending) > 0 {
			n.log.WarnContext(ctx, "node closed with releases unsent; stale copies left at old owners", "sessions", len(pending))
		}
		return err
	}
	for _, session := range slices.Sorted(maps.Keys(pending)) {
		n.sendReleases(ctx, session, pending[session])
	}
	return ctx.Err()
}

func (n *Node) sendReleases(ctx context.Context, session string, byOwner map[uint32]*pendingRelease) {
	for _, owner := range slices.Sorted(maps.Keys(byOwner)) {
		p := byOwner[owner]
		for chunk := range slices.Chunk(p.pages, MaxBatchPages) {
			n.release(ctx, session, owner, chunk, p.tNs)
		}
	}
}

// release asks the old owner to delete pages now stored here. A failure leaves a
// stale copy there, never a lost page (the gateway's EndSession sweeps the trail).
func (n *Node) release(ctx context.Context, session string, owner uint32, pages []uint32, tNs int64) {
	err := n.originate(ctx, owner, tNs, "ReleasePages", func(c satpagev1.SatelliteServiceClient, r *satpagev1.Route) error {
		_, err := c.ReleasePages(ctx, &satpagev1.ReleasePagesRequest{Route: r, SessionId: session, Pages: pages, NewOwner: n.self})
		return err
	})
	if err != nil {
		n.log.WarnContext(ctx, "release at old owner failed; stale copy left there",
			"session", session, "owner", owner, "pages", len(pages), "err", err)
	}
}

// ReleaseHere serves ReleasePages at the old owner: it deletes its copies of
// pages now stored at newOwner. The store refuses pages this satellite's own
// page table says it owns: a release meant for an old owner never deletes the
// serving satellite's copy.
func (n *Node) ReleaseHere(ctx context.Context, session string, pages []uint32, newOwner uint32) (int, error) {
	if newOwner == n.self {
		return 0, fmt.Errorf("satellite %d cannot release pages to itself: %w", n.self, errs.ErrInvalid)
	}
	if err := n.settleStale(ctx, session); err != nil {
		return 0, err
	}
	return n.store.ReleaseFrames(ctx, session, pages, n.self)
}
