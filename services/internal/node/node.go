// Package node is the satellite node: it serves the page tables of the
// sessions it serves and owns page frames in its PageStore, moves pages to
// itself on access (on-demand) or at handover (proactive), and relays
// satellite-to-satellite requests hop by hop over +Grid ISLs.
//
// A move is crash-safe: the new owner fetches the pages (the old owner keeps
// them), stores them and points its page table at itself, and only then asks
// the old owner to release them. A crash between the steps leaves a stale
// copy at the old owner, never a lost page; the page table names one owner.
package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/constellation"
	"github.com/satpage/satpage/services/internal/errs"
	"github.com/satpage/satpage/services/internal/metrics"
	"github.com/satpage/satpage/services/internal/peers"
	"github.com/satpage/satpage/services/internal/store"
)

// Limits on request sizes, so a hostile request cannot make a node allocate without bound.
const (
	MaxSessionIDBytes = 256
	MaxBatchPages     = 4096    // pages in one FetchPages / ReleasePages / MovePages chunk
	MaxTableEntries   = 1 << 20 // entries in one AcceptTable
	MaxReadPages      = 1 << 16 // accesses in one ReadPages
	moveChunk         = 256     // pages per proactive FetchPages (keeps messages ~1 MiB at 4 KiB)
)

// Node is one satellite. Safe for concurrent use.
type Node struct {
	self      uint32
	grid      *constellation.Grid
	store     store.PageStore
	peers     peers.Dialer
	log       *slog.Logger
	m         *metrics.Node
	pageBytes int
	locks     sessionLocks
	releases  releases
}

// Options are what New needs.
type Options struct {
	Index     uint32
	Grid      *constellation.Grid
	Store     store.PageStore
	Peers     peers.Dialer
	Logger    *slog.Logger
	Metrics   *metrics.Node
	PageBytes int
}

// New builds a node (it owns neither the store nor the peers: the caller closes them).
func New(o Options) (*Node, error) {
	if o.Grid == nil || o.Store == nil || o.Peers == nil {
		return nil, fmt.Errorf("node: grid, store and peers are required: %w", errs.ErrInvalid)
	}
	if err := o.Grid.Check(o.Index); err != nil {
		return nil, fmt.Errorf("node index: %w", err)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Metrics == nil {
		o.Metrics = metrics.NewNode(int(o.Index))
	}
	if o.PageBytes <= 0 {
		o.PageBytes = 4096
	}
	return &Node{self: o.Index, grid: o.Grid, store: o.Store, peers: o.Peers,
		log: o.Logger.With("satellite", o.Index), m: o.Metrics, pageBytes: o.PageBytes,
		locks:    sessionLocks{m: map[string]*sessionLock{}},
		releases: releases{m: map[string]map[uint32]*pendingRelease{}, sending: map[string]chan struct{}{}}}, nil
}

// Index is this satellite's index.
func (n *Node) Index() uint32 { return n.self }

// sessionLocks serialises the operations of one session at its serving
// satellite (page-table read-modify-write, moves, handover). Only the serving
// satellite takes a session's lock, and it is the only one that originates
// requests for that session, so two nodes never wait on each other.
type sessionLocks struct {
	mu sync.Mutex // guards m
	m  map[string]*sessionLock
}

type sessionLock struct {
	mu   sync.Mutex // held while a session operation runs
	refs int        // guarded by sessionLocks.mu
}

func (l *sessionLocks) lock(session string) func() {
	l.mu.Lock()
	e := l.m[session]
	if e == nil {
		e = &sessionLock{}
		l.m[session] = e
	}
	e.refs++
	l.mu.Unlock()
	e.mu.Lock()
	return func() {
		e.mu.Unlock()
		l.mu.Lock()
		if e.refs--; e.refs == 0 {
			delete(l.m, session)
		}
		l.mu.Unlock()
	}
}

// Access is the result of one page access at the serving satellite.
type Access struct {
	Data          []byte
	Hops          uint32
	Outcome       satpagev1.Outcome
	PreviousOwner uint32
}

func checkSession(session string) error {
	if session == "" {
		return fmt.Errorf("session_id is empty: %w", errs.ErrInvalid)
	}
	if len(session) > MaxSessionIDBytes {
		return fmt.Errorf("session_id of %d bytes exceeds %d: %w", len(session), MaxSessionIDBytes, errs.ErrInvalid)
	}
	return nil
}

func (n *Node) unknownHere(session string, err error) error {
	if errors.Is(err, errs.ErrUnknownSession) {
		return fmt.Errorf("session %q has no page table at satellite %d: %w", session, n.self, errs.ErrUnknownSession)
	}
	return err
}

// Access reads page (write == nil) or writes it, moving it here first when it
// is owned elsewhere and creating it when it never existed.
func (n *Node) Access(ctx context.Context, session string, page uint32, tNs int64, write []byte) (Access, error) {
	if write != nil && len(write) > n.pageBytes {
		return Access{}, fmt.Errorf("page %d of %d bytes exceeds the page size %d: %w", page, len(write), n.pageBytes, errs.ErrInvalid)
	}
	out, err := n.accesses(ctx, session, []uint32{page}, []int64{tNs}, write)
	if err != nil {
		return Access{}, err
	}
	return out[0], nil
}

// ReadPages reads pages in order, access i at scenario time tNs[i], with the
// outcome of each as if they were read one by one (a page read twice is moved
// once, then local). The faults of the batch go out together: one page-table
// lookup, one FetchPages per (owner, scenario time) and one store write each,
// so a batch of k faults costs a few round trips instead of 3k.
func (n *Node) ReadPages(ctx context.Context, session string, pages []uint32, tNs []int64) ([]Access, error) {
	if len(pages) != len(tNs) {
		return nil, fmt.Errorf("%d pages but %d scenario times: %w", len(pages), len(tNs), errs.ErrInvalid)
	}
	return n.accesses(ctx, session, pages, tNs, nil)
}

// faultKey groups the faults of a batch that travel together: same old owner,
// and the same scenario time, so the same ISL path as one by one.
type faultKey struct {
	owner uint32
	tNs   int64
}

// accesses runs a batch of reads, or a single write (write != nil, one page).
func (n *Node) accesses(ctx context.Context, session string, pages []uint32, tNs []int64, write []byte) ([]Access, error) {
	if err := checkSession(session); err != nil {
		return nil, err
	}
	defer n.locks.lock(session)()
	start := time.Now()
	owners, err := n.store.Owners(ctx, session, pages)
	if err != nil {
		return nil, n.unknownHere(session, err)
	}
	// Plan: classify each page's first access; later accesses of a page in the
	// batch find it here and copy the first one's data.
	out := make([]Access, len(pages))
	first := make(map[uint32]int, len(pages)) // page -> index of its first access
	var created []store.Frame
	var local []uint32
	var localAt []int
	faults := map[faultKey][]int{}
	var faultOrder []faultKey
	for i, p := range pages {
		if _, seen := first[p]; seen {
			continue
		}
		first[p] = i
		owner, ok := owners[p]
		switch {
		case !ok: // never created: create it here; a page never written holds no bytes
			data := write
			if data == nil {
				data = []byte{}
			}
			created = append(created, store.Frame{Page: p, Data: data})
			out[i] = Access{Data: data, Outcome: satpagev1.Outcome_OUTCOME_CREATED, PreviousOwner: n.self}
		case owner == n.self:
			local, localAt = append(local, p), append(localAt, i)
			out[i] = Access{Outcome: satpagev1.Outcome_OUTCOME_LOCAL, PreviousOwner: owner}
		default:
			k := faultKey{owner, tNs[i]}
			if faults[k] == nil {
				faultOrder = append(faultOrder, k)
			}
			faults[k] = append(faults[k], i)
			out[i] = Access{Outcome: satpagev1.Outcome_OUTCOME_MOVED, PreviousOwner: owner}
		}
	}
	if len(created) > 0 {
		if err := n.store.AdoptFrames(ctx, session, created, n.self); err != nil {
			return nil, err
		}
		n.m.Accesses.WithLabelValues("created").Add(float64(len(created)))
	}
	if len(local) > 0 {
		if write != nil {
			if err := n.store.PutFrames(ctx, session, []store.Frame{{Page: local[0], Data: write}}); err != nil {
				return nil, err
			}
			out[localAt[0]].Data = write
		} else {
			f, err := n.store.GetFrames(ctx, session, local)
			if err != nil {
				return nil, fmt.Errorf("satellite %d owns page(s) of session %q by its table but holds no frame: %w", n.self, session, err)
			}
			for j, i := range localAt {
				out[i].Data = f[j].Data
			}
		}
		n.m.Accesses.WithLabelValues("local").Add(float64(len(local)))
	}
	for _, k := range faultOrder {
		at := faults[k]
		for chunk := range slices.Chunk(at, moveChunk) {
			want := make([]uint32, len(chunk))
			for j, i := range chunk {
				want[j] = pages[i]
			}
			frames, hops, err := n.move(ctx, session, want, k.owner, k.tNs, "access")
			if err != nil {
				return nil, err
			}
			for j, i := range chunk {
				out[i].Data, out[i].Hops = frames[j].Data, hops
			}
			if write != nil {
				if err := n.store.PutFrames(ctx, session, []store.Frame{{Page: want[0], Data: write}}); err != nil {
					return nil, err
				}
				out[chunk[0]].Data = write
			}
			n.m.Accesses.WithLabelValues("moved").Add(float64(len(chunk)))
			h, took := n.m.FaultSeconds.WithLabelValues(strconv.Itoa(int(hops))), time.Since(start).Seconds()
			for range chunk {
				h.Observe(took)
			}
		}
	}
	for i, p := range pages {
		if j := first[p]; j != i {
			out[i] = Access{Data: out[j].Data, Outcome: satpagev1.Outcome_OUTCOME_LOCAL, PreviousOwner: n.self}
		}
	}
	return out, nil
}

// move brings pages owned by owner here: fetch (owner keeps them), store here,
// point the table here, then release at the owner. The caller holds the session lock.
func (n *Node) move(ctx context.Context, session string, pages []uint32, owner uint32, tNs int64, reason string) ([]store.Frame, uint32, error) {
	if err := n.grid.Check(owner); err != nil {
		return nil, 0, fmt.Errorf("page table of session %q names owner: %w", session, err)
	}
	var resp *satpagev1.FetchPagesResponse
	err := n.originate(ctx, owner, tNs, "FetchPages", func(c satpagev1.SatelliteServiceClient, r *satpagev1.Route) (err error) {
		resp, err = c.FetchPages(ctx, &satpagev1.FetchPagesRequest{Route: r, SessionId: session, Pages: pages})
		return err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("fetch %d page(s) of session %q from satellite %d: %w", len(pages), session, owner, err)
	}
	if len(resp.Pages) != len(pages) {
		return nil, 0, fmt.Errorf("satellite %d returned %d of %d pages: %w", owner, len(resp.Pages), len(pages), errs.ErrUnavailable)
	}
	frames := make([]store.Frame, len(resp.Pages))
	bytes := 0
	for i, p := range resp.Pages {
		if p.Page != pages[i] || len(p.Data) > n.pageBytes {
			return nil, 0, fmt.Errorf("satellite %d returned page %d (%d bytes) for page %d: %w", owner, p.Page, len(p.Data), pages[i], errs.ErrUnavailable)
		}
		frames[i] = store.Frame{Page: p.Page, Data: p.Data}
		bytes += len(p.Data)
	}
	// Store at the new owner (frames and table entries in one atomic step) before
	// the old owner deletes: never a lost page.
	if err := n.store.AdoptFrames(ctx, session, frames, n.self); err != nil {
		return nil, 0, err
	}
	if reason == "access" {
		// Releases of on-demand moves are batched per old owner and sent off
		// the fault's path (see releases).
		if n.releases.add(session, owner, pages, tNs) >= releaseBatch {
			n.releaseInBackground(ctx, session)
		}
	} else {
		n.release(ctx, session, owner, pages, tNs)
	}
	n.m.PagesMoved.WithLabelValues(reason).Add(float64(len(pages)))
	n.m.PageHops.WithLabelValues(reason).Add(float64(len(pages)) * float64(resp.Hops))
	n.m.PageBytes.WithLabelValues("in").Add(float64(bytes))
	return frames, resp.Hops, nil
}

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
type releases struct {
	mu      sync.Mutex                            // guards m and sending
	m       map[string]map[uint32]*pendingRelease // session -> old owner -> pages
	sending map[string]chan struct{}              // session -> closed when its background send ends
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
	if r.sending[session] != nil {
		r.mu.Unlock()
		return // what is pending goes with the next batch or the next flush
	}
	byOwner := r.m[session]
	delete(r.m, session)
	done := make(chan struct{})
	r.sending[session] = done
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	go func() {
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

// originate sends a routed request from this satellite to dest: straight to
// the first hop of the shortest path (the request then travels hop by hop).
// dest == self is handled by the same handler, in-process, with zero hops.
//
// An idempotent request that fails with Unavailable (a relay or the
// destination died with it in flight: connection reset) is sent again, whole
// path, by the origin only: relays never retry, so attempts do not multiply
// along the path. Wait-for-ready makes the next attempt wait for a restarting
// satellite, within the caller's deadline.
func (n *Node) originate(ctx context.Context, dest uint32, tNs int64, rpc string,
	call func(satpagev1.SatelliteServiceClient, *satpagev1.Route) error) error {
	if dest == n.self {
		return call(localClient{n}, &satpagev1.Route{Origin: n.self, Destination: dest, ScenarioTimeNs: tNs})
	}
	next, err := n.grid.NextHop(n.self, dest, tNs)
	if err != nil {
		return err
	}
	c, err := n.peers.Satellite(next)
	if err != nil {
		return err
	}
	backoff := retryBackoff
	for attempt := 1; ; attempt++ {
		n.m.RelayedHops.WithLabelValues(rpc).Inc()
		err = call(c, &satpagev1.Route{Origin: n.self, Destination: dest, ScenarioTimeNs: tNs, Hops: 1, Path: []uint32{n.self}})
		if err == nil || !idempotent[rpc] || attempt == retryAttempts || status.Code(err) != codes.Unavailable {
			return err
		}
		n.log.InfoContext(ctx, "routed request failed, sending it again", "rpc", rpc, "to", dest, "attempt", attempt, "err", err)
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return err
		}
		backoff *= 2
	}
}

// idempotent are the routed requests that may be sent again: FetchPages
// leaves the frames in place, ReleasePages and DropSession delete what is
// there, AcceptTable stores the same table again. (HandOver and MovePages
// change state in steps and are not routed.)
var idempotent = map[string]bool{"FetchPages": true, "ReleasePages": true, "AcceptTable": true, "DropSession": true}

const (
	retryAttempts = 4
	retryBackoff  = 50 * time.Millisecond // doubled after each attempt
)

// checkRoute validates a routed request arriving here.
func (n *Node) checkRoute(r *satpagev1.Route) error {
	if r == nil {
		return fmt.Errorf("route is missing: %w", errs.ErrInvalid)
	}
	if err := n.grid.Check(r.Destination); err != nil {
		return fmt.Errorf("route destination: %w", err)
	}
	if err := n.grid.Check(r.Origin); err != nil {
		return fmt.Errorf("route origin: %w", err)
	}
	if err := n.grid.CheckTime(r.ScenarioTimeNs); err != nil {
		return fmt.Errorf("route: %w", err)
	}
	if int(r.Hops) != len(r.Path) {
		return fmt.Errorf("route hops %d but path %v: %w", r.Hops, r.Path, errs.ErrInvalid)
	}
	if len(r.Path) > n.grid.Satellites() {
		return fmt.Errorf("route of %d hops is longer than the constellation: %w", len(r.Path), errs.ErrRelayLoop)
	}
	if len(r.Path) > 0 {
		last := r.Path[len(r.Path)-1]
		if err := n.grid.Check(last); err != nil {
			return fmt.Errorf("route path: %w", err)
		}
		if !n.grid.IsNeighbor(last, n.self, r.ScenarioTimeNs) {
			return fmt.Errorf("request from satellite %d reached satellite %d, which is not its ISL neighbour: %w", last, n.self, errs.ErrRelayLoop)
		}
		if slices.Contains(r.Path, n.self) {
			return fmt.Errorf("request to satellite %d passed satellite %d twice (path %v): %w", r.Destination, n.self, r.Path, errs.ErrRelayLoop)
		}
	}
	return nil
}

// forward returns the next hop towards r.Destination and advances r.
func (n *Node) forward(r *satpagev1.Route, rpc string) (satpagev1.SatelliteServiceClient, error) {
	next, err := n.grid.NextHop(n.self, r.Destination, r.ScenarioTimeNs)
	if err != nil {
		return nil, err
	}
	c, err := n.peers.Satellite(next)
	if err != nil {
		return nil, err
	}
	r.Hops++
	r.Path = append(r.Path, n.self)
	n.m.RelayedHops.WithLabelValues(rpc).Inc()
	return c, nil
}

// fetchLocal serves FetchPages at the owner: the frames stay until ReleasePages.
func (n *Node) fetchLocal(ctx context.Context, session string, pages []uint32) ([]*satpagev1.Page, error) {
	frames, err := n.store.GetFrames(ctx, session, pages)
	if err != nil {
		return nil, fmt.Errorf("satellite %d: %w", n.self, err)
	}
	out := make([]*satpagev1.Page, len(frames))
	bytes := 0
	for i, f := range frames {
		out[i] = &satpagev1.Page{Page: f.Page, Data: f.Data}
		bytes += len(f.Data)
	}
	n.m.PageBytes.WithLabelValues("out").Add(float64(bytes))
	return out, nil
}

// HandOver sends the session's page table to satellite to (relayed) and
// deletes it here once the new satellite has stored it.
func (n *Node) HandOver(ctx context.Context, session string, to uint32, tNs int64) (tablePages int, hops uint32, err error) {
	if err := checkSession(session); err != nil {
		return 0, 0, err
	}
	if err := n.grid.Check(to); err != nil {
		return 0, 0, fmt.Errorf("to_satellite: %w", err)
	}
	defer n.locks.lock(session)()
	n.flushReleases(ctx, session)
	table, err := n.store.GetTable(ctx, session)
	if err != nil {
		return 0, 0, n.unknownHere(session, err)
	}
	if to == n.self {
		return len(table), 0, nil
	}
	entries := make([]*satpagev1.TableEntry, 0, len(table))
	for _, p := range slices.Sorted(maps.Keys(table)) {
		entries = append(entries, &satpagev1.TableEntry{Page: p, Owner: table[p]})
	}
	err = n.originate(ctx, to, tNs, "AcceptTable", func(c satpagev1.SatelliteServiceClient, r *satpagev1.Route) error {
		resp, err := c.AcceptTable(ctx, &satpagev1.AcceptTableRequest{Route: r, SessionId: session, Entries: entries})
		if err == nil {
			hops = resp.Hops
		}
		return err
	})
	if err != nil {
		return 0, 0, fmt.Errorf("hand session %q over to satellite %d: %w", session, to, err)
	}
	// The new satellite holds the table now; only then does this one let go.
	if err := n.store.DeleteTable(ctx, session); err != nil {
		n.log.WarnContext(ctx, "delete of handed-over table failed", "session", session, "err", err)
	}
	return len(table), hops, nil
}

// MovePages moves every page of the session owned elsewhere to this (serving) satellite.
func (n *Node) MovePages(ctx context.Context, session string, tNs int64) (moved int, pageHops uint64, err error) {
	if err := checkSession(session); err != nil {
		return 0, 0, err
	}
	defer n.locks.lock(session)()
	n.flushReleases(ctx, session)
	table, err := n.store.GetTable(ctx, session)
	if err != nil {
		return 0, 0, n.unknownHere(session, err)
	}
	byOwner := map[uint32][]uint32{}
	for p, o := range table {
		if o != n.self {
			byOwner[o] = append(byOwner[o], p)
		}
	}
	for _, owner := range slices.Sorted(maps.Keys(byOwner)) {
		pages := byOwner[owner]
		slices.Sort(pages)
		for chunk := range slices.Chunk(pages, moveChunk) {
			_, hops, err := n.move(ctx, session, chunk, owner, tNs, "handover")
			if err != nil {
				return moved, pageHops, err
			}
			moved += len(chunk)
			pageHops += uint64(len(chunk)) * uint64(hops)
		}
	}
	return moved, pageHops, nil
}

// EndSession deletes every frame of the session (here and at each owner its
// table names, relayed) and then its page table.
func (n *Node) EndSession(ctx context.Context, session string, tNs int64) (int, error) {
	if err := checkSession(session); err != nil {
		return 0, err
	}
	defer n.locks.lock(session)()
	n.flushReleases(ctx, session)
	table, err := n.store.GetTable(ctx, session)
	if err != nil {
		return 0, n.unknownHere(session, err)
	}
	owners := map[uint32]bool{}
	for _, o := range table {
		owners[o] = true
	}
	delete(owners, n.self)
	deleted, err := n.store.DropFrames(ctx, session)
	if err != nil {
		return 0, err
	}
	for _, o := range slices.Sorted(maps.Keys(owners)) {
		err := n.originate(ctx, o, tNs, "DropSession", func(c satpagev1.SatelliteServiceClient, r *satpagev1.Route) error {
			resp, err := c.DropSession(ctx, &satpagev1.DropSessionRequest{Route: r, SessionId: session})
			if err == nil {
				deleted += int(resp.FramesDeleted)
			}
			return err
		})
		if err != nil {
			return deleted, fmt.Errorf("drop session %q at satellite %d: %w", session, o, err)
		}
	}
	return deleted, n.store.DeleteTable(ctx, session)
}

// SessionFrames reports what this satellite holds of a session.
func (n *Node) SessionFrames(ctx context.Context, session string) (frames int, serving bool, tablePages int, err error) {
	if err := checkSession(session); err != nil {
		return 0, false, 0, err
	}
	// Releases this satellite owes for the session go out first, so that the
	// counts at the old owners are settled once this returns.
	unlock := n.locks.lock(session)
	n.flushReleases(ctx, session)
	unlock()
	frames, err = n.store.CountFrames(ctx, session)
	if err != nil {
		return 0, false, 0, err
	}
	tablePages, err = n.store.TableSize(ctx, session)
	switch {
	case errors.Is(err, errs.ErrUnknownSession):
		return frames, false, 0, nil
	case err != nil:
		return 0, false, 0, err
	}
	return frames, true, tablePages, nil
}
