// Package node is the satellite node: it serves the page tables of the
// sessions it serves and owns page frames in its PageStore, moves pages to
// itself on access (on-demand) or at handover (proactive), and relays
// satellite-to-satellite requests hop by hop over +Grid ISLs.
//
// A move is crash-safe: the new owner fetches the pages (the old owner keeps
// them), stores them and points its page table at itself, and only then asks
// the old owner to release them. A crash between the steps leaves a stale
// copy at the old owner, never a lost page; the page table names one owner.
//
// Files, one responsibility each: node.go (Node, Options, construction, Close,
// the session locks), access.go (ReadPages/WritePage and the fault path:
// moving pages here on access, serving FetchPages as the owner), releases.go
// (the old owners' copies released in batches, in the background, and read
// faults held until their adopt is stored, at most HeldWait), stale.go
// (page tables handed over but not yet deleted here), routing.go
// (originating routed requests with retries, relaying them hop by hop),
// sessions.go (open, hand over, accept a table, move pages proactively, drop,
// end, and report a session), grpc.go (the gRPC handlers: decode and validate
// wire messages, call Node, map sentinel errors to codes).
package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/satpage/satpage/services/internal/constellation"
	"github.com/satpage/satpage/services/internal/errs"
	"github.com/satpage/satpage/services/internal/liveness"
	"github.com/satpage/satpage/services/internal/metrics"
	"github.com/satpage/satpage/services/internal/peers"
	"github.com/satpage/satpage/services/internal/replica"
	"github.com/satpage/satpage/services/internal/retry"
	"github.com/satpage/satpage/services/internal/store"
)

// The origin's retry budget (retry.Budget): a retry for every five routed
// requests, one a second when quiet, 10 at most in reserve. Before it a request
// was sent up to 4 times whatever else failed: a start-up storm's retries
// (make e2e-swarm: 1,938 "sending it again" in 60 logs) became most of its load,
// and at 5 a second and 50 in reserve still 5,646 in 108 logs (make e2e-k8s).
const (
	retryRatio = 0.2
	retryFloor = 1
	retryMost  = 10
)

// Limits on request sizes, so a hostile request cannot make a node allocate without bound.
const (
	MaxSessionIDBytes = 256
	MaxBatchPages     = 4096    // pages in one FetchPages / ReleasePages / MovePages chunk
	MaxTableEntries   = 1 << 20 // entries in one AcceptTable
	MaxReadPages      = 1 << 16 // accesses in one ReadPages
	moveChunk         = 256     // pages per proactive FetchPages (keeps messages ~1 MiB at 4 KiB)
)

// Node is one satellite. Safe for concurrent use: the fields above locks are
// set by New and never change; locks and the fields below it each carry their
// own mutex. Only a session's lock is held across calls to peers (sessionLocks).
type Node struct {
	self       uint32
	grid       *constellation.Grid
	store      store.PageStore
	peers      peers.Dialer
	log        *slog.Logger
	m          *metrics.Node
	pageBytes  int
	locks      sessionLocks // one mutex per session: its operations run one at a time here
	releases   releases     // releases owed to old owners (releases.go), behind releases.mu
	stale      staleTables  // handed-over tables not yet deleted here (stale.go), behind stale.mu
	partial    partialMoves // what failed MovePages moved, reported by the next (sessions.go), behind partial.mu
	faults     *liveness.Detector
	admit      func(ctx context.Context, method string, wire, req any) (context.Context, error) // Options.AdmitMessage
	draining   chan struct{}                                                                    // closed by Drain
	drainOnce  sync.Once
	ground     atomic.Bool      // cut off from the ground segment (SetFaults ground_cut): gateways are refused
	holder     *replica.Holder  // copies of other satellites' state held here
	primary    *replica.Primary // this satellite's replicated store (nil when R = 1)
	replicas   int              // R
	generation string           // the deployment generation (Options.Generation)
	retries    *retry.Budget    // origin retries of routed requests (routing.go)

	// The background work Start runs (the detector's re-probing, the
	// replicas' upkeep and restores): Close cancels it and waits for it.
	bg     sync.WaitGroup
	bgMu   sync.Mutex         // guards stopBg
	stopBg context.CancelFunc // nil before Start
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
	// Replicas is R: every page frame and page-table entry of this satellite is
	// also held by the R-1 live satellites behind it (docs/faults.md). 0 or 1: none.
	Replicas int
	// HeldWait bounds how long a read fault answered before its adopt was
	// stored is held (releases.go): a session's held faults are stored, and
	// their old owners released, at most this long after the first of them
	// was held. 0: DefaultHeldWait.
	HeldWait time.Duration
	// AfterFunc arms the timer of HeldWait, one per session with faults held
	// (nil: time.AfterFunc). Tests pass timers they fire by hand.
	AfterFunc func(d time.Duration, f func()) Timer
	// Generation is the deployment generation (config --generation; "" unknown):
	// told to peers restoring, so a first start waits on no silent peer.
	Generation string
	// Faults is the failure detector routing follows (nil: one probing by health).
	Faults *liveness.Detector
	// AdmitMessage is the access policy for each message of a fetch stream
	// (auth.Policy.AdmitMessage; nil: none, as in an in-process test without security).
	AdmitMessage func(ctx context.Context, method string, wire, req any) (context.Context, error)
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
	if o.HeldWait < 0 {
		return nil, fmt.Errorf("node: held wait %v is negative: %w", o.HeldWait, errs.ErrInvalid)
	}
	if o.HeldWait == 0 {
		o.HeldWait = DefaultHeldWait
	}
	if o.AfterFunc == nil {
		o.AfterFunc = func(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }
	}
	n := &Node{self: o.Index, grid: o.Grid, store: o.Store, peers: o.Peers,
		log: o.Logger.With("satellite", o.Index), m: o.Metrics, pageBytes: o.PageBytes,
		locks:    sessionLocks{m: map[string]*sessionLock{}},
		releases: newReleases(o.HeldWait, o.AfterFunc), stale: staleTables{m: map[string]bool{}},
		partial: partialMoves{m: map[string]movedSoFar{}},
		retries: retry.NewBudget(retryRatio, retryFloor, retryMost),
		admit:   o.AdmitMessage, draining: make(chan struct{})}
	if ix, ok := o.Store.(frameIndexer); ok {
		// Every request with an id looks its slot up (recall), and nearly always
		// finds it empty: with the answers' pages in memory that costs no round trip.
		ix.IndexFrames(dedupPrefix)
	}
	n.releases.waited = n.heldWaitPassed
	if err := n.setUpReplication(o); err != nil {
		return nil, err
	}
	return n, nil
}

// frameIndexer is a store that can keep the pages of some sessions' frames
// in memory (store.Cached).
type frameIndexer interface{ IndexFrames(prefix string) }

// Close ends the node's background work: it stops the timers of held read
// faults (and waits for one that fired), waits for the releases being sent in
// the background, stores the held faults and sends the releases still
// pending, within ctx (a release cut off leaves a stale copy at an old owner,
// a held fault not stored leaves the page there, never lost), retries the
// deletes of stale page tables, and then stops what Start runs (the detector,
// its probes in flight, the replicas' upkeep) and waits for it, within ctx.
// Call it after the gRPC server has stopped; it closes neither the store nor
// the peers. It returns ctx's error when ctx ended first, or the deletes that
// failed again.
func (n *Node) Close(ctx context.Context) error {
	err := n.closeReleases(ctx)
	if err == nil {
		err = n.closeStale(ctx)
	}
	return errors.Join(err, n.stopBackground(ctx))
}

// stopBackground cancels Start's background work and waits for it, within ctx.
func (n *Node) stopBackground(ctx context.Context) error {
	n.bgMu.Lock()
	stop := n.stopBg
	n.bgMu.Unlock()
	if stop != nil {
		stop()
	}
	done := make(chan struct{})
	go func() { n.bg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("background work still running: %w", ctx.Err())
	}
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

// lockSession takes session's lock and pins ctx to the store's current state
// (replica.Primary.Pin): should the state be restored from the copies while
// the operation runs (a takeover fenced this satellite), its changes fail.
func (n *Node) lockSession(ctx context.Context, session string) (context.Context, func()) {
	unlock := n.locks.lock(session)
	if n.primary != nil {
		ctx = n.primary.Pin(ctx)
	}
	return ctx, unlock
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

// checkSession validates a session id (every operation's first step).
func checkSession(session string) error {
	if session == "" {
		return fmt.Errorf("session_id is empty: %w", errs.ErrInvalid)
	}
	if session[0] == 0 {
		return fmt.Errorf("session_id starts with a NUL byte (reserved): %w", errs.ErrInvalid)
	}
	if len(session) > MaxSessionIDBytes {
		return fmt.Errorf("session_id of %d bytes exceeds %d: %w", len(session), MaxSessionIDBytes, errs.ErrInvalid)
	}
	return nil
}

// unknownHere names this satellite in a missing-table error.
func (n *Node) unknownHere(session string, err error) error {
	if errors.Is(err, errs.ErrUnknownSession) {
		return fmt.Errorf("session %q has no page table at satellite %d: %w", session, n.self, errs.ErrUnknownSession)
	}
	return err
}
