package replica

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"google.golang.org/protobuf/proto"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/errs"
	"github.com/satpage/satpage/services/internal/store"
)

// Holder keeps the copies this satellite holds of other satellites' state
// (namespaces, by primary), each in an in-process store.Memory: a copy lives
// as long as the satnode process, and a satellite that restarts asks its
// primaries for fresh copies (RequestSync) before it reports SERVING.
// Safe for concurrent use.
type Holder struct {
	mu sync.Mutex // guards ns (the map)
	ns map[uint32]*nsCopy
}

// nsCopy is one namespace's copy.
type nsCopy struct {
	mu      sync.RWMutex // changes hold it shared; installing a snapshot or a fence holds it alone
	st      *store.Memory
	vmu     sync.Mutex // guards synced, syncID, version, epoch
	synced  bool
	syncID  uint64
	version *satpagev1.ReplicaVersion
	// epoch is the fence: the highest serving epoch of the namespace known
	// here (from its primary's messages, or raised by a takeover's FenceCopy).
	// A change or snapshot of an older epoch is refused.
	epoch uint64
	// parked: sessions fenced out of the copy by a takeover (their states as
	// the copy held them when fenced), kept apart from the copy (a snapshot
	// does not replace them and a restore does not read them) until ForgetCopy,
	// so that a takeover cut off midway can be asked again. Guarded by mu.
	parked map[string]store.SessionState
	// A snapshot being received (chunks), installed by the last chunk.
	pendingID     uint64
	pendingStates []store.SessionState
}

// NewHolder returns a holder with no copies.
func NewHolder() *Holder { return &Holder{ns: map[uint32]*nsCopy{}} }

func (h *Holder) copyOf(ns uint32) *nsCopy {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.ns[ns]
	if c == nil {
		c = &nsCopy{st: store.NewMemory(), version: &satpagev1.ReplicaVersion{}, parked: map[string]store.SessionState{}}
		h.ns[ns] = c
	}
	return c
}

// held is the copy of ns, or nil when this satellite holds none (unlike copyOf,
// it creates nothing).
func (h *Holder) held(ns uint32) *nsCopy {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ns[ns]
}

// inSync reports whether the copy holds every change of its primary.
func (c *nsCopy) inSync() bool {
	c.vmu.Lock()
	defer c.vmu.Unlock()
	return c.synced
}

func notSynced(ns uint32, why string) error {
	return fmt.Errorf("copy of satellite %d's state: %s: %w", ns, why, errs.ErrNotSynced)
}

// fenced refuses a message of epoch e from ns's primary when the copy knows a
// newer epoch (a takeover fenced it), and otherwise takes e up. c.vmu held.
func (c *nsCopy) fenced(ns uint32, e uint64) error {
	if e < c.epoch {
		return fmt.Errorf("copy of satellite %d's state: serving epoch %d is older than %d (sessions were taken over from it): %w",
			ns, e, c.epoch, errs.ErrStaleEpoch)
	}
	c.epoch = e
	return nil
}

// Replicate applies one change of namespace ns. ErrNotSynced when this copy
// is not the snapshot syncID the primary believes it is, or the change does
// not apply (the copy then counts as out of sync until the next snapshot).
func (h *Holder) Replicate(ctx context.Context, ns uint32, syncID uint64, v *satpagev1.ReplicaVersion, op *satpagev1.StoreOp) error {
	c := h.copyOf(ns)
	c.mu.RLock()
	defer c.mu.RUnlock()
	c.vmu.Lock()
	synced, have := c.synced, c.syncID
	stale := c.fenced(ns, v.GetEpoch())
	c.vmu.Unlock()
	if stale != nil {
		return stale
	}
	if !synced || have != syncID {
		return notSynced(ns, fmt.Sprintf("holds snapshot %d (in sync %v), primary sent %d", have, synced, syncID))
	}
	if err := Apply(ctx, c.st, op); err != nil {
		if ctx.Err() != nil {
			return err
		}
		c.vmu.Lock()
		c.synced = false // the copy diverged: the primary sends a snapshot
		c.vmu.Unlock()
		return notSynced(ns, fmt.Sprintf("change %v did not apply: %v", op.Kind, err))
	}
	c.vmu.Lock()
	if newer(v, c.version) {
		c.version = proto.Clone(v).(*satpagev1.ReplicaVersion)
	}
	c.vmu.Unlock()
	return nil
}

// Install receives one chunk of a snapshot of namespace ns; the last chunk
// replaces the copy and makes it in sync with syncID.
func (h *Holder) Install(ctx context.Context, ns uint32, syncID uint64, v *satpagev1.ReplicaVersion, first, last bool, states []store.SessionState) error {
	c := h.copyOf(ns)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.vmu.Lock()
	stale := c.fenced(ns, v.GetEpoch())
	c.vmu.Unlock()
	if stale != nil {
		return stale
	}
	if first {
		c.pendingID, c.pendingStates = syncID, nil
	} else if c.pendingID != syncID {
		return notSynced(ns, fmt.Sprintf("chunk of snapshot %d while receiving %d", syncID, c.pendingID))
	}
	c.pendingStates = append(c.pendingStates, states...)
	if !last {
		return nil
	}
	st := store.NewMemory()
	if err := st.Replace(ctx, c.pendingStates); err != nil {
		return err
	}
	c.st, c.pendingStates, c.pendingID = st, nil, 0
	c.vmu.Lock()
	c.synced, c.syncID = true, syncID
	c.version = proto.Clone(v).(*satpagev1.ReplicaVersion)
	c.version.Epoch = max(c.version.Epoch, c.epoch)
	c.vmu.Unlock()
	return nil
}

// Fence raises the serving epoch of the copy of ns above every epoch it has
// seen (from now on it refuses the primary's older changes and snapshots:
// a primary that was only paused or cut off acknowledges nothing more) and
// moves sessions out of the copy, parked until Forget. It answers whether the
// copy is in sync, its version after the fence, and the states of sessions as
// the copy held them when first fenced (a retry answers the same). A copy not
// in sync is fenced too but answers no state.
func (h *Holder) Fence(ctx context.Context, ns uint32, sessions []string) (*satpagev1.ReplicaStateResponse, error) {
	c := h.copyOf(ns)
	c.mu.Lock() // no change of ns runs meanwhile: it is in the copy read, or refused
	defer c.mu.Unlock()
	c.vmu.Lock()
	c.epoch = max(c.epoch, c.version.GetEpoch()) + 1
	c.version = &satpagev1.ReplicaVersion{Epoch: c.epoch, Incarnation: c.version.GetIncarnation(), Seq: c.version.GetSeq()}
	out := &satpagev1.ReplicaStateResponse{Synced: c.synced, Version: proto.Clone(c.version).(*satpagev1.ReplicaVersion)}
	synced := c.synced
	c.vmu.Unlock()
	if !synced {
		return out, nil
	}
	var fresh []string
	for _, s := range sessions {
		if _, ok := c.parked[s]; !ok {
			fresh = append(fresh, s)
		}
	}
	if len(fresh) > 0 {
		states, err := c.st.Snapshot(ctx)
		if err != nil {
			return nil, err
		}
		for _, s := range fresh {
			st := store.SessionState{Session: s}
			if i := slices.IndexFunc(states, func(x store.SessionState) bool { return x.Session == s }); i >= 0 {
				st = states[i]
			}
			c.parked[s] = st
			if err := c.st.DeleteTable(ctx, s); err != nil && !errors.Is(err, errs.ErrUnknownSession) {
				return nil, err
			}
			if _, err := c.st.DropFrames(ctx, s); err != nil {
				return nil, err
			}
		}
	}
	var states []store.SessionState
	for _, s := range sessions {
		if st := c.parked[s]; st.HasTable || len(st.Frames) > 0 {
			states = append(states, st)
		}
	}
	out.Sessions = StatesTo(states)
	return out, nil
}

// State reports whether the copy of ns is in sync and its version, and with
// snapshot its whole content (only the states of sessions, when given).
func (h *Holder) State(ctx context.Context, ns uint32, snapshot bool, sessions ...string) (*satpagev1.ReplicaStateResponse, error) {
	c := h.held(ns)
	if c == nil {
		return &satpagev1.ReplicaStateResponse{}, nil
	}
	c.mu.Lock() // no change runs while the snapshot is read: one consistent version
	defer c.mu.Unlock()
	c.vmu.Lock()
	out := &satpagev1.ReplicaStateResponse{Synced: c.synced, Version: proto.Clone(c.version).(*satpagev1.ReplicaVersion)}
	c.vmu.Unlock()
	if snapshot && c.synced {
		states, err := c.st.Snapshot(ctx)
		if err != nil {
			return nil, err
		}
		if len(sessions) > 0 {
			states = slices.DeleteFunc(states, func(s store.SessionState) bool { return !slices.Contains(sessions, s.Session) })
		}
		out.Sessions = StatesTo(states)
	}
	return out, nil
}

// Forget drops sessions (page tables and frames) from the copy of ns: they
// were taken over by another satellite, and ns, should it restore from this
// copy, must not serve them again. The copy's version goes one change up, so
// that a restore prefers it to a copy that could not be told (BestCopy takes
// the newest). Reports whether this satellite holds an in-sync copy of ns.
func (h *Holder) Forget(ctx context.Context, ns uint32, sessions []string) (bool, error) {
	c := h.held(ns)
	if c == nil {
		return false, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range sessions {
		delete(c.parked, s)
	}
	if !c.inSync() {
		return false, nil
	}
	for _, s := range sessions {
		if err := c.st.DeleteTable(ctx, s); err != nil && !errors.Is(err, errs.ErrUnknownSession) {
			return true, err
		}
		if _, err := c.st.DropFrames(ctx, s); err != nil {
			return true, err
		}
	}
	c.vmu.Lock()
	c.version = &satpagev1.ReplicaVersion{Epoch: c.version.GetEpoch(), Incarnation: c.version.GetIncarnation(), Seq: c.version.GetSeq() + 1}
	c.vmu.Unlock()
	return true, nil
}

// Frames reads pages of session from the copy of ns (a dead owner's pages
// served by its replica). ErrNotSynced when the copy is not in sync.
func (h *Holder) Frames(ctx context.Context, ns uint32, session string, pages []uint32) ([]store.Frame, error) {
	c := h.copyOf(ns)
	c.mu.RLock()
	defer c.mu.RUnlock()
	if !c.inSync() {
		return nil, notSynced(ns, "cannot serve its pages")
	}
	return c.st.GetFrames(ctx, session, pages)
}

// CountFrames is the number of session's frames in the copy of ns (what a
// dead ns held of it). ErrNotSynced when this satellite holds no in-sync copy.
func (h *Holder) CountFrames(ctx context.Context, ns uint32, session string) (int, error) {
	c := h.held(ns)
	if c == nil {
		return 0, notSynced(ns, "not held here")
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if !c.inSync() {
		return 0, notSynced(ns, "cannot count its frames")
	}
	return c.st.CountFrames(ctx, session)
}

// Namespaces are the primaries whose in-sync copies this satellite holds.
func (h *Holder) Namespaces() []uint32 {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []uint32
	for ns, c := range h.ns {
		c.vmu.Lock()
		if c.synced {
			out = append(out, ns)
		}
		c.vmu.Unlock()
	}
	return out
}
