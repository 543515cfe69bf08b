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
	mu      sync.RWMutex // changes hold it shared; installing a snapshot holds it alone
	st      *store.Memory
	vmu     sync.Mutex // guards synced, syncID, version
	synced  bool
	syncID  uint64
	version *satpagev1.ReplicaVersion
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
		c = &nsCopy{st: store.NewMemory(), version: &satpagev1.ReplicaVersion{}}
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

// Replicate applies one change of namespace ns. ErrNotSynced when this copy
// is not the snapshot syncID the primary believes it is, or the change does
// not apply (the copy then counts as out of sync until the next snapshot).
func (h *Holder) Replicate(ctx context.Context, ns uint32, syncID uint64, v *satpagev1.ReplicaVersion, op *satpagev1.StoreOp) error {
	c := h.copyOf(ns)
	c.mu.RLock()
	defer c.mu.RUnlock()
	c.vmu.Lock()
	synced, have := c.synced, c.syncID
	c.vmu.Unlock()
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
	c.vmu.Unlock()
	return nil
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
	c.version = &satpagev1.ReplicaVersion{Incarnation: c.version.GetIncarnation(), Seq: c.version.GetSeq() + 1}
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
