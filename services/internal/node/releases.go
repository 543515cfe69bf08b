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
	"github.com/satpage/satpage/services/internal/store"
)

// releaseBatch is how many moved pages a node collects per session before
// storing the held ones and sending the releases; a handover, a proactive move,
// SessionFrames and EndSession store and send what is pending first.
const releaseBatch = 64

// maxHeldBytes bounds the frames of one session's read faults held in memory
// before their adopt is stored: beyond it the next read fault stores them
// before it answers (commitChunkBytes: one store step).
const maxHeldBytes = commitChunkBytes

// DefaultHeldWait is the longest a session's read faults are held before
// their adopt is stored (Options.HeldWait; docs/services.md, "Protocol"). A
// session that moves 64 pages a second or more fills its batch first, so the
// timer costs the loaded path only arming and stopping it once per batch; a
// quiet one has its old owners released within a second instead of at its
// next operation; and a crash of the serving satellite makes it redo at most
// the last second of each session's moves, the second the failure detector's
// probe deadline (the simulation's recovery_s) gives a failure.
const DefaultHeldWait = time.Second

// Timer is a timer armed by Options.AfterFunc: Stop reports whether it
// stopped the timer before its function started (time.Timer's Stop).
type Timer interface{ Stop() bool }

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
//
// held are the read faults answered before their adopt is stored (a read
// changes no page, and the old owner keeps its copy until the adopt is
// stored): their frames wait here and are stored by the session's next
// background send, in one store step, before the releases it sends; a request
// that changes something (a write, a created page, a request_id's answer)
// stores them in its own step, and one that reads a held page stores them
// first. Should the store refuse them (this satellite was fenced, its session
// taken over or ended) or this satellite die first, they are dropped: the old
// owners were not released and still hold the pages, which the table still
// names (heldMoves).
//
// Held faults wait at most wait (Options.HeldWait): the first fault held for
// a session arms one timer (heldMoves.timer), which whatever stores or drops
// them stops; when it fires first, heldWaitPassed stores them and sends the
// session's releases, as a batch does. No fault after the first touches it.
type releases struct {
	mu      sync.Mutex                            // guards m, held, sending and closed
	m       map[string]map[uint32]*pendingRelease // session -> old owner -> pages
	held    map[string]*heldMoves                 // session -> read faults answered, adopt not yet stored
	sending map[string]*backgroundSend            // session -> its background send running
	closed  bool                                  // set by Close: no background send starts, no timer is armed after it

	// wg counts the background sends running and the held faults' timers
	// armed or running (Add under mu, before closed is set; a timer stopped
	// before it fired is Done by whoever stopped it, one that fired by itself).
	wg   sync.WaitGroup
	stop context.Context    // done when Close gives up waiting: the sends are cancelled
	halt context.CancelFunc // ends stop

	wait      time.Duration                         // Options.HeldWait
	afterFunc func(d time.Duration, f func()) Timer // Options.AfterFunc
	waited    func(session string, h *heldMoves)    // what a timer runs: Node.heldWaitPassed
}

// newReleases is a node's releases, its held faults waiting at most wait on
// timers afterFunc arms (New sets waited).
func newReleases(wait time.Duration, afterFunc func(time.Duration, func()) Timer) releases {
	stop, halt := context.WithCancel(context.Background())
	return releases{m: map[string]map[uint32]*pendingRelease{}, held: map[string]*heldMoves{},
		sending: map[string]*backgroundSend{}, stop: stop, halt: halt, wait: wait, afterFunc: afterFunc}
}

type pendingRelease struct {
	pages []uint32
	tNs   int64
}

// heldMoves are one session's read faults answered before their adopt is
// stored: the moved frames and where each came from (released once stored).
type heldMoves struct {
	// ctx is the first held fault's request context without its cancel: it
	// carries that request's pin on the replicated store (lockSession), so
	// the adopt fails when the store was restored from the copies since (a
	// takeover fenced this satellite).
	ctx    context.Context
	frames []store.Frame
	moves  []fetched
	pages  map[uint32]struct{}
	bytes  int
	timer  Timer // fires wait after the first of them was held; nil once stopped (r.mu)
}

// backgroundSend is a session's background send running.
type backgroundSend struct {
	done   chan struct{}       // closed when the send ends
	stored chan struct{}       // closed once its held frames are stored (or refused)
	pages  map[uint32]struct{} // the held pages it stores
}

// pending is how many pages of session are held or queued for release (r.mu held).
func (r *releases) pending(session string) int {
	n := 0
	if h := r.held[session]; h != nil {
		n += len(h.frames)
	}
	for _, q := range r.m[session] {
		n += len(q.pages)
	}
	return n
}

// queue queues the release of a stored move and returns how many pages of
// session are pending.
func (r *releases) queue(session string, m fetched) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.m[session] = addRelease(r.m[session], m)
	return r.pending(session)
}

// hold keeps a read fault's moved frames until they are stored and returns
// how many pages of session are pending and the bytes held.
func (r *releases) hold(ctx context.Context, session string, frames []store.Frame, moves []fetched) (int, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := r.held[session]
	if h == nil {
		h = &heldMoves{ctx: context.WithoutCancel(ctx), pages: map[uint32]struct{}{}}
		r.held[session] = h
		if !r.closed { // after Close began, Close stores what is held
			r.wg.Add(1)
			h.timer = r.afterFunc(r.wait, func() { r.waited(session, h) })
		}
	}
	h.frames = append(h.frames, frames...)
	h.moves = append(h.moves, moves...)
	for _, f := range frames {
		h.pages[f.Page] = struct{}{}
		h.bytes += len(f.Data)
	}
	return r.pending(session), h.bytes
}

// takeHeld removes and returns session's held faults (nil: none).
func (r *releases) takeHeld(session string) *heldMoves {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.unhold(session)
}

// unhold removes and returns session's held faults (nil: none) and stops
// their timer (r.mu held).
func (r *releases) unhold(session string) *heldMoves {
	h := r.held[session]
	if h != nil {
		delete(r.held, session)
		r.disarm(h)
	}
	return h
}

// disarm stops h's timer (r.mu held). One that has fired already runs on,
// finds h no longer held (or Close begun) and does nothing.
func (r *releases) disarm(h *heldMoves) {
	if h.timer != nil && h.timer.Stop() {
		r.wg.Done()
	}
	h.timer = nil
}

// stored queues the releases of held faults now stored.
func (r *releases) stored(session string, h *heldMoves) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range h.moves {
		r.m[session] = addRelease(r.m[session], m)
	}
}

// take removes and returns what is pending for session.
func (r *releases) take(session string) map[uint32]*pendingRelease {
	r.mu.Lock()
	defer r.mu.Unlock()
	byOwner := r.m[session]
	delete(r.m, session)
	return byOwner
}

// releaseInBackground stores what is held for session and then sends what is
// pending, unless a background send of the session is already running (the
// caller holds the session lock).
func (n *Node) releaseInBackground(ctx context.Context, session string) {
	r := &n.releases
	r.mu.Lock()
	b, byOwner, h := r.beginSend(session)
	if b != nil {
		r.wg.Add(1)
	}
	r.mu.Unlock()
	if b == nil {
		return // what is pending goes with the next batch or the next flush (or Close)
	}
	go func() {
		defer r.wg.Done()
		n.runSend(ctx, session, b, byOwner, h)
	}()
}

// beginSend takes what session has pending and held for a send, and returns
// it with the send registered (r.mu held by the caller, who holds the session
// lock); nil when a send of the session is running or Close has begun.
func (r *releases) beginSend(session string) (*backgroundSend, map[uint32]*pendingRelease, *heldMoves) {
	if r.sending[session] != nil || r.closed {
		return nil, nil, nil
	}
	byOwner := r.m[session]
	delete(r.m, session)
	h := r.unhold(session)
	b := &backgroundSend{done: make(chan struct{}), stored: make(chan struct{})}
	if h != nil {
		b.pages = h.pages
	}
	r.sending[session] = b
	return b, byOwner, h
}

// runSend is the send beginSend registered: it stores h, then sends the
// releases of byOwner and of h once stored, within releaseTimeout of ctx
// (without its cancel) and until Close gives up waiting.
func (n *Node) runSend(ctx context.Context, session string, b *backgroundSend, byOwner map[uint32]*pendingRelease, h *heldMoves) {
	r := &n.releases
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	defer context.AfterFunc(r.stop, cancel)()
	if h != nil && n.storeHeld(ctx, session, h) {
		for _, m := range h.moves {
			byOwner = addRelease(byOwner, m)
		}
	}
	close(b.stored)
	n.sendReleases(ctx, session, byOwner)
	r.mu.Lock()
	delete(r.sending, session)
	r.mu.Unlock()
	close(b.done)
}

// heldWaitPassed runs when the timer of h, the faults held for session, fires
// (HeldWait after the first of them was held): unless they were stored or
// dropped meanwhile, it stores them and sends the session's pending releases,
// as a batch's background send does, here in the timer's goroutine. It waits
// for the session's running send first (its held faults are stored in order),
// and takes the session lock only to take what is pending, as every operation
// that starts a send does. The timer counts in Close's wait group (r.wg).
func (n *Node) heldWaitPassed(session string, h *heldMoves) {
	r := &n.releases
	defer r.wg.Done()
	for {
		r.mu.Lock()
		running, still := r.sending[session], r.held[session] == h && !r.closed
		r.mu.Unlock()
		if !still {
			return // stored or dropped meanwhile, or Close stores them
		}
		if running != nil {
			select {
			case <-running.done:
			case <-r.stop.Done():
				return // Close gave up waiting: it drops what is held
			}
			continue
		}
		unlock := n.locks.lock(session)
		r.mu.Lock()
		var b *backgroundSend
		var byOwner map[uint32]*pendingRelease
		if r.held[session] == h {
			b, byOwner, _ = r.beginSend(session) // takes h
		}
		r.mu.Unlock()
		unlock()
		if b != nil {
			n.runSend(h.ctx, session, b, byOwner, h)
			return
		}
		// Not held any more (stored meanwhile), or a send began: looked at again above.
	}
}

// addRelease queues m's pages for release at its old owner in byOwner (made
// when nil) and returns byOwner.
func addRelease(byOwner map[uint32]*pendingRelease, m fetched) map[uint32]*pendingRelease {
	if byOwner == nil {
		byOwner = map[uint32]*pendingRelease{}
	}
	p := byOwner[m.owner]
	if p == nil {
		p = &pendingRelease{}
		byOwner[m.owner] = p
	}
	p.pages = append(p.pages, m.pages...)
	p.tNs = m.tNs
	return byOwner
}

// storeHeld stores held faults (one store step per commitChunkBytes), within
// ctx's deadline and under the pin of the first of them, and reports whether
// it did; refused, they are dropped and none of their old owners is released
// (a step stored before one refused leaves stale copies there, never a lost
// page).
func (n *Node) storeHeld(ctx context.Context, session string, h *heldMoves) bool {
	pinned, cancel := context.WithCancel(h.ctx)
	defer cancel()
	defer context.AfterFunc(ctx, cancel)()
	if err := n.commit(pinned, session, h.frames, "", answerDone, nil); err != nil {
		n.log.WarnContext(ctx, "adopt of answered read faults refused; their old owners keep the pages",
			"session", session, "pages", len(h.frames), "err", err)
		return false
	}
	return true
}

// settleHeld makes the held faults of session that pages touch stored before
// a request reads them (the caller holds the session lock): it waits for a
// background send storing one of them, and stores the session's held faults
// now when one of them is among pages. It returns the error of a store that
// refused them (they are then dropped: the table still names their old owners).
func (n *Node) settleHeld(ctx context.Context, session string, pages []uint32) error {
	r := &n.releases
	r.mu.Lock()
	b, h := r.sending[session], r.held[session]
	r.mu.Unlock()
	if b != nil && touches(b.pages, pages) {
		select {
		case <-b.stored:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if h == nil || !touches(h.pages, pages) {
		return nil
	}
	return n.storeHeldNow(ctx, session)
}

// storeHeldNow stores the held faults of session, if any, and queues their
// releases (the caller holds the session lock). Refused, they are dropped (the
// table still names their old owners) and it returns ErrUnavailable.
func (n *Node) storeHeldNow(ctx context.Context, session string) error {
	h := n.releases.takeHeld(session)
	if h == nil {
		return nil // none, or stored meanwhile
	}
	if !n.storeHeld(ctx, session, h) {
		return fmt.Errorf("satellite %d could not store %d page(s) of session %q it read: %w", n.self, len(h.frames), session, errs.ErrUnavailable)
	}
	n.releases.stored(session, h)
	return nil
}

func touches(set map[uint32]struct{}, pages []uint32) bool {
	for _, p := range pages {
		if _, ok := set[p]; ok {
			return true
		}
	}
	return false
}

// flushReleases waits for the session's background send, then stores what is
// held and sends every pending release of session (the caller holds the
// session lock).
func (n *Node) flushReleases(ctx context.Context, session string) {
	n.releases.mu.Lock()
	b := n.releases.sending[session]
	n.releases.mu.Unlock()
	if b != nil {
		select {
		case <-b.done:
		case <-ctx.Done(): // the sends below then fail at once: stale copies, never lost pages
		}
	}
	_ = n.storeHeldNow(ctx, session) // refused: logged by storeHeld, the old owners keep the pages
	n.sendReleases(ctx, session, n.releases.take(session))
}

// closeReleases stops background sends from starting and the held faults'
// timers, waits for the sends running and a timer that fired (cancelling them
// once ctx ends: a cancelled release leaves a stale copy, never a lost page),
// then stores what is held and sends what is still pending within ctx.
func (n *Node) closeReleases(ctx context.Context) error {
	r := &n.releases
	r.mu.Lock()
	r.closed = true
	for _, h := range r.held {
		r.disarm(h) // stored below, within ctx
	}
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
	pending, held := r.m, r.held
	r.m, r.held = map[string]map[uint32]*pendingRelease{}, map[string]*heldMoves{}
	r.mu.Unlock()
	if err := ctx.Err(); err != nil {
		if len(pending) > 0 || len(held) > 0 {
			n.log.WarnContext(ctx, "node closed with releases unsent or read faults unstored; their old owners keep the pages",
				"sessions", len(pending)+len(held))
		}
		return err
	}
	for _, session := range slices.Sorted(maps.Keys(held)) {
		if h := held[session]; n.storeHeld(ctx, session, h) {
			for _, m := range h.moves {
				pending[session] = addRelease(pending[session], m)
			}
		}
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
