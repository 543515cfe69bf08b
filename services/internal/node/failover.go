package node

// Failover (docs/faults.md): when a session's serving satellite dies, the
// gateway asks a live satellite behind it in its plane (the first, with R = 2
// the one holding its copy) to take the session over. The new server reads
// the session from the newest copy of the dead satellite's state (BestCopy:
// the replicas hold every acknowledged change), stores the answers kept for
// its requests, the pages the dead satellite owned and then the page table
// (the step that makes it serve the session) in its own replicated store, and
// tells every copy of the dead satellite's state to drop the session, so that
// the dead satellite, restored from one when it comes back, does not serve it
// again. It serves the session until the schedule's next handover, which
// then starts from it.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/errs"
	"github.com/satpage/satpage/services/internal/replica"
	"github.com/satpage/satpage/services/internal/store"
)

// MaxForget bounds the sessions named in one ForgetCopy or ReplicaState.
const MaxForget = 64

// forgetTimeout bounds each holder's ForgetCopy during a takeover.
const forgetTimeout = 2 * time.Second

// TakeOver makes this satellite serve session in place of failed, its dead
// serving satellite. A retry after a takeover that succeeded (or a session
// this satellite already serves) answers the table it holds and adopts nothing.
func (n *Node) TakeOver(ctx context.Context, session string, failed uint32) (tablePages, adopted int, copyAt uint32, err error) {
	if err := checkSession(session); err != nil {
		return 0, 0, 0, err
	}
	if err := n.grid.Check(failed); err != nil {
		return 0, 0, 0, fmt.Errorf("failed: %w", err)
	}
	if failed == n.self {
		return 0, 0, 0, fmt.Errorf("satellite %d cannot take a session over from itself: %w", failed, errs.ErrInvalid)
	}
	defer n.locks.lock(session)()
	if size, err := n.store.TableSize(ctx, session); err == nil {
		return size, 0, n.self, nil
	}
	if n.replicas == 1 {
		return 0, 0, 0, fmt.Errorf("replication factor 1: no satellite holds a copy of satellite %d's sessions: %w", failed, errs.ErrNoFailover)
	}
	if !n.faults.Confirm(ctx, failed) {
		return 0, 0, 0, fmt.Errorf("satellite %d answers its health check: it serves session %q itself: %w", failed, session, errs.ErrNoFailover)
	}
	t := transport{n}
	at, best := replica.BestCopy(ctx, t, n.grid.Spec(), failed)
	if best == nil {
		return 0, 0, 0, fmt.Errorf("no live satellite holds an in-sync copy of satellite %d's state: %w", failed, errs.ErrNoFailover)
	}
	answers := dedupSession(session)
	r, err := t.ReplicaState(ctx, at, &satpagev1.ReplicaStateRequest{Namespace: failed, Snapshot: true, Sessions: []string{session, answers}})
	if err != nil {
		return 0, 0, 0, fmt.Errorf("read session %q from satellite %d's copy of satellite %d: %w", session, at, failed, err)
	}
	if !r.Synced {
		return 0, 0, 0, fmt.Errorf("satellite %d lost its copy of satellite %d meanwhile: %w", at, failed, errs.ErrUnavailable)
	}
	var st, kept store.SessionState
	for _, s := range replica.StatesFrom(r.Sessions) {
		switch s.Session {
		case session:
			st = s
		case answers:
			kept = s
		}
	}
	if !st.HasTable {
		return 0, 0, 0, fmt.Errorf("satellite %d's copy of satellite %d holds no page table of session %q: %w",
			at, failed, session, errs.ErrUnknownSession)
	}
	held := make(map[uint32][]byte, len(st.Frames))
	for _, f := range st.Frames {
		held[f.Page] = f.Data
	}
	table := maps.Clone(st.Table)
	var frames []store.Frame
	for _, p := range slices.Sorted(maps.Keys(table)) {
		if table[p] != failed {
			continue
		}
		data, ok := held[p]
		if !ok {
			return 0, 0, 0, fmt.Errorf("satellite %d's copy of satellite %d: page %d of session %q owned there has no frame: %w",
				at, failed, p, session, errs.ErrUnavailable)
		}
		frames = append(frames, store.Frame{Page: p, Data: data})
		table[p] = n.self
	}
	// The answers and the frames first (harmless alone: nothing names them
	// yet), then the table: a crash before it leaves the session to a retry.
	if len(kept.Frames) > 0 {
		if err := n.store.PutFrames(ctx, answers, kept.Frames); err != nil {
			return 0, 0, 0, err
		}
	}
	for chunk := range slices.Chunk(frames, MaxBatchPages) {
		if err := n.store.PutFrames(ctx, session, chunk); err != nil {
			return 0, 0, 0, err
		}
	}
	if err := n.store.PutTable(ctx, session, table); err != nil {
		return 0, 0, 0, err
	}
	n.stale.mark(session, false)
	n.forgetCopies(ctx, failed, []string{session, answers})
	n.m.PagesMoved.WithLabelValues("takeover").Add(float64(len(frames)))
	n.log.InfoContext(ctx, "session taken over from a dead satellite", "session", session, "failed", failed,
		"copy_at", at, "table_pages", len(table), "pages_adopted", len(frames))
	return len(table), len(frames), at, nil
}

// forgetCopies tells every satellite of failed's plane to drop sessions from
// its copy of failed's state (those without a copy do nothing). Best effort:
// a copy that was not told is older than the ones that were (Holder.Forget).
func (n *Node) forgetCopies(ctx context.Context, failed uint32, sessions []string) {
	var wg sync.WaitGroup
	for j := 1; j < n.grid.Spec().PerPlane(); j++ {
		at := replica.Behind(n.grid.Spec(), failed, j)
		wg.Go(func() {
			fctx, cancel := context.WithTimeout(ctx, forgetTimeout)
			defer cancel()
			c, err := n.peers.Satellite(at)
			if at == n.self {
				c, err = localClient{n}, nil
			}
			if err == nil {
				_, err = c.ForgetCopy(fctx, &satpagev1.ForgetCopyRequest{Namespace: failed, Sessions: sessions})
			}
			if err != nil {
				n.log.DebugContext(ctx, "forget copy failed", "at", at, "namespace", failed, "err", err)
			}
		})
	}
	wg.Wait()
}

func (s *satServer) TakeOver(ctx context.Context, req *satpagev1.TakeOverRequest) (*satpagev1.TakeOverResponse, error) {
	start := time.Now()
	size, adopted, at, err := s.n.TakeOver(ctx, req.SessionId, req.Failed)
	if err != nil {
		return nil, s.n.observe(ctx, "TakeOver", start, err)
	}
	return &satpagev1.TakeOverResponse{TablePages: uint32(size), PagesAdopted: uint32(adopted), CopyAt: at},
		s.n.observe(ctx, "TakeOver", start, nil)
}

func (s *satServer) ForgetCopy(ctx context.Context, req *satpagev1.ForgetCopyRequest) (*satpagev1.ForgetCopyResponse, error) {
	start := time.Now()
	if err := s.n.grid.Check(req.Namespace); err != nil {
		return nil, s.n.observe(ctx, "ForgetCopy", start, err)
	}
	if len(req.Sessions) > MaxForget {
		return nil, s.n.observe(ctx, "ForgetCopy", start, fmt.Errorf("%d sessions exceed %d: %w", len(req.Sessions), MaxForget, errs.ErrInvalid))
	}
	held, err := s.n.holder.Forget(ctx, req.Namespace, req.Sessions)
	if err != nil {
		return nil, s.n.observe(ctx, "ForgetCopy", start, err)
	}
	return &satpagev1.ForgetCopyResponse{Held: held}, s.n.observe(ctx, "ForgetCopy", start, nil)
}

func (l localClient) TakeOver(ctx context.Context, in *satpagev1.TakeOverRequest, _ ...grpc.CallOption) (*satpagev1.TakeOverResponse, error) {
	return l.srv().TakeOver(ctx, in)
}
func (l localClient) ForgetCopy(ctx context.Context, in *satpagev1.ForgetCopyRequest, _ ...grpc.CallOption) (*satpagev1.ForgetCopyResponse, error) {
	return l.srv().ForgetCopy(ctx, in)
}
