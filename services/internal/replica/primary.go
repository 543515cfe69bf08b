package replica

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/constellation"
	"github.com/satpage/satpage/services/internal/errs"
	"github.com/satpage/satpage/services/internal/liveness"
	"github.com/satpage/satpage/services/internal/retry"
	"github.com/satpage/satpage/services/internal/store"
)

// Transport sends replication messages between satellites (the node
// implements it: Replicate and InstallSnapshot are relayed over ISLs like any
// routed request, so relays count their hops).
type Transport interface {
	// Replicate sends req to satellite to and returns the ISL hops it travelled.
	Replicate(ctx context.Context, to uint32, req *satpagev1.ReplicateRequest) (hops uint32, err error)
	InstallSnapshot(ctx context.Context, to uint32, req *satpagev1.InstallSnapshotRequest) error
	// ReplicaState asks satellite at about its copy (directly, not relayed).
	ReplicaState(ctx context.Context, at uint32, req *satpagev1.ReplicaStateRequest) (*satpagev1.ReplicaStateResponse, error)
	// RequestSync asks primary to send its state to replica now.
	RequestSync(ctx context.Context, primary, replica uint32) error
}

// Liveness is the failure detector's view (liveness.Detector).
type Liveness interface {
	SatelliteDown(i uint32) bool
	// Suspect probes i after a failed call and reports whether it is dead.
	Suspect(ctx context.Context, i uint32) bool
	// Confirm waits, within the detector's bound, until i is dead or answers.
	Confirm(ctx context.Context, i uint32) bool
	MarkAlive(i uint32)
}

// Counters receives the replication traffic (metrics).
type Counters interface {
	// Copied: pages stored at one replica over hops ISL hops, pageBytes each.
	Copied(pages int, hops uint32, pageBytes int)
	// Snapshot: a full copy sent to a replica.
	Snapshot(sessions int)
}

// Options are what NewPrimary needs.
type Options struct {
	Self      uint32
	Spec      constellation.Spec
	Replicas  int // R: copies of each page in all, the primary's included
	Local     store.PageStore
	Transport Transport
	Liveness  Liveness
	Counters  Counters
	PageBytes int
	Logger    *slog.Logger
	// RestoreWait bounds how long Restore waits for the satellites that would
	// hold this one's copy to answer (default 30 s).
	RestoreWait time.Duration
	// Generation is the deployment generation ("" unknown). Known, Restore
	// waits on silent peers only once some satellite of the plane has served in
	// it (a restart).
	Generation string
}

// Primary is the PageStore of a satellite with replication factor R > 1: it
// applies each change to the local store, sends it to the R-1 replicas
// (Replicas, on the detector's live view) and returns only when every one has
// stored it. A replica that is not in sync (it restarted empty, or it just
// became a replica because the one before it died or was set aside) gets a
// snapshot of the whole local state first. Until Restore has run, every call fails with
// ErrUnavailable: a restarted satellite never serves before it has its state
// back. Safe for concurrent use.
type Primary struct {
	o     Options
	local store.PageStore
	snap  store.Snapshotter
	ready atomic.Bool
	// started: a Restore has completed in this process (sticky; ready is not,
	// a fenced primary restores again).
	started atomic.Bool
	// blank: the last Restore found no copy anywhere and an empty local store,
	// and no change has been made since: there is nothing to copy, so no
	// replica is sent anything (no snapshot, no ping) until the first change,
	// which sends the (empty) snapshots first (share). At the first start of a
	// constellation every satellite is blank, and its replicas may not have
	// started yet (docs/faults.md, "First start and restart").
	blank atomic.Bool

	// gate: changes hold it shared from the local change to the last replica's
	// answer; a snapshot holds it alone, so it contains every change it follows.
	gate sync.RWMutex
	inc  atomic.Uint64 // incarnation: start time in ns, above every earlier one
	seq  atomic.Uint64 // changes applied in this incarnation
	// epoch is the namespace's serving epoch, taken from the copies at each
	// restore; every change and snapshot carries it, and a copy fenced by a
	// takeover refuses it once older (docs/faults.md).
	epoch atomic.Uint64
	// gen counts restores: a request pinned to an older one (Pin) decided on
	// a state that was replaced since, and may change nothing.
	gen atomic.Uint64
	// stale is signalled when a copy refused a change as of an older epoch:
	// Maintain then restores the state from the copies.
	stale chan struct{}

	mu       sync.Mutex        // guards synced, syncedAt, nextSync
	synced   map[uint32]uint64 // replica -> snapshot id it holds (absent: unknown)
	syncedAt map[uint32]uint64 // replica -> seq its snapshot contains
	nextSync uint64

	retry *backoff      // per replica: failed snapshots wait before the next (backoff.go)
	idle  time.Duration // idlePing (tests shorten it)
}

var _ store.PageStore = (*Primary)(nil)

// NewPrimary wraps o.Local, which must also be a store.Snapshotter.
func NewPrimary(o Options) (*Primary, error) {
	snap, ok := o.Local.(store.Snapshotter)
	if !ok || o.Transport == nil || o.Liveness == nil {
		return nil, fmt.Errorf("replica: a snapshotting store, a transport and a detector are required: %w", errs.ErrInvalid)
	}
	if o.Replicas < 1 || o.Replicas > o.Spec.PerPlane() {
		return nil, fmt.Errorf("replicas %d outside [1, %d] (satellites per plane): %w", o.Replicas, o.Spec.PerPlane(), errs.ErrInvalid)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.PageBytes <= 0 {
		o.PageBytes = 4096
	}
	if o.RestoreWait <= 0 {
		o.RestoreWait = restoreWait
	}
	p := &Primary{o: o, local: o.Local, snap: snap, synced: map[uint32]uint64{}, syncedAt: map[uint32]uint64{},
		retry: newBackoff(o.Logger), idle: idlePing, stale: make(chan struct{}, 1)}
	p.inc.Store(uint64(time.Now().UnixNano()))
	if o.Replicas == 1 {
		p.ready.Store(true) // nothing to restore from
		p.started.Store(true)
	}
	return p, nil
}

// Ready reports whether the primary serves (Restore has run).
func (p *Primary) Ready() bool { return p.ready.Load() }

// Started reports whether the primary has served since its process started
// (told to peers restoring: a plane where none has is at its first start).
func (p *Primary) Started() bool { return p.started.Load() }

// Version is the primary's current version.
func (p *Primary) Version() *satpagev1.ReplicaVersion {
	return &satpagev1.ReplicaVersion{Epoch: p.epoch.Load(), Incarnation: p.inc.Load(), Seq: p.seq.Load()}
}

// Epoch is the namespace's serving epoch as this primary holds it.
func (p *Primary) Epoch() uint64 { return p.epoch.Load() }

type pinKey struct{ p *Primary }

// Pin marks ctx with the current restore: a change made under the returned
// context fails with ErrStaleEpoch once the state it was decided on has been
// replaced by a restore (the node pins each session operation when it takes
// the session's lock, before it reads the page table).
func (p *Primary) Pin(ctx context.Context) context.Context {
	return context.WithValue(ctx, pinKey{p}, p.gen.Load())
}

// fence takes the primary out of service after a copy refused its epoch:
// until Maintain has restored the state from the copies (the sessions taken
// over are gone from them), every call fails as unavailable.
func (p *Primary) fence() {
	if p.ready.CompareAndSwap(true, false) {
		p.o.Logger.Warn("a copy refused this satellite's serving epoch (sessions were taken over from it); restoring from the copies")
	}
	select {
	case p.stale <- struct{}{}:
	default:
	}
}

func staleErr(seq uint64, err error) error {
	return fmt.Errorf("change %d not acknowledged: %v: %w", seq, err, errs.ErrStaleEpoch)
}

// Members are the replicas now: the R-1 live satellites behind this one that
// are not set aside (a replica whose copies failed for asideAfter: backoff.go).
// A satellite that left the set is forgotten: should it come back into it (it
// was only thought dead, or it takes copies again), it gets a snapshot, never
// the changes after the ones it missed.
func (p *Primary) Members() []uint32 {
	now := time.Now()
	m := Replicas(p.o.Spec, p.o.Self, p.o.Replicas, func(i uint32) bool {
		return p.o.Liveness.SatelliteDown(i) || p.retry.setAside(context.Background(), i, now)
	})
	p.mu.Lock()
	for r := range p.synced {
		if !slices.Contains(m, r) {
			delete(p.synced, r)
			delete(p.syncedAt, r)
		}
	}
	p.mu.Unlock()
	p.retry.keep(m)
	return m
}

// candidates are the replicas by the detector's view alone: the members, with
// those set aside in their places.
func (p *Primary) candidates() []uint32 {
	return Replicas(p.o.Spec, p.o.Self, p.o.Replicas, p.o.Liveness.SatelliteDown)
}

var errRestoring = fmt.Errorf("satellite is restoring its state from its replicas: %w", errs.ErrUnavailable)

func (p *Primary) check(ctx context.Context) error {
	if !p.ready.Load() {
		return errRestoring
	}
	return ctx.Err()
}

// mutate applies a change locally and to every replica; pages is what the
// change stores (frames moved, created or written: the priced copies).
func (p *Primary) mutate(ctx context.Context, apply func() error, op *satpagev1.StoreOp, pages int) error {
	if err := p.check(ctx); err != nil {
		return err
	}
	if p.o.Replicas == 1 {
		return apply()
	}
	if p.blank.Load() {
		p.share(ctx)
	}
	p.gate.RLock()
	if !p.ready.Load() {
		p.gate.RUnlock()
		return errRestoring
	}
	if g, ok := ctx.Value(pinKey{p}).(uint64); ok && g != p.gen.Load() {
		p.gate.RUnlock()
		return fmt.Errorf("the state this request read was replaced by a restore from the copies: %w", errs.ErrStaleEpoch)
	}
	if err := apply(); err != nil {
		p.gate.RUnlock()
		return err
	}
	seq := p.seq.Add(1)
	v := &satpagev1.ReplicaVersion{Epoch: p.epoch.Load(), Incarnation: p.inc.Load(), Seq: seq}
	members := p.Members()
	acked := make([]bool, len(members))
	var staleBy atomic.Pointer[error]
	var wg sync.WaitGroup
	for i, m := range members {
		p.mu.Lock()
		id, known := p.synced[m]
		p.mu.Unlock()
		if !known {
			continue // a snapshot first (below)
		}
		wg.Go(func() {
			hops, err := p.o.Transport.Replicate(ctx, m, &satpagev1.ReplicateRequest{Namespace: p.o.Self, SyncId: id, Version: v, Op: op})
			if err == nil {
				acked[i] = true
				p.retry.ok(ctx, m)
				if pages > 0 && p.o.Counters != nil {
					p.o.Counters.Copied(pages, hops, p.o.PageBytes)
				}
				return
			}
			if errs.Has(err, errs.ErrStaleEpoch) {
				staleBy.Store(&err)
			}
			p.failed(ctx, m, id, err)
		})
	}
	wg.Wait()
	p.gate.RUnlock()
	if e := staleBy.Load(); e != nil {
		// Never acknowledged: a takeover fenced this namespace, and the new
		// server may already have acknowledged later changes of the session.
		p.fence()
		return staleErr(seq, *e)
	}
	done := map[uint32]bool{}
	for i, m := range members {
		done[m] = acked[i]
	}
	return p.complete(ctx, done, seq)
}

// share ends a blank primary's silence before its first change: every
// member gets the snapshot of the state before the change (empty), as a
// restore would have sent it, so that the change itself then travels as a
// Replicate (its pages counted as copied, as the simulation prices them). A
// member whose snapshot fails is handled as any replica out of sync (complete).
func (p *Primary) share(ctx context.Context) {
	for _, m := range p.Members() {
		if err := p.syncTo(ctx, m, p.seq.Load()); err != nil && ctx.Err() == nil {
			p.retry.failed(ctx, m, "first snapshot", err)
		}
	}
	p.blank.Store(false)
}

// Blank reports whether the primary has nothing to copy yet (no copy was
// found at its restore, its store was empty, and nothing changed since): its
// replicas have been sent nothing.
func (p *Primary) Blank() bool { return p.blank.Load() }

// failed handles a replica that did not store a change. Whatever the cause,
// its copy may now lack the change, so it gets a snapshot before any further
// change (complete, below; never a later change on a copy that missed one).
// Unreachable: the detector also decides whether it is dead (then the next
// live satellite behind takes its place). Logged per state change by the
// snapshot's backoff, not here per attempt.
func (p *Primary) failed(ctx context.Context, m uint32, id uint64, err error) {
	p.forget(m, id)
	if errs.Has(err, errs.ErrStaleEpoch) {
		return // alive: it answered; the caller restores
	}
	if code := status.Code(err); code == codes.Unavailable || errors.Is(err, errs.ErrUnavailable) || errors.Is(err, errs.ErrNoRoute) {
		p.o.Liveness.Suspect(ctx, m)
	}
	p.o.Logger.DebugContext(ctx, "replica did not store a change", "replica", m, "err", err)
}

func (p *Primary) forget(m uint32, id uint64) {
	p.mu.Lock()
	if p.synced[m] == id {
		delete(p.synced, m)
		delete(p.syncedAt, m)
	}
	p.mu.Unlock()
}

// complete makes every current replica hold change seq (snapshots to the ones
// that did not take it as a change), or fails with ErrUnavailable naming them.
// Each replica gets at most one snapshot attempt per round, and none while it
// backs off from a failed one: the change waits for its next try or for it to
// be set aside (backoff.due), whichever comes first, so a replica that cannot
// take a copy delays the change by at most asideAfter from its first failure;
// then the next live satellite behind takes its place and is tried in the same
// call, as one the detector finds dead meanwhile is. The change fails when
// ctx ends, or when its waits would pass asideAfter + retryFirst (the stand-in
// failing too).
func (p *Primary) complete(ctx context.Context, done map[uint32]bool, seq uint64) error {
	until := time.Now().Add(p.retry.aside + p.retry.first)
	for round := 0; ; round++ {
		var missing, waiting []uint32
		var wait time.Duration
		held, now := 0, time.Now()
		for _, m := range p.Members() {
			switch ok, w := p.retry.due(m, now); {
			case done[m]:
				held++
			case ok:
				missing = append(missing, m)
			default:
				waiting, wait = append(waiting, m), max(wait, w)
			}
		}
		if len(missing)+len(waiting) == 0 {
			return nil
		}
		if len(missing) == 0 && round < completeRounds && !now.Add(wait).After(until) && retry.Sleep(ctx, wait) {
			// A replica that failed a moment ago (a satellite back from a
			// restart that cannot take its copy yet) gets its next try, or is
			// set aside, within the wait; the change does not fail meanwhile
			// (make e2e-swarm: an OpenSession failed while the restarted
			// replica backed off, and every change failed for 36 s).
			continue
		}
		if len(missing) == 0 || round >= completeRounds || ctx.Err() != nil {
			return fmt.Errorf("change %d stored at %d replica(s) of %d, not at %v (backing off %v for the next try): %w",
				seq, held, p.o.Replicas-1, append(missing, waiting...), wait.Round(time.Millisecond), errs.ErrUnavailable)
		}
		for _, m := range missing {
			err := p.syncTo(ctx, m, seq)
			if err == nil {
				done[m] = true
				continue
			}
			if errs.Has(err, errs.ErrStaleEpoch) {
				p.fence()
				return staleErr(seq, err)
			}
			if ctx.Err() == nil {
				p.retry.failed(ctx, m, "snapshot", err)
			}
			// Confirm, not one probe: a replica that died silently (its dials
			// time out, as a dead Swarm task's name does) is dead after a few
			// misses, and then the next live satellite behind takes its place
			// in the next round, instead of every change failing meanwhile.
			p.o.Liveness.Confirm(ctx, m)
		}
	}
}

// completeRounds bounds a change's rounds of snapshots and waits (each wait
// ends at a replica's next try or at its setting aside: three tries of one
// replica and one of its stand-in fit, with the waits between).
const completeRounds = 12

// restoreWait bounds how long a restarting satellite waits for the
// satellites that would hold its copy to answer.
const restoreWait = 30 * time.Second

// The pause between two rounds of a restore's questions (a variable: tests shorten it).
var restorePoll = retry.Backoff{First: 200 * time.Millisecond, Max: 2 * time.Second, Jitter: 0.2}

// snapshotChunkBytes bounds one InstallSnapshot message (gRPC allows 32 MiB here).
const snapshotChunkBytes = 8 << 20

// syncTo sends a snapshot of the whole local state to replica m, unless m
// already holds one that contains change seq.
func (p *Primary) syncTo(ctx context.Context, m uint32, seq uint64) error {
	p.gate.Lock()
	defer p.gate.Unlock()
	p.mu.Lock()
	_, known := p.synced[m]
	at := p.syncedAt[m]
	p.nextSync++
	id := p.nextSync<<20 | uint64(p.o.Self) // unique per snapshot of this primary
	p.mu.Unlock()
	if known && at >= seq {
		return nil
	}
	states, err := p.snap.Snapshot(ctx)
	if err != nil {
		return err
	}
	now := p.seq.Load()
	v := &satpagev1.ReplicaVersion{Epoch: p.epoch.Load(), Incarnation: p.inc.Load(), Seq: now}
	wire := StatesTo(states)
	for first, i := true, 0; first || i < len(wire); first = false {
		j, size := i, 0
		for j < len(wire) && (j == i || size < snapshotChunkBytes) {
			for _, f := range wire[j].Frames {
				size += len(f.Data) + 8
			}
			size += 8 * len(wire[j].Table)
			j++
		}
		req := &satpagev1.InstallSnapshotRequest{Namespace: p.o.Self, SyncId: id, Version: v,
			First: first, Last: j == len(wire), Sessions: wire[i:j]}
		if err := p.o.Transport.InstallSnapshot(ctx, m, req); err != nil {
			return fmt.Errorf("snapshot %d to satellite %d: %w", id, m, err)
		}
		i = j
	}
	p.mu.Lock()
	p.synced[m], p.syncedAt[m] = id, now
	p.mu.Unlock()
	// Still alone: a replica set aside is back in the set before any change
	// can see the set without it (and it holds every change so far).
	p.retry.ok(ctx, m)
	if p.o.Counters != nil {
		p.o.Counters.Snapshot(len(states))
	}
	return nil
}

// BestCopy finds the newest in-sync copy of owner's state among the
// satellites of its plane (asked at once, 2 s each): the current replicas hold
// every acknowledged change, so the newest version is theirs, and a satellite
// that left the replica set holds an older one (or the same, when nothing
// changed since). nil when no satellite holds one.
func BestCopy(ctx context.Context, t Transport, spec constellation.Spec, owner uint32) (uint32, *satpagev1.ReplicaStateResponse) {
	c := bestCopy(ctx, t, spec, owner, "", nil)
	return c.at, c.best
}

// copyFound is what a round of questions found: the newest copy (best, at
// slot j behind the owner) and the slots whose satellite did not answer but
// may be running (silent: a timeout, not a refusal).
type copyFound struct {
	at     uint32
	j      int
	best   *satpagev1.ReplicaStateResponse
	silent []int
	// started: a satellite of this generation answered that it has served
	// since its process started: the deployment has started, so this is a
	// restart, and a silent satellite may hold the copy.
	started bool
	// epoch is the newest serving epoch of any answer, in sync or not (a copy
	// fenced while out of sync refuses an older epoch too).
	epoch uint64
}

// take keeps r, at slot j (satellite at), when it is newer than the copy
// found so far; among equals the nearest behind the owner.
func (c *copyFound) take(r *satpagev1.ReplicaStateResponse, at uint32, j int) {
	if c.best == nil || newer(r.Version, c.best.Version) || (!newer(c.best.Version, r.Version) && j < c.j) {
		c.best, c.at, c.j = r, at, j
	}
}

// bestCopy asks the satellites in the given slots behind owner (nil: the whole
// plane). A satellite that refuses the connection or whose name does not
// resolve is not running: copies live in the satnode process (Holder), so it
// holds none, and it is not counted silent (a first start must not wait on
// peers that have not started).
//
// A satellite of another deployment generation than gen (both known: one of a
// previous deployment, still answering) has served in another deployment: it
// does not make this one's start a restart. Its copy is still taken (an
// upgrade that changed the generation must not lose the state).
func bestCopy(ctx context.Context, t Transport, spec constellation.Spec, owner uint32, gen string, slots []int) copyFound {
	if slots == nil {
		for j := 1; j < spec.PerPlane(); j++ {
			slots = append(slots, j)
		}
	}
	var found copyFound
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, j := range slots {
		at := Behind(spec, owner, j)
		wg.Go(func() {
			qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			r, err := t.ReplicaState(qctx, at, &satpagev1.ReplicaStateRequest{Namespace: owner})
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				found.epoch = max(found.epoch, r.Version.GetEpoch())
				found.started = found.started || (r.Started && (gen == "" || r.Generation == gen))
			}
			switch {
			case err != nil && !liveness.Absent(err):
				found.silent = append(found.silent, j)
			case err == nil && r.Synced:
				found.take(r, at, j)
			}
		})
	}
	wg.Wait()
	slices.Sort(found.silent)
	return found
}

// SyncReplica sends replica a snapshot now (it asked: it restarted empty).
func (p *Primary) SyncReplica(ctx context.Context, replica uint32) error {
	if err := p.check(ctx); err != nil {
		return err
	}
	p.o.Liveness.MarkAlive(replica)
	if p.blank.Load() {
		return nil // nothing to copy: the first change sends it (share)
	}
	// A replica set aside is a candidate (its copy is how it rejoins); its
	// stand-in is a member.
	if !slices.Contains(p.candidates(), replica) && !slices.Contains(p.Members(), replica) {
		return nil
	}
	p.mu.Lock()
	delete(p.synced, replica)
	delete(p.syncedAt, replica)
	p.mu.Unlock()
	p.retry.reset(replica) // it answered: no reason to wait
	if err := p.syncTo(ctx, replica, p.seq.Load()); err != nil {
		p.retry.failed(ctx, replica, "snapshot asked for", err)
		return err
	}
	return nil
}

// rejoin sends a snapshot to each replica set aside whose next try is due
// (the upkeep's), once it answers a direct question: one that cannot be
// reached at all costs one small call, not a snapshot with every change
// waiting behind it. A snapshot it stores takes it back into the set
// (syncTo), and the stand-in leaves it.
func (p *Primary) rejoin(ctx context.Context) {
	now := time.Now()
	for _, m := range p.candidates() {
		if ok, _ := p.retry.due(m, now); !ok || !p.retry.isAside(m) {
			continue
		}
		qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := p.o.Transport.ReplicaState(qctx, m, &satpagev1.ReplicaStateRequest{Namespace: p.o.Self})
		cancel()
		if err == nil {
			err = p.syncTo(ctx, m, p.seq.Load())
		}
		if err != nil && ctx.Err() == nil {
			p.retry.failed(ctx, m, "snapshot to rejoin", err)
		}
	}
}

// Restore takes the state back after a restart: the newest in-sync copy held
// by a satellite of this plane replaces the local state (the local store may
// be empty, or older than the copy); then the replicas get snapshots of the
// new incarnation, the satellites whose copies this one holds are asked to
// send them, and the primary starts serving. With no copy anywhere (R = 1, or
// every holder lost its memory too) it serves what the local store holds.
//
// A primary fenced by a takeover (a copy refused its epoch) restores again
// (Maintain): the copies hold every change it had acknowledged and none of the
// sessions taken over, and it takes up their newest epoch.
func (p *Primary) Restore(ctx context.Context) error {
	if p.o.Replicas == 1 {
		p.ready.Store(true)
		return nil
	}
	p.ready.Store(false)
	// No copy found while one of the satellites that would hold it did not
	// answer (the machine is loaded) is no proof there is none: ask it again,
	// for up to restoreWait, before serving the local store. A satellite that
	// is not running (refused, its name unknown) holds nothing and is not
	// waited for. The rounds back off (restorePoll, jittered) and ask only the
	// near slots still silent: the others' answers cannot change, since a
	// copy of this satellite is made only by this satellite.
	//
	// With the deployment generation known, a first start waits on no one: a
	// copy of this satellite exists only once it has served, and then the
	// deployment has started. While no satellite of the plane that answers has
	// served in this generation, the silent ones are starting too, and hold
	// nothing (docs/faults.md, "First start and restart").
	found := bestCopy(ctx, p.o.Transport, p.o.Spec, p.o.Self, p.o.Generation, nil)
	for n, start := 0, time.Now(); found.best == nil; n++ {
		var near []int
		for _, j := range found.silent {
			if j < p.o.Replicas {
				near = append(near, j)
			}
		}
		if len(near) == 0 || time.Since(start) > p.o.RestoreWait {
			break
		}
		if p.o.Generation != "" && !found.started {
			p.o.Logger.InfoContext(ctx, "first start of the deployment: no satellite of the plane has served in this generation; not waiting on the silent ones",
				"generation", p.o.Generation, "silent_slots", near)
			break
		}
		if !retry.Sleep(ctx, restorePoll.Delay(n)) {
			return ctx.Err()
		}
		again := bestCopy(ctx, p.o.Transport, p.o.Spec, p.o.Self, p.o.Generation, near)
		found.silent = again.silent
		found.started = found.started || again.started
		found.epoch = max(found.epoch, again.epoch)
		if again.best != nil {
			found.take(again.best, again.at, again.j)
		}
	}
	bestAt, best, epoch := found.at, found.best, found.epoch
	// Alone: no change runs while the state is replaced (a change pinned to
	// the state before fails afterwards: gen).
	p.gate.Lock()
	if best != nil {
		r, err := p.o.Transport.ReplicaState(ctx, bestAt, &satpagev1.ReplicaStateRequest{Namespace: p.o.Self, Snapshot: true})
		if err != nil {
			p.gate.Unlock()
			return fmt.Errorf("pull state from replica %d: %w", bestAt, err)
		}
		if !r.Synced {
			p.gate.Unlock()
			return fmt.Errorf("replica %d lost its copy while restoring: %w", bestAt, errs.ErrUnavailable)
		}
		if err := p.snap.Replace(ctx, StatesFrom(r.Sessions)); err != nil {
			p.gate.Unlock()
			return err
		}
		if inc := r.Version.GetIncarnation(); inc >= p.inc.Load() {
			p.inc.Store(inc + 1)
		}
		epoch = max(epoch, r.Version.GetEpoch())
		p.o.Logger.InfoContext(ctx, "state restored from replica", "replica", bestAt,
			"sessions", len(r.Sessions), "version", r.Version.String())
	} else {
		p.o.Logger.InfoContext(ctx, "no replica holds a copy of this satellite's state (first start, or every holder lost it); serving the local store")
	}
	blank := false
	if best == nil {
		states, err := p.snap.Snapshot(ctx)
		if err != nil {
			p.gate.Unlock()
			return err
		}
		blank = len(states) == 0 && p.seq.Load() == 0
	}
	p.blank.Store(blank)
	p.epoch.Store(max(p.epoch.Load(), epoch))
	p.gen.Add(1)
	p.mu.Lock()
	clear(p.synced) // every replica gets a snapshot of the new epoch first
	clear(p.syncedAt)
	p.mu.Unlock()
	p.gate.Unlock()
	p.ready.Store(true)
	p.started.Store(true)
	if blank {
		// Nothing to copy: the replicas get the first snapshot with the first
		// change (share). At a first start they may not even have started, and
		// a snapshot to each, relayed around the ones without an address yet,
		// was most of the constellation's work while kubelet started its pods.
		p.o.Logger.InfoContext(ctx, "nothing to copy yet: the replicas get their first snapshot with the first change")
	} else {
		for _, m := range p.Members() {
			if err := p.syncTo(ctx, m, p.seq.Load()); err != nil {
				p.retry.failed(ctx, m, "snapshot after restore", err)
			}
		}
	}
	if p.o.Generation != "" && !found.started {
		// The first start of the deployment: no primary of this satellite has
		// served, so none holds a state this one lacks; each sends its copy
		// with its own first change.
		return nil
	}
	for _, q := range PrimariesOf(p.o.Spec, p.o.Self, p.o.Replicas) {
		if err := p.o.Transport.RequestSync(ctx, q, p.o.Self); err != nil {
			p.o.Logger.InfoContext(ctx, "primary did not send its copy", "primary", q, "err", err)
		}
	}
	return nil
}

// Maintain checks the replicas every interval until ctx ends: a replica not
// known in sync (a new one: the one before it died) gets a snapshot within
// about one interval (or, for a replica whose snapshots fail, at its next try
// after the backoff). A replica in sync is pinged (one small Replicate) only
// when it stored no change for idlePing: that catches one that lost its copy
// (restarted empty) without asking for it (its RequestSync failed). None is
// pinged while it backs off. A replica set aside gets a snapshot at its next
// try (rejoin): the one it stores takes it back into the set.
func (p *Primary) Maintain(ctx context.Context, interval time.Duration) {
	if p.o.Replicas == 1 {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.stale:
			for {
				err := p.Restore(ctx)
				if err == nil {
					break
				}
				p.o.Logger.WarnContext(ctx, "restore after a fence failed; trying again", "err", err)
				if !retry.Sleep(ctx, restorePoll.Delay(0)) {
					return
				}
			}
			continue
		case <-t.C:
		}
		if !p.ready.Load() || p.blank.Load() {
			continue // restoring, or nothing to copy yet
		}
		p.rejoin(ctx)
		if !p.needsPing(max(interval/2, p.idle)) {
			continue
		}
		if err := p.mutate(ctx, func() error { return nil }, &satpagev1.StoreOp{Kind: satpagev1.StoreOp_KIND_PING}, 0); err != nil {
			// Each replica's failures are logged when they start and end (backoff.go).
			p.o.Logger.DebugContext(ctx, "replicas incomplete", "err", err)
		}
	}
}

// idlePing: an idle primary pings an in-sync replica this often. At every
// second (the upkeep's interval), 150 idle satellites at R = 2 sent 150 pings a
// second, each a TLS-framed RPC at both ends; a replica that restarts asks its
// primaries for their copies itself (Restore), so the ping is only the backstop.
const idlePing = 5 * time.Second

// needsPing reports whether a replica is due a ping or a snapshot: one not
// known in sync and not backing off, or one in sync that stored nothing within
// quiet; none while the primary is blank.
func (p *Primary) needsPing(quiet time.Duration) bool {
	if p.blank.Load() {
		return false // nothing to copy yet (share)
	}
	now := time.Now()
	for _, m := range p.Members() {
		p.mu.Lock()
		_, known := p.synced[m]
		p.mu.Unlock()
		if known && p.retry.ackedSince(m, now.Add(-quiet)) {
			continue
		}
		if ok, _ := p.retry.due(m, now); ok {
			return true
		}
	}
	return false
}

func (p *Primary) Close() error { return p.local.Close() }

// Reads: local, once restored.

func (p *Primary) GetTable(ctx context.Context, session string) (store.Table, error) {
	if err := p.check(ctx); err != nil {
		return nil, err
	}
	return p.local.GetTable(ctx, session)
}

func (p *Primary) TableSize(ctx context.Context, session string) (int, error) {
	if err := p.check(ctx); err != nil {
		return 0, err
	}
	return p.local.TableSize(ctx, session)
}

func (p *Primary) Owners(ctx context.Context, session string, pages []uint32) (store.Table, error) {
	if err := p.check(ctx); err != nil {
		return nil, err
	}
	return p.local.Owners(ctx, session, pages)
}

func (p *Primary) GetFrames(ctx context.Context, session string, pages []uint32) ([]store.Frame, error) {
	if err := p.check(ctx); err != nil {
		return nil, err
	}
	return p.local.GetFrames(ctx, session, pages)
}

func (p *Primary) CountFrames(ctx context.Context, session string) (int, error) {
	if err := p.check(ctx); err != nil {
		return 0, err
	}
	return p.local.CountFrames(ctx, session)
}

// Barrier returns once every replica holds every change applied here so far
// (a ping, replicated as a change: a replica that missed a change gets a
// snapshot first), or fails as a change does. A change applied here whose
// replication failed is in the local state; what is read back from it (an
// answer kept for a request sent again) is acknowledged only after Barrier.
func (p *Primary) Barrier(ctx context.Context) error {
	return p.mutate(ctx, func() error { return nil }, &satpagev1.StoreOp{Kind: satpagev1.StoreOp_KIND_PING}, 0)
}

// Changes: local, then every replica.

func op(k satpagev1.StoreOp_Kind, session string) *satpagev1.StoreOp {
	return &satpagev1.StoreOp{Kind: k, SessionId: session}
}

func (p *Primary) OpenTable(ctx context.Context, session string) error {
	return p.mutate(ctx, func() error { return p.local.OpenTable(ctx, session) }, op(satpagev1.StoreOp_KIND_OPEN_TABLE, session), 0)
}

func (p *Primary) PutTable(ctx context.Context, session string, table store.Table) error {
	o := op(satpagev1.StoreOp_KIND_PUT_TABLE, session)
	o.Table = tableTo(table)
	return p.mutate(ctx, func() error { return p.local.PutTable(ctx, session, table) }, o, 0)
}

func (p *Primary) SetOwner(ctx context.Context, session string, pages []uint32, owner uint32) error {
	o := op(satpagev1.StoreOp_KIND_SET_OWNER, session)
	o.Pages, o.Owner = pages, owner
	return p.mutate(ctx, func() error { return p.local.SetOwner(ctx, session, pages, owner) }, o, 0)
}

func (p *Primary) DeleteTable(ctx context.Context, session string) error {
	return p.mutate(ctx, func() error { return p.local.DeleteTable(ctx, session) }, op(satpagev1.StoreOp_KIND_DELETE_TABLE, session), 0)
}

func (p *Primary) PutFrames(ctx context.Context, session string, frames []store.Frame) error {
	o := op(satpagev1.StoreOp_KIND_PUT_FRAMES, session)
	o.Frames = framesTo(frames)
	return p.mutate(ctx, func() error { return p.local.PutFrames(ctx, session, frames) }, o, pricedPages(session, len(frames)))
}

// pricedPages is what a change of session's frames counts as replication
// traffic: the node's own bookkeeping (sessions named from NUL, e.g. the
// answers kept for exactly-once requests) is replicated but is no page
// frame, and the simulation prices only page frames (docs/faults.md).
func pricedPages(session string, n int) int {
	if strings.HasPrefix(session, "\x00") {
		return 0
	}
	return n
}

func (p *Primary) DeleteFrames(ctx context.Context, session string, pages []uint32) (int, error) {
	o := op(satpagev1.StoreOp_KIND_DELETE_FRAMES, session)
	o.Pages = pages
	var n int
	err := p.mutate(ctx, func() (err error) { n, err = p.local.DeleteFrames(ctx, session, pages); return err }, o, 0)
	return n, err
}

func (p *Primary) DropFrames(ctx context.Context, session string) (int, error) {
	var n int
	err := p.mutate(ctx, func() (err error) { n, err = p.local.DropFrames(ctx, session); return err }, op(satpagev1.StoreOp_KIND_DROP_FRAMES, session), 0)
	return n, err
}

func (p *Primary) AdoptFrames(ctx context.Context, session string, frames []store.Frame, owner uint32) error {
	o := op(satpagev1.StoreOp_KIND_ADOPT_FRAMES, session)
	o.Frames, o.Owner = framesTo(frames), owner
	return p.mutate(ctx, func() error { return p.local.AdoptFrames(ctx, session, frames, owner) }, o, len(frames))
}

func (p *Primary) AdoptAnswered(ctx context.Context, session string, frames []store.Frame, owner uint32, answers string, answer store.Frame) error {
	o := op(satpagev1.StoreOp_KIND_ADOPT_ANSWERED, session)
	o.Frames, o.Owner = framesTo(frames), owner
	o.AnswerSession, o.Answer = answers, &satpagev1.Page{Page: answer.Page, Data: answer.Data}
	return p.mutate(ctx, func() error { return p.local.AdoptAnswered(ctx, session, frames, owner, answers, answer) }, o, len(frames))
}

func (p *Primary) ReleaseFrames(ctx context.Context, session string, pages []uint32, self uint32) (int, error) {
	o := op(satpagev1.StoreOp_KIND_RELEASE_FRAMES, session)
	o.Pages, o.Owner = pages, self
	var n int
	err := p.mutate(ctx, func() (err error) { n, err = p.local.ReleaseFrames(ctx, session, pages, self); return err }, o, 0)
	return n, err
}
