package node

// Live push-ahead with a lead (docs/live.md): a staged copy. lead seconds
// before a handover the serving satellite C copies the pages the gateway names
// to the predicted next satellite N (CopyAhead, StagePages) and keeps owning
// them; at the handover N, now holding the table, takes the copies not written
// since as its own (ClaimPages): no second transfer. The gateway, which sees
// every write of the session, decides which copies are still valid; a copy
// not claimed is a stale frame at N, like one a failed release leaves, and is
// overwritten by the page's next move there or dropped with the session.

import (
	"context"
	"errors"
	"fmt"
	"slices"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/errs"
	"github.com/satpage/satpage/services/internal/store"
)

// CopyAhead copies the pages among pages that this (serving) satellite owns to
// satellite to, relayed at scenario time tNs, and keeps them. It returns the
// pages copied (sorted) and the page-hops they travelled.
func (n *Node) CopyAhead(ctx context.Context, session string, to uint32, tNs int64, pages []uint32) ([]uint32, uint64, error) {
	if err := checkSession(session); err != nil {
		return nil, 0, err
	}
	if err := n.grid.Check(to); err != nil {
		return nil, 0, fmt.Errorf("to_satellite: %w", err)
	}
	if to == n.self {
		return nil, 0, fmt.Errorf("satellite %d cannot copy pages ahead to itself: %w", n.self, errs.ErrInvalid)
	}
	ctx, unlock := n.lockSession(ctx, session)
	defer unlock()
	if err := n.dropStaleTable(ctx, session); err != nil {
		return nil, 0, err
	}
	// A release this satellite still owes to satellite to (which owned a page
	// moved here since) must not arrive after the copy and delete it.
	n.flushReleases(ctx, session)
	owners, err := n.store.Owners(ctx, session, pages)
	if err != nil {
		return nil, 0, n.unknownHere(session, err)
	}
	var mine []uint32
	for p, o := range owners {
		if o == n.self {
			mine = append(mine, p)
		}
	}
	slices.Sort(mine)
	var copied []uint32
	var pageHops uint64
	for chunk := range slices.Chunk(mine, moveChunk) {
		frames, err := n.store.GetFrames(ctx, session, chunk)
		if err != nil {
			return copied, pageHops, fmt.Errorf("satellite %d owns page(s) of session %q by its table but holds no frame: %w", n.self, session, err)
		}
		wire := make([]*satpagev1.Page, len(frames))
		bytes := 0
		for i, f := range frames {
			wire[i] = &satpagev1.Page{Page: f.Page, Data: f.Data}
			bytes += len(f.Data)
		}
		var hops uint32
		err = n.originate(ctx, to, tNs, "StagePages", func(c satpagev1.SatelliteServiceClient, r *satpagev1.Route) error {
			resp, err := c.StagePages(ctx, &satpagev1.StagePagesRequest{Route: r, SessionId: session, Pages: wire})
			if err == nil {
				hops = resp.Hops
			}
			return err
		})
		if err != nil {
			return copied, pageHops, fmt.Errorf("copy %d page(s) of session %q ahead to satellite %d: %w", len(chunk), session, to, err)
		}
		copied = append(copied, chunk...)
		pageHops += uint64(len(chunk)) * uint64(hops)
		n.m.PagesMoved.WithLabelValues("copy-ahead").Add(float64(len(chunk)))
		n.m.PageHops.WithLabelValues("copy-ahead").Add(float64(len(chunk)) * float64(hops))
		n.m.PageBytes.WithLabelValues("out").Add(float64(bytes))
	}
	return copied, pageHops, nil
}

// StageHere serves StagePages at the predicted next satellite: the copies are
// stored as frames; the page table (at the serving satellite) still names
// their owner, so nothing reads them until ClaimPages.
func (n *Node) StageHere(ctx context.Context, session string, pages []*satpagev1.Page) (int, error) {
	frames := make([]store.Frame, len(pages))
	for i, p := range pages {
		if len(p.Data) > n.pageBytes {
			return 0, fmt.Errorf("page %d of %d bytes exceeds the page size %d: %w", p.Page, len(p.Data), n.pageBytes, errs.ErrInvalid)
		}
		frames[i] = store.Frame{Page: p.Page, Data: p.Data}
	}
	if err := n.settleStale(ctx, session); err != nil {
		return 0, err
	}
	if err := n.store.PutFrames(ctx, session, frames); err != nil {
		return 0, fmt.Errorf("satellite %d: %w", n.self, err)
	}
	return len(frames), nil
}

// ClaimPages makes the copies staged here of pages owned by from (by this
// serving satellite's table) this satellite's own, and releases them at from.
// A page whose copy is missing here is moved instead (counted in moved and
// pageHops); a page not owned by from is skipped.
func (n *Node) ClaimPages(ctx context.Context, session string, from uint32, tNs int64, pages []uint32) (claimed, moved int, pageHops uint64, err error) {
	if err := checkSession(session); err != nil {
		return 0, 0, 0, err
	}
	if err := n.grid.Check(from); err != nil {
		return 0, 0, 0, fmt.Errorf("from_satellite: %w", err)
	}
	if from == n.self {
		return 0, 0, 0, fmt.Errorf("satellite %d cannot claim pages from itself: %w", n.self, errs.ErrInvalid)
	}
	ctx, unlock := n.lockSession(ctx, session)
	defer unlock()
	if err := n.dropStaleTable(ctx, session); err != nil {
		return 0, 0, 0, err
	}
	n.flushReleases(ctx, session)
	owners, err := n.store.Owners(ctx, session, pages)
	if err != nil {
		return 0, 0, 0, n.unknownHere(session, err)
	}
	var want []uint32
	for p, o := range owners {
		if o == from {
			want = append(want, p)
		}
	}
	slices.Sort(want)
	var have []store.Frame
	var missing []uint32
	for _, p := range want {
		f, err := n.store.GetFrames(ctx, session, []uint32{p})
		switch {
		case errors.Is(err, errs.ErrNotFound):
			missing = append(missing, p)
		case err != nil:
			return 0, 0, 0, err
		default:
			have = append(have, f[0])
		}
	}
	if len(have) > 0 {
		// The frame is rewritten with its table entry in one atomic step (and so
		// replicated with it at R > 1), then the old owner lets go.
		if err := n.store.AdoptFrames(ctx, session, have, n.self); err != nil {
			return 0, 0, 0, err
		}
		got := make([]uint32, len(have))
		for i, f := range have {
			got[i] = f.Page
		}
		n.release(ctx, session, from, got, tNs)
		n.m.PagesMoved.WithLabelValues("claimed").Add(float64(len(got)))
	}
	for chunk := range slices.Chunk(missing, moveChunk) {
		_, hops, err := n.move(ctx, session, chunk, from, tNs, "handover")
		if err != nil {
			return len(have), moved, pageHops, err
		}
		moved += len(chunk)
		pageHops += uint64(len(chunk)) * uint64(hops)
	}
	if len(missing) > 0 {
		n.log.WarnContext(ctx, "staged copies missing at claim: moved instead", "session", session,
			"from", from, "pages", len(missing))
	}
	return len(have), moved, pageHops, nil
}
