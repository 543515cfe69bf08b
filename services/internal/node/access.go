package node

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"google.golang.org/grpc/codes"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/errs"
	"github.com/satpage/satpage/services/internal/store"
)

// Access is the result of one page access at the serving satellite.
type Access struct {
	Data          []byte
	Hops          uint32
	Outcome       satpagev1.Outcome
	PreviousOwner uint32
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
	if err := n.dropStaleTable(ctx, session); err != nil {
		return nil, err
	}
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
	if err != nil && n.replicas > 1 && errs.Code(err) == codes.Unavailable && n.faults.Suspect(ctx, owner) {
		// The owner is dead: its copy is read at a replica instead (the
		// release then fails, leaving a stale copy there, never a lost page).
		resp, err = n.fetchFromReplica(ctx, session, pages, owner, tNs)
	}
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

// FetchHere serves FetchPages at the owner: the frames stay until ReleasePages.
func (n *Node) FetchHere(ctx context.Context, session string, pages []uint32) ([]*satpagev1.Page, error) {
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
