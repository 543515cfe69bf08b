package node

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

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
	// Fault: a moved page's wait, the round trip of the fetch that brought it.
	Fault time.Duration
}

// Access reads page (write == nil) or writes it, moving it here first when it
// is owned elsewhere and creating it when it never existed.
func (n *Node) Access(ctx context.Context, session string, page uint32, tNs int64, write []byte) (Access, error) {
	out, err := n.access(ctx, session, page, tNs, write, nil)
	if err != nil {
		return Access{}, err
	}
	return out[0], nil
}

func (n *Node) access(ctx context.Context, session string, page uint32, tNs int64, write []byte, k *keep) ([]Access, error) {
	if write != nil && len(write) > n.pageBytes {
		return nil, fmt.Errorf("page %d of %d bytes exceeds the page size %d: %w", page, len(write), n.pageBytes, errs.ErrInvalid)
	}
	return n.accesses(ctx, session, []uint32{page}, []int64{tNs}, write, k)
}

// ReadPages reads pages in order, access i at scenario time tNs[i], with the
// outcome of each as if they were read one by one (a page read twice is moved
// once, then local). The faults of the batch go out together: one page-table
// lookup, one FetchPages per (owner, scenario time) and one store write for
// the whole batch, so a batch of k faults costs a few round trips instead of 3k.
func (n *Node) ReadPages(ctx context.Context, session string, pages []uint32, tNs []int64) ([]Access, error) {
	return n.readPages(ctx, session, pages, tNs, nil)
}

func (n *Node) readPages(ctx context.Context, session string, pages []uint32, tNs []int64, k *keep) ([]Access, error) {
	if len(pages) != len(tNs) {
		return nil, fmt.Errorf("%d pages but %d scenario times: %w", len(pages), len(tNs), errs.ErrInvalid)
	}
	return n.accesses(ctx, session, pages, tNs, nil, k)
}

// keep is how a request with an id keeps its answer: built from the accesses
// and stored in the same store step as their change (dedup.go).
type keep struct {
	rid    string
	reply  func([]Access) proto.Message
	answer proto.Message // set by accesses
}

// faultKey groups the faults of a batch that travel together: same old owner,
// and the same scenario time, so the same ISL path as one by one.
type faultKey struct {
	owner uint32
	tNs   int64
}

// fetched is one chunk of pages fetched from their old owner, stored here
// with the rest of the request and released there afterwards.
type fetched struct {
	owner uint32
	tNs   int64
	pages []uint32
	hops  uint32
	bytes int
}

// accesses runs a batch of reads, or a single write (write != nil, one page).
// Nothing is stored before every fault is fetched; then the created, moved and
// written frames and the answer (k) go in one store step, and only then are
// the old owners' copies released. A request that only reads and moves, with
// no answer to keep, is answered before its step: its frames are held and
// stored with the session's next batch (releases.go, held); held frames that
// pages touch are stored first.
func (n *Node) accesses(ctx context.Context, session string, pages []uint32, tNs []int64, write []byte, k *keep) ([]Access, error) {
	if err := checkSession(session); err != nil {
		return nil, err
	}
	ctx, unlock := n.lockSession(ctx, session)
	defer unlock()
	if err := n.dropStaleTable(ctx, session); err != nil {
		return nil, err
	}
	if err := n.settleHeld(ctx, session, pages); err != nil {
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
	var changed []store.Frame                 // frames stored here by this request
	created := 0
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
			changed = append(changed, store.Frame{Page: p, Data: data})
			created++
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
	if len(local) > 0 {
		if write != nil {
			changed = append(changed, store.Frame{Page: local[0], Data: write})
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
	}
	var moves []fetched
	for _, fk := range faultOrder {
		for chunk := range slices.Chunk(faults[fk], moveChunk) {
			want := make([]uint32, len(chunk))
			for j, i := range chunk {
				want[j] = pages[i]
			}
			fetchStart := time.Now()
			frames, m, err := n.fetch(ctx, session, want, fk.owner, fk.tNs)
			if err != nil {
				return nil, err
			}
			waited := time.Since(fetchStart)
			for j, i := range chunk {
				out[i].Data, out[i].Hops, out[i].Fault = frames[j].Data, m.hops, waited
			}
			changed = append(changed, frames...)
			if write != nil {
				// The moved page, then the value written, in one store step: the
				// last frame of a page wins, and the replicas are sent (and price)
				// a move and a write, as the engine counts them (docs/faults.md).
				changed = append(changed, store.Frame{Page: want[0], Data: write})
				out[chunk[0]].Data = write
			}
			moves = append(moves, m)
		}
	}
	for i, p := range pages {
		if j := first[p]; j != i {
			out[i] = Access{Data: out[j].Data, Outcome: satpagev1.Outcome_OUTCOME_LOCAL, PreviousOwner: n.self}
		}
	}
	rid, kind := "", byte(answerDone)
	var answer proto.Message
	if k != nil && k.rid != "" {
		rid, answer = k.rid, k.reply(out)
		k.answer = answer
	}
	// A request that only reads, and moves, is answered before its adopt is
	// stored: the old owners keep the pages until it is (releases.go, held).
	hold := write == nil && rid == "" && created == 0 && len(moves) > 0
	pending := 0
	if hold {
		var bytes int
		pending, bytes = n.releases.hold(ctx, session, changed, moves)
		if bytes > maxHeldBytes {
			if err := n.storeHeldNow(ctx, session); err != nil {
				return nil, err
			}
		}
	} else if err := n.commit(ctx, session, changed, rid, kind, answer); err != nil {
		return nil, err
	}
	if created > 0 {
		n.m.AccessesOf.Of("created").Add(float64(created))
	}
	if len(local) > 0 {
		n.m.AccessesOf.Of("local").Add(float64(len(local)))
	}
	for _, m := range moves {
		if !hold {
			pending = n.releases.queue(session, m)
		}
		n.counted(m, "access")
		n.m.AccessesOf.Of("moved").Add(float64(len(m.pages)))
		h, took := n.m.FaultSecondsOf.Of(strconv.Itoa(int(m.hops))), time.Since(start).Seconds()
		for range m.pages {
			h.Observe(took)
		}
	}
	if pending >= releaseBatch {
		n.releaseInBackground(ctx, session)
	}
	return out, nil
}

// move brings pages owned by owner here: fetch (owner keeps them), store here,
// point the table here, then release at the owner. The caller holds the session lock.
func (n *Node) move(ctx context.Context, session string, pages []uint32, owner uint32, tNs int64, reason string) ([]store.Frame, uint32, error) {
	frames, m, err := n.fetch(ctx, session, pages, owner, tNs)
	if err != nil {
		return nil, 0, err
	}
	// Store at the new owner (frames and table entries in one atomic step) before
	// the old owner deletes: never a lost page.
	if err := n.store.AdoptFrames(ctx, session, frames, n.self); err != nil {
		return nil, 0, err
	}
	n.moved(ctx, session, m, reason)
	return frames, m.hops, nil
}

// fetch reads pages owned by owner (it keeps them until released), from a
// replica when the owner is dead.
func (n *Node) fetch(ctx context.Context, session string, pages []uint32, owner uint32, tNs int64) ([]store.Frame, fetched, error) {
	if err := n.grid.Check(owner); err != nil {
		return nil, fetched{}, fmt.Errorf("page table of session %q names owner: %w", session, err)
	}
	var resp *satpagev1.FetchPagesResponse
	err := n.originate(ctx, owner, tNs, "FetchPages", func(c satpagev1.SatelliteServiceClient, r *satpagev1.Route) (err error) {
		resp, err = c.FetchPages(ctx, &satpagev1.FetchPagesRequest{Route: r, SessionId: session, Pages: pages})
		return err
	})
	if err != nil && n.replicas > 1 && errs.Code(err) == codes.Unavailable && n.faults.Confirm(ctx, owner) {
		// The owner is dead: its copy is read at a replica instead (the
		// release then fails, leaving a stale copy there, never a lost page).
		// Confirm, not one probe: an owner that died silently (its dials time
		// out, as a dead Swarm task's name does) is dead after a few misses,
		// and the read waits for that rather than failing.
		resp, err = n.fetchFromReplica(ctx, session, pages, owner, tNs)
	}
	if err != nil {
		return nil, fetched{}, fmt.Errorf("fetch %d page(s) of session %q from satellite %d: %w", len(pages), session, owner, err)
	}
	if len(resp.Pages) != len(pages) {
		return nil, fetched{}, fmt.Errorf("satellite %d returned %d of %d pages: %w", owner, len(resp.Pages), len(pages), errs.ErrUnavailable)
	}
	frames := make([]store.Frame, len(resp.Pages))
	bytes := 0
	for i, p := range resp.Pages {
		if p.Page != pages[i] || len(p.Data) > n.pageBytes {
			return nil, fetched{}, fmt.Errorf("satellite %d returned page %d (%d bytes) for page %d: %w", owner, p.Page, len(p.Data), pages[i], errs.ErrUnavailable)
		}
		frames[i] = store.Frame{Page: p.Page, Data: p.Data}
		bytes += len(p.Data)
	}
	return frames, fetched{owner: owner, tNs: tNs, pages: pages, hops: resp.Hops, bytes: bytes}, nil
}

// moved finishes a move stored here: the old owner's copy is released, and
// the move is counted. (A fault's move is released in batches, off its path:
// accesses.)
func (n *Node) moved(ctx context.Context, session string, m fetched, reason string) {
	n.release(ctx, session, m.owner, m.pages, m.tNs)
	n.counted(m, reason)
}

// counted counts a move in the metrics.
func (n *Node) counted(m fetched, reason string) {
	n.m.PagesMovedOf.Of(reason).Add(float64(len(m.pages)))
	n.m.PageHopsOf.Of(reason).Add(float64(len(m.pages)) * float64(m.hops))
	n.m.PageBytesOf.Of("in").Add(float64(m.bytes))
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
	n.m.PageBytesOf.Of("out").Add(float64(bytes))
	return out, nil
}
