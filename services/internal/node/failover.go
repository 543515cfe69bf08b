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
//
// Fencing (docs/faults.md): before it reads the session, the taker fences
// every copy of failed's state in its plane (FenceCopy): each raises failed's
// serving epoch and moves the session out, atomically with the read. failed,
// should it be only paused or cut off, acknowledges a change only once every
// one of its replicas has stored it, and a fenced replica refuses its epoch:
// so whatever it acknowledged is in the copy read here, and it acknowledges
// nothing after. epoch is failed's serving epoch after the fence.
func (n *Node) TakeOver(ctx context.Context, session string, failed uint32) (tablePages, adopted int, copyAt uint32, epoch uint64, err error) {
	if err := checkSession(session); err != nil {
		return 0, 0, 0, 0, err
	}
	if err := n.grid.Check(failed); err != nil {
		return 0, 0, 0, 0, fmt.Errorf("failed: %w", err)
	}
	if failed == n.self {
		return 0, 0, 0, 0, fmt.Errorf("satellite %d cannot take a session over from itself: %w", failed, errs.ErrInvalid)
	}
	ctx, unlock := n.lockSession(ctx, session)
	defer unlock()
	if size, err := n.store.TableSize(ctx, session); err == nil {
		return size, 0, n.self, 0, nil
	}
	if n.replicas == 1 {
		return 0, 0, 0, 0, fmt.Errorf("replication factor 1: no satellite holds a copy of satellite %d's sessions: %w", failed, errs.ErrNoFailover)
	}
	if !n.faults.Confirm(ctx, failed) {
		return 0, 0, 0, 0, fmt.Errorf("satellite %d answers its health check: it serves session %q itself: %w", failed, session, errs.ErrNoFailover)
	}
	answers := dedupSession(session)
	at, r, epoch, err := n.fenceCopies(ctx, failed, []string{session, answers})
	if err != nil {
		return 0, 0, 0, 0, err
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
		return 0, 0, 0, 0, fmt.Errorf("satellite %d's copy of satellite %d holds no page table of session %q: %w",
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
			return 0, 0, 0, 0, fmt.Errorf("satellite %d's copy of satellite %d: page %d of session %q owned there has no frame: %w",
				at, failed, p, session, errs.ErrUnavailable)
		}
		frames = append(frames, store.Frame{Page: p, Data: data})
		table[p] = n.self
	}
	// The answers and the frames first (harmless alone: nothing names them
	// yet), then the table: a crash before it leaves the session to a retry.
	if len(kept.Frames) > 0 {
		if err := n.store.PutFrames(ctx, answers, kept.Frames); err != nil {
			return 0, 0, 0, 0, err
		}
	}
	for chunk := range slices.Chunk(frames, MaxBatchPages) {
		if err := n.store.PutFrames(ctx, session, chunk); err != nil {
			return 0, 0, 0, 0, err
		}
	}
	if err := n.store.PutTable(ctx, session, table); err != nil {
		return 0, 0, 0, 0, err
	}
	n.stale.mark(session, false)
	n.forgetCopies(ctx, failed, []string{session, answers})
	n.m.PagesMoved.WithLabelValues("takeover").Add(float64(len(frames)))
	n.log.InfoContext(ctx, "session taken over from a dead satellite", "session", session, "failed", failed,
		"copy_at", at, "table_pages", len(table), "pages_adopted", len(frames), "epoch", epoch)
	return len(table), len(frames), at, epoch, nil
}

// fenceCopies fences every copy of failed's state in its plane (FenceCopy,
// in parallel) and answers the newest in-sync one (its holder, its version
// and the states of sessions) and failed's new serving epoch (the highest
// any fenced copy took). A satellite among the R-1 behind failed (where its
// replicas are while all live) that does not answer must be confirmed dead:
// one alive but out of reach could still store failed's changes unfenced.
func (n *Node) fenceCopies(ctx context.Context, failed uint32, sessions []string) (uint32, *satpagev1.FenceCopyResponse, uint64, error) {
	spec := n.grid.Spec()
	var mu sync.Mutex // guards the results below
	var best *satpagev1.FenceCopyResponse
	var bestAt uint32
	var epoch uint64
	var silent []uint32
	var wg sync.WaitGroup
	for j := 1; j < spec.PerPlane(); j++ {
		at := replica.Behind(spec, failed, j)
		wg.Go(func() {
			fctx, cancel := context.WithTimeout(ctx, forgetTimeout)
			defer cancel()
			c, err := n.peers.Satellite(at)
			if at == n.self {
				c, err = localClient{n}, nil
			}
			var r *satpagev1.FenceCopyResponse
			if err == nil {
				r, err = c.FenceCopy(fctx, &satpagev1.FenceCopyRequest{Namespace: failed, Sessions: sessions})
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if j < n.replicas {
					silent = append(silent, at)
				}
				n.log.DebugContext(ctx, "fence failed", "at", at, "namespace", failed, "err", err)
				return
			}
			epoch = max(epoch, r.Version.GetEpoch())
			if r.Synced && (best == nil || replica.Newer(r.Version, best.Version)) {
				best, bestAt = r, at
			}
		})
	}
	wg.Wait()
	for _, at := range silent {
		if !n.faults.Confirm(ctx, at) {
			return 0, nil, 0, fmt.Errorf("satellite %d, which may hold a copy of satellite %d's state, could not be fenced and answers its health check: %w",
				at, failed, errs.ErrUnavailable)
		}
	}
	if best == nil {
		return 0, nil, 0, fmt.Errorf("no live satellite holds an in-sync copy of satellite %d's state: %w", failed, errs.ErrNoFailover)
	}
	return bestAt, best, epoch, nil
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
	size, adopted, at, epoch, err := s.n.TakeOver(ctx, req.SessionId, req.Failed)
	if err != nil {
		return nil, s.n.observe(ctx, "TakeOver", start, err)
	}
	return &satpagev1.TakeOverResponse{TablePages: uint32(size), PagesAdopted: uint32(adopted), CopyAt: at, Epoch: epoch},
		s.n.observe(ctx, "TakeOver", start, nil)
}

// checkCopyRequest validates what ForgetCopy and FenceCopy both name: a
// namespace of the grid and at most MaxForget sessions of it.
func (n *Node) checkCopyRequest(namespace uint32, sessions []string) error {
	if err := n.grid.Check(namespace); err != nil {
		return err
	}
	if len(sessions) > MaxForget {
		return fmt.Errorf("%d sessions exceed %d: %w", len(sessions), MaxForget, errs.ErrInvalid)
	}
	return nil
}

func (s *satServer) ForgetCopy(ctx context.Context, req *satpagev1.ForgetCopyRequest) (*satpagev1.ForgetCopyResponse, error) {
	start := time.Now()
	if err := s.n.checkCopyRequest(req.Namespace, req.Sessions); err != nil {
		return nil, s.n.observe(ctx, "ForgetCopy", start, err)
	}
	held, err := s.n.holder.Forget(ctx, req.Namespace, req.Sessions)
	if err != nil {
		return nil, s.n.observe(ctx, "ForgetCopy", start, err)
	}
	return &satpagev1.ForgetCopyResponse{Held: held}, s.n.observe(ctx, "ForgetCopy", start, nil)
}

func (s *satServer) FenceCopy(ctx context.Context, req *satpagev1.FenceCopyRequest) (*satpagev1.FenceCopyResponse, error) {
	start := time.Now()
	if err := s.n.checkCopyRequest(req.Namespace, req.Sessions); err != nil {
		return nil, s.n.observe(ctx, "FenceCopy", start, err)
	}
	r, err := s.n.holder.Fence(ctx, req.Namespace, req.Sessions)
	if err != nil {
		return nil, s.n.observe(ctx, "FenceCopy", start, err)
	}
	return &satpagev1.FenceCopyResponse{Synced: r.Synced, Version: r.Version, Sessions: r.Sessions}, s.n.observe(ctx, "FenceCopy", start, nil)
}

func (l localClient) FenceCopy(ctx context.Context, in *satpagev1.FenceCopyRequest, _ ...grpc.CallOption) (*satpagev1.FenceCopyResponse, error) {
	return l.srv().FenceCopy(ctx, in)
}
func (l localClient) TakeOver(ctx context.Context, in *satpagev1.TakeOverRequest, _ ...grpc.CallOption) (*satpagev1.TakeOverResponse, error) {
	return l.srv().TakeOver(ctx, in)
}
func (l localClient) ForgetCopy(ctx context.Context, in *satpagev1.ForgetCopyRequest, _ ...grpc.CallOption) (*satpagev1.ForgetCopyResponse, error) {
	return l.srv().ForgetCopy(ctx, in)
}
