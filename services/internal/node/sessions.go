package node

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/errs"
	"github.com/satpage/satpage/services/internal/store"
)

// OpenSession creates the session's (empty) page table here: this satellite
// serves it from now on.
func (n *Node) OpenSession(ctx context.Context, session string) error {
	err := checkSession(session)
	if err == nil {
		err = n.settleStale(ctx, session)
	}
	if err == nil {
		err = n.store.OpenTable(ctx, session)
	}
	if err != nil {
		return fmt.Errorf("satellite %d: %w", n.self, err)
	}
	return nil
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
	ctx, unlock := n.lockSession(ctx, session)
	defer unlock()
	if err := n.dropStaleTable(ctx, session); err != nil {
		return 0, 0, err
	}
	n.flushReleases(ctx, session)
	table, err := n.store.GetTable(ctx, session)
	if err != nil {
		return 0, 0, n.unknownHere(session, err)
	}
	if to == n.self {
		return len(table), 0, nil
	}
	n.partial.take(session) // a move still owed here is the next satellite's now
	entries := make([]*satpagev1.TableEntry, 0, len(table))
	for _, p := range slices.Sorted(maps.Keys(table)) {
		entries = append(entries, &satpagev1.TableEntry{Page: p, Owner: table[p]})
	}
	err = n.originate(ctx, to, tNs, "AcceptTable", func(c satpagev1.SatelliteServiceClient, r *satpagev1.Route) error {
		resp, err := c.AcceptTable(ctx, &satpagev1.AcceptTableRequest{Route: r, SessionId: session, Entries: entries, Version: tNs})
		if err == nil {
			hops = resp.Hops
		}
		return err
	})
	if err != nil {
		return 0, 0, fmt.Errorf("hand session %q over to satellite %d: %w", session, to, err)
	}
	// The new satellite holds the table now; only then does this one let go. A
	// failed delete does not undo the handover: the table is marked stale and
	// deleted by the session's next operation here (stale.go).
	if err := n.store.DeleteTable(ctx, session); err != nil {
		n.stale.mark(session, true)
		n.log.WarnContext(ctx, "delete of handed-over table failed; marked stale, deleted on the next operation",
			"session", session, "err", err)
	}
	return len(table), hops, nil
}

// AcceptTable stores a page table handed over to this satellite, which then
// serves the session (the handler has checked every owner against the grid).
// A stale table of the session here (stale.go) is replaced, under the session
// lock so that no retried delete removes the new one.
//
// version is the table's (the handover's scenario time; 0: unversioned). The
// newest version this satellite has held of the session is kept with the
// session's answers (dedup.go: replicated, moved by a takeover, dropped when
// the session ends). An older table is refused (errs.ErrStaleTable): it comes
// from a handover sent on an out-of-date view of the session (another
// gateway moved it on meanwhile), and storing it would undo the changes made
// under the newer one. The same version again is a retried handover: the
// table held is kept (it may have changed since), and one that has moved on
// is not brought back.
func (n *Node) AcceptTable(ctx context.Context, session string, table store.Table, version int64) error {
	ctx, unlock := n.lockSession(ctx, session)
	defer unlock()
	held, err := n.tableVersion(ctx, session)
	if err != nil {
		return err
	}
	if version > 0 && version <= held {
		_, terr := n.store.TableSize(ctx, session)
		switch {
		case version == held && terr == nil && !n.stale.has(session):
			return nil // a retried handover: the table is here already
		case terr != nil && !errors.Is(terr, errs.ErrUnknownSession):
			return terr
		}
		return fmt.Errorf("satellite %d: table of session %q at version %d, older than or moved on from version %d held here: %w",
			n.self, session, version, held, errs.ErrStaleTable)
	}
	if err := n.store.PutTable(ctx, session, table); err != nil {
		return err
	}
	n.stale.mark(session, false)
	// After the table: a crash between the two leaves the older version, and
	// the retried handover stores the same table again.
	if version > held {
		return n.setTableVersion(ctx, session, version)
	}
	return nil
}

// MovePages moves every page of the session owned elsewhere to this (serving)
// satellite; with only, just those of them (push-ahead). The counts include the
// pages that failed attempts at the same scenario time moved (partialMoves), so
// that the attempt that succeeds reports the whole handover's move.
func (n *Node) MovePages(ctx context.Context, session string, tNs int64, only []uint32) (moved int, pageHops uint64, err error) {
	return n.movePages(ctx, session, tNs, only, "")
}

// movePages is MovePages; with a request id rid each chunk moved is stored
// with the count so far (dedup.go), in one store step, and the last with the
// whole answer: a retry after a crash moves only what is left and answers
// the whole move once (the in-memory partialMoves are for requests without one).
func (n *Node) movePages(ctx context.Context, session string, tNs int64, only []uint32, rid string) (moved int, pageHops uint64, err error) {
	if err := checkSession(session); err != nil {
		return 0, 0, err
	}
	ctx, unlock := n.lockSession(ctx, session)
	defer unlock()
	if err := n.dropStaleTable(ctx, session); err != nil {
		return 0, 0, err
	}
	if rid != "" {
		var kept satpagev1.MovePagesResponse
		ok, err := n.recallProgress(ctx, session, rid, &kept)
		if err != nil {
			return 0, 0, err
		}
		if ok {
			moved, pageHops = int(kept.Moved), kept.PageHops
		}
	} else {
		if p, ok := n.partial.take(session); ok && p.tNs == tNs {
			moved, pageHops = p.moved, p.pageHops
		}
		defer func() {
			if err != nil && moved > 0 {
				n.partial.put(session, movedSoFar{tNs: tNs, moved: moved, pageHops: pageHops})
			}
		}()
	}
	n.flushReleases(ctx, session)
	table, err := n.store.GetTable(ctx, session)
	if err != nil {
		return 0, 0, n.unknownHere(session, err)
	}
	byOwner := map[uint32][]uint32{}
	if only == nil {
		for p, o := range table {
			if o != n.self {
				byOwner[o] = append(byOwner[o], p)
			}
		}
	} else {
		seen := map[uint32]bool{}
		for _, p := range only {
			if o, ok := table[p]; ok && o != n.self && !seen[p] {
				seen[p] = true
				byOwner[o] = append(byOwner[o], p)
			}
		}
	}
	type part struct {
		owner uint32
		pages []uint32
	}
	var parts []part
	for _, owner := range slices.Sorted(maps.Keys(byOwner)) {
		pages := byOwner[owner]
		slices.Sort(pages)
		for chunk := range slices.Chunk(pages, moveChunk) {
			parts = append(parts, part{owner, chunk})
		}
	}
	if rid != "" && len(parts) == 0 {
		// Nothing (left) to move: the answer alone.
		answer := &satpagev1.MovePagesResponse{Moved: uint32(moved), PageHops: pageHops}
		return moved, pageHops, n.commit(ctx, session, nil, rid, answerDone, answer)
	}
	for i, pt := range parts {
		if rid == "" {
			_, hops, err := n.move(ctx, session, pt.pages, pt.owner, tNs, "handover")
			if err != nil {
				return moved, pageHops, err
			}
			moved += len(pt.pages)
			pageHops += uint64(len(pt.pages)) * uint64(hops)
			continue
		}
		frames, m, err := n.fetch(ctx, session, pt.pages, pt.owner, tNs)
		if err != nil {
			return moved, pageHops, err
		}
		answer := &satpagev1.MovePagesResponse{Moved: uint32(moved + len(pt.pages)),
			PageHops: pageHops + uint64(len(pt.pages))*uint64(m.hops)}
		kind := byte(answerProgress)
		if i == len(parts)-1 {
			kind = answerDone
		}
		if err := n.commit(ctx, session, frames, rid, kind, answer); err != nil {
			return moved, pageHops, err
		}
		moved, pageHops = int(answer.Moved), answer.PageHops
		n.moved(ctx, session, m, "handover")
	}
	return moved, pageHops, nil
}

// partialMoves are the pages that a MovePages which then failed had moved,
// per session: the reply of a failed call carries no counts, so the attempt
// that succeeds (at the same scenario time) reports them, and the gateway
// counts every page of a proactive move once. In memory only.
type partialMoves struct {
	mu sync.Mutex // guards m
	m  map[string]movedSoFar
}

type movedSoFar struct {
	tNs      int64
	moved    int
	pageHops uint64
}

func (p *partialMoves) put(session string, m movedSoFar) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.m[session] = m
}

// take removes and returns what failed attempts moved for session.
func (p *partialMoves) take(session string) (movedSoFar, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	m, ok := p.m[session]
	delete(p.m, session)
	return m, ok
}

// EndSession deletes every frame of the session (here and at each owner its
// table names, relayed) and then its page table.
func (n *Node) EndSession(ctx context.Context, session string, tNs int64) (int, error) {
	if err := checkSession(session); err != nil {
		return 0, err
	}
	ctx, unlock := n.lockSession(ctx, session)
	defer unlock()
	if err := n.dropStaleTable(ctx, session); err != nil {
		return 0, err
	}
	n.partial.take(session)
	n.flushReleases(ctx, session)
	table, err := n.store.GetTable(ctx, session)
	if err != nil {
		return 0, n.unknownHere(session, err)
	}
	owners := map[uint32]int{} // owner -> pages the table assigns to it
	for _, o := range table {
		owners[o]++
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
		if err != nil && n.replicas > 1 && n.faults.Suspect(ctx, o) {
			// A dead owner's frames live on in the copies of its state: they go
			// there, so that a restart restores it without them, and the session
			// ends instead of waiting for the owner to come back.
			n.forgetCopies(ctx, o, []string{session})
			deleted += owners[o]
			n.log.InfoContext(ctx, "session ended with an owner dead: its frames dropped from the copies of its state",
				"session", session, "owner", o, "pages", owners[o])
			continue
		}
		if err != nil {
			return deleted, fmt.Errorf("drop session %q at satellite %d: %w", session, o, err)
		}
	}
	n.forget(ctx, session)
	return deleted, n.store.DeleteTable(ctx, session)
}

// DropHere serves DropSession at a satellite of the session's trail: it
// deletes the frames held here. The serving satellite refuses (its table still
// names the pages it owns): a session is ended there, with EndSession.
func (n *Node) DropHere(ctx context.Context, session string) (int, error) {
	return n.dropHere(ctx, session, false)
}

// dropHere is DropHere; takenOver: the session was taken over from this
// satellite (failover), so a page table of it here is stale and goes too.
func (n *Node) dropHere(ctx context.Context, session string, takenOver bool) (int, error) {
	if err := n.settleStale(ctx, session); err != nil {
		return 0, err
	}
	if takenOver {
		unlock := n.locks.lock(session)
		err := n.store.DeleteTable(ctx, session)
		unlock()
		if err != nil && !errors.Is(err, errs.ErrUnknownSession) {
			return 0, err
		}
		if err == nil {
			n.log.InfoContext(ctx, "stale page table of a session taken over deleted", "session", session)
		}
		n.forget(ctx, session) // and the answers restored with it
	}
	if _, err := n.store.TableSize(ctx, session); err == nil {
		return 0, fmt.Errorf("satellite %d serves session %q (holds its page table): end it with EndSession: %w",
			n.self, session, errs.ErrStillOwned)
	}
	return n.store.DropFrames(ctx, session)
}

// CopyFrames is the number of a session's frames in this satellite's copy of
// satellite ns's state: what ns held, asked while ns is dead.
func (n *Node) CopyFrames(ctx context.Context, ns uint32, session string) (int, error) {
	if err := checkSession(session); err != nil {
		return 0, err
	}
	if err := n.grid.Check(ns); err != nil {
		return 0, err
	}
	return n.holder.CountFrames(ctx, ns, session)
}

// SessionFrames reports what this satellite holds of a session.
func (n *Node) SessionFrames(ctx context.Context, session string) (frames int, serving bool, tablePages int, err error) {
	if err := checkSession(session); err != nil {
		return 0, false, 0, err
	}
	// Releases this satellite owes for the session go out first, so that the
	// counts at the old owners are settled once this returns.
	unlock := n.locks.lock(session)
	err = n.dropStaleTable(ctx, session)
	if err == nil {
		n.flushReleases(ctx, session)
	}
	unlock()
	if err != nil {
		return 0, false, 0, err
	}
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
