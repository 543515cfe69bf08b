package node

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/satpage/satpage/services/internal/errs"
)

// staleTables are the sessions this satellite handed over but whose page table
// it then failed to delete (the store failed after the new satellite had stored
// its copy). Such a table must neither serve the session here (two tables
// would diverge) nor make this satellite refuse the new serving satellite's
// ReleasePages or the gateway's DropSession as if it still owned the pages (a
// leak of frames and table). So every operation of the session here deletes it
// first, AcceptTable replaces it when the session comes back, and Close tries
// once more. The marks live in memory: a restart before the retry leaves the
// table (logged when the delete failed).
type staleTables struct {
	mu sync.Mutex // guards m
	m  map[string]bool
}

func (s *staleTables) mark(session string, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if on {
		s.m[session] = true
	} else {
		delete(s.m, session)
	}
}

func (s *staleTables) has(session string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[session]
}

// dropStaleTable deletes the session's page table if it is stale here (the
// caller holds the session lock).
func (n *Node) dropStaleTable(ctx context.Context, session string) error {
	if !n.stale.has(session) {
		return nil
	}
	if err := n.store.DeleteTable(ctx, session); err != nil && !errors.Is(err, errs.ErrUnknownSession) {
		return fmt.Errorf("satellite %d handed session %q over but cannot delete its old page table: %w", n.self, session, err)
	}
	n.stale.mark(session, false)
	n.log.InfoContext(ctx, "stale page table of a handed-over session deleted", "session", session)
	return nil
}

// settleStale is dropStaleTable for operations that do not hold the session
// lock (those served for another satellite); it takes the lock only when the
// table is stale, so the common path never waits.
func (n *Node) settleStale(ctx context.Context, session string) error {
	if !n.stale.has(session) {
		return nil
	}
	defer n.locks.lock(session)()
	return n.dropStaleTable(ctx, session)
}

// closeStale tries once more to delete every stale table (at Close).
func (n *Node) closeStale(ctx context.Context) error {
	n.stale.mu.Lock()
	sessions := slices.Sorted(maps.Keys(n.stale.m))
	n.stale.mu.Unlock()
	var failed []error
	for _, s := range sessions {
		if err := n.settleStale(ctx, s); err != nil {
			failed = append(failed, err)
		}
	}
	return errors.Join(failed...)
}
