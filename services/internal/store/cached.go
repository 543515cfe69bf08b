package store

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/satpage/satpage/services/internal/errs"
)

// Cached is a PageStore that keeps, in process memory and in front of a
// backend that stays the store of record (a satellite's Redis), the page tables
// of the sessions served here and the frames stored most recently, up to a
// budget. A one-page fault then costs one backend round trip instead of three
// (docs/services.md, "Speed"): the serving satellite looks its owner up in
// memory, the old owner serves the frame from memory, and only the adoption
// of the moved frame goes to the backend.
//
// Write-through: every change goes to the backend first and reaches memory
// only once the backend has stored it; a change the backend refuses or may
// have half done (an error) drops what memory held of it. So memory never
// holds what the backend does not, and a crash of the process loses nothing
// the backend held. A backend call and the memory update that follows it run
// under the session's stripe lock, so memory follows the backend's order of a
// session's changes (a read that misses loads under it too, never over a newer
// write). Nothing but this value may change the backend (the node owns its
// Redis); Replace resets memory.
type Cached struct {
	back PageStore
	snap Snapshotter // back's; nil when it has none

	seed    maphash.Seed
	stripes [cacheStripes]sync.Mutex // a session's backend call + memory update, by hash of the session

	mu          sync.Mutex // guards the fields below
	tables      map[string]Table
	tableUse    map[string]uint64 // session -> tick of its last use (eviction: least recently used first)
	tick        uint64
	entries     int // entries of all tables held
	maxEntries  int
	frames      map[string]map[uint32]*cachedFrame // session -> page -> frame
	oldest      *cachedFrame                       // list of frames by last store, oldest first
	newest      *cachedFrame
	frameBytes  int
	maxFrameMem int

	// The index (IndexFrames): for sessions named with indexPrefix, the pages
	// the backend holds frames of, loaded once (keys only) and kept with every
	// change; a session not in index is not known.
	lister      FrameLister // back's; nil when it has none
	indexPrefix string      // "": no index
	index       map[string]map[uint32]struct{}
}

type cachedFrame struct {
	session    string
	page       uint32
	data       []byte
	prev, next *cachedFrame
}

const (
	cacheStripes = 64
	// maxIndexed bounds the sessions whose frame pages are indexed (a node's
	// kept answers: up to 1024 pages each).
	maxIndexed = 4096
	// frameCost is what a held frame costs beyond its bytes (entry, map slot, key).
	frameCost = 96
	// tableEntryCost is about what one page-table entry costs in a Go map.
	tableEntryCost = 16
)

var (
	_ PageStore   = (*Cached)(nil)
	_ Snapshotter = (*Cached)(nil)
)

// WithCache puts a Cached with budgetBytes of memory in front of back (half
// for page tables, half for frames); budgetBytes <= 0 returns back as it is.
func WithCache(back PageStore, budgetBytes int) PageStore {
	if budgetBytes <= 0 {
		return back
	}
	return NewCached(back, budgetBytes/2/tableEntryCost, budgetBytes/2)
}

// Stack is a satnode's store as the daemon builds it: back behind its quota
// (WithQuota), behind the cache (WithCache). Tests of the node on Redis use it
// so that they run what a satnode runs.
func Stack(back PageStore, quota float64, cacheBytes int) PageStore {
	return WithCache(WithQuota(back, quota), cacheBytes)
}

// NewCached holds up to maxEntries page-table entries (whole tables; a table
// larger than that is not held) and maxFrameBytes of frames in front of back.
func NewCached(back PageStore, maxEntries, maxFrameBytes int) *Cached {
	snap, _ := back.(Snapshotter)
	lister, _ := back.(FrameLister)
	return &Cached{back: back, snap: snap, lister: lister, seed: maphash.MakeSeed(), index: map[string]map[uint32]struct{}{},
		tables: map[string]Table{}, tableUse: map[string]uint64{}, maxEntries: maxEntries,
		frames: map[string]map[uint32]*cachedFrame{}, maxFrameMem: maxFrameBytes}
}

// lock takes the stripe locks of sessions (in stripe order: no deadlock) and
// returns their unlock.
func (c *Cached) lock(sessions ...string) func() {
	idx := make([]int, 0, len(sessions))
	for _, s := range sessions {
		idx = append(idx, int(maphash.String(c.seed, s)%cacheStripes))
	}
	slices.Sort(idx)
	idx = slices.Compact(idx)
	for _, i := range idx {
		c.stripes[i].Lock()
	}
	return func() {
		for _, i := range idx {
			c.stripes[i].Unlock()
		}
	}
}

// Tables: held whole, so that a held table answers every lookup.

// table returns the held table of session (nil when not held); c.mu held.
func (c *Cached) table(session string) Table {
	t, ok := c.tables[session]
	if ok {
		c.tick++
		c.tableUse[session] = c.tick
	}
	return t
}

// holdTable holds t (owned by the cache from now on) as session's table; c.mu held.
func (c *Cached) holdTable(session string, t Table) {
	c.dropTable(session)
	c.tables[session] = t
	c.entries += len(t)
	c.tick++
	c.tableUse[session] = c.tick
	c.fit(session)
}

// fit evicts the least recently used tables other than keep until the
// entries are within the budget, then keep itself if it alone exceeds it; c.mu held.
func (c *Cached) fit(keep string) {
	for c.entries > c.maxEntries && len(c.tables) > 1 {
		victim, at := "", uint64(0)
		for s, u := range c.tableUse {
			if s != keep && (victim == "" || u < at) {
				victim, at = s, u
			}
		}
		c.dropTable(victim)
	}
	if c.entries > c.maxEntries {
		c.dropTable(keep) // loaded again when next needed
	}
}

// dropTable forgets session's table; c.mu held.
func (c *Cached) dropTable(session string) {
	if t, ok := c.tables[session]; ok {
		c.entries -= len(t)
		delete(c.tables, session)
		delete(c.tableUse, session)
	}
}

// setOwners points pages at owner in a held table (none held: nothing); c.mu held.
func (c *Cached) setOwners(session string, pages []uint32, owner uint32) {
	t, ok := c.tables[session]
	if !ok {
		return
	}
	for _, p := range pages {
		if _, had := t[p]; !had {
			c.entries++
		}
		t[p] = owner
	}
	c.fit(session)
}

// Frames: the most recently stored, oldest evicted first.

func (c *Cached) unlink(f *cachedFrame) {
	if f.prev != nil {
		f.prev.next = f.next
	} else {
		c.oldest = f.next
	}
	if f.next != nil {
		f.next.prev = f.prev
	} else {
		c.newest = f.prev
	}
	f.prev, f.next = nil, nil
}

// dropFrame forgets one frame; c.mu held.
func (c *Cached) dropFrame(session string, page uint32) {
	byPage := c.frames[session]
	f, ok := byPage[page]
	if !ok {
		return
	}
	c.unlink(f)
	c.frameBytes -= len(f.data) + frameCost
	delete(byPage, page)
	if len(byPage) == 0 {
		delete(c.frames, session)
	}
}

// holdFrames holds frames as stored now (the newest), their Data not copied
// (never changed in place: Frame); c.mu held.
func (c *Cached) holdFrames(session string, frames []Frame) {
	for _, fr := range frames {
		c.dropFrame(session, fr.Page)
		cost := len(fr.Data) + frameCost
		if cost > c.maxFrameMem {
			continue
		}
		for c.frameBytes+cost > c.maxFrameMem {
			c.dropFrame(c.oldest.session, c.oldest.page)
		}
		f := &cachedFrame{session: session, page: fr.Page, data: fr.Data, prev: c.newest}
		if f.data == nil {
			f.data = []byte{}
		}
		if c.newest != nil {
			c.newest.next = f
		} else {
			c.oldest = f
		}
		c.newest = f
		if c.frames[session] == nil {
			c.frames[session] = map[uint32]*cachedFrame{}
		}
		c.frames[session][fr.Page] = f
		c.frameBytes += cost
	}
}

func (c *Cached) dropFrames(session string, pages []uint32) {
	for _, p := range pages {
		c.dropFrame(session, p)
	}
}

func (c *Cached) dropSessionFrames(session string) {
	for p := range c.frames[session] {
		c.dropFrame(session, p)
	}
}

func pagesOf(frames []Frame) []uint32 {
	out := make([]uint32, len(frames))
	for i, f := range frames {
		out[i] = f.Page
	}
	return out
}

// The index of small sessions' frames.

// IndexFrames makes memory keep, for every session named with prefix, the
// pages the backend holds frames of (listed once, keys only, then kept with
// every change), so that asking for a page it does not hold costs no backend
// round trip. Meant for sessions of a few hundred small frames (a node's kept
// answers, looked up by every request that carries an id and nearly always
// absent); a backend that lists no frames (FrameLister) indexes nothing. Call
// before the store is used.
func (c *Cached) IndexFrames(prefix string) {
	if c.lister != nil {
		c.indexPrefix = prefix
	}
}

func (c *Cached) indexed(session string) bool {
	return c.indexPrefix != "" && strings.HasPrefix(session, c.indexPrefix)
}

// indexAdd records that the backend holds frames of pages (an indexed
// session not known yet stays unknown); c.mu held.
func (c *Cached) indexAdd(session string, pages []uint32) {
	if ix, ok := c.index[session]; ok {
		for _, p := range pages {
			ix[p] = struct{}{}
		}
	}
}

// indexDelete records that the backend holds no frames of pages; c.mu held.
func (c *Cached) indexDelete(session string, pages []uint32) {
	if ix, ok := c.index[session]; ok {
		for _, p := range pages {
			delete(ix, p)
		}
	}
}

// absent reports whether the index knows the backend holds no frame of one
// of pages, loading session's index first when needed (one listing); the
// caller holds session's stripe lock, not c.mu.
func (c *Cached) absent(ctx context.Context, session string, pages []uint32) (uint32, bool) {
	if !c.indexed(session) {
		return 0, false
	}
	c.mu.Lock()
	ix, ok := c.index[session]
	c.mu.Unlock()
	if !ok {
		listed, err := c.lister.FramePages(ctx, session)
		if err != nil {
			return 0, false // unknown: the backend answers the read itself
		}
		ix = make(map[uint32]struct{}, len(listed))
		for _, p := range listed {
			ix[p] = struct{}{}
		}
		c.mu.Lock()
		for s := range c.index {
			if len(c.index) < maxIndexed {
				break
			}
			delete(c.index, s) // any: it is listed again when next needed
		}
		c.index[session] = ix
		c.mu.Unlock()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range pages {
		if _, held := ix[p]; !held {
			return p, true
		}
	}
	return 0, false
}

// The PageStore methods.

func (c *Cached) OpenTable(ctx context.Context, session string) error {
	defer c.lock(session)()
	err := c.back.OpenTable(ctx, session)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err == nil {
		c.holdTable(session, Table{})
	} else if !errors.Is(err, errs.ErrSessionExists) {
		c.dropTable(session)
	}
	return err
}

func (c *Cached) PutTable(ctx context.Context, session string, table Table) error {
	defer c.lock(session)()
	err := c.back.PutTable(ctx, session, table)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err == nil {
		t := maps.Clone(table)
		if t == nil {
			t = Table{}
		}
		c.holdTable(session, t)
	} else {
		c.dropTable(session)
	}
	return err
}

// loadTable is session's table, from memory or else from the backend (then
// held); the caller must not change it. c.mu not held.
func (c *Cached) loadTable(ctx context.Context, session string) (Table, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c.mu.Lock()
	t := c.table(session)
	c.mu.Unlock()
	if t != nil {
		return t, nil
	}
	defer c.lock(session)()
	t, err := c.back.GetTable(ctx, session)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.holdTable(session, t)
	c.mu.Unlock()
	return t, nil
}

func (c *Cached) GetTable(ctx context.Context, session string) (Table, error) {
	t, err := c.loadTable(ctx, session)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(t), nil
}

func (c *Cached) TableSize(ctx context.Context, session string) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	c.mu.Lock()
	t := c.table(session)
	n := len(t)
	c.mu.Unlock()
	if t != nil {
		return n, nil
	}
	return c.back.TableSize(ctx, session)
}

// Owners answers from the held table; a table not held is loaded whole (one
// backend round trip, as the backend's own lookup costs) and held.
func (c *Cached) Owners(ctx context.Context, session string, pages []uint32) (Table, error) {
	t, err := c.loadTable(ctx, session)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(Table, len(pages))
	for _, p := range pages {
		if o, ok := t[p]; ok {
			out[p] = o
		}
	}
	return out, nil
}

func (c *Cached) SetOwner(ctx context.Context, session string, pages []uint32, owner uint32) error {
	defer c.lock(session)()
	err := c.back.SetOwner(ctx, session, pages, owner)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err == nil {
		c.setOwners(session, pages, owner)
	} else {
		c.dropTable(session)
	}
	return err
}

func (c *Cached) DeleteTable(ctx context.Context, session string) error {
	defer c.lock(session)()
	err := c.back.DeleteTable(ctx, session)
	c.mu.Lock()
	c.dropTable(session) // deleted, absent, or unknown after an error: not held
	c.mu.Unlock()
	return err
}

func (c *Cached) PutFrames(ctx context.Context, session string, frames []Frame) error {
	defer c.lock(session)()
	err := c.back.PutFrames(ctx, session, frames)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err == nil {
		c.holdFrames(session, frames)
		c.indexAdd(session, pagesOf(frames))
	} else {
		c.dropFrames(session, pagesOf(frames))
		delete(c.index, session)
	}
	return err
}

// GetFrames answers from memory when it holds every page asked, else from the
// backend (and then holds what it read).
func (c *Cached) GetFrames(ctx context.Context, session string, pages []uint32) ([]Frame, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if out, ok := c.heldFrames(session, pages); ok {
		return out, nil
	}
	defer c.lock(session)()
	if p, ok := c.absent(ctx, session, pages); ok {
		return nil, fmt.Errorf("page %d of session %q: %w", p, session, errs.ErrNotFound)
	}
	out, err := c.back.GetFrames(ctx, session, pages)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.holdFrames(session, out)
	c.mu.Unlock()
	return out, nil
}

// heldFrames returns the frames of pages from memory (their Data shared, read-only:
// Frame); false unless all are held.
func (c *Cached) heldFrames(session string, pages []uint32) ([]Frame, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	byPage := c.frames[session]
	if len(byPage) == 0 {
		return nil, false
	}
	out := make([]Frame, len(pages))
	for i, p := range pages {
		f, ok := byPage[p]
		if !ok {
			return nil, false
		}
		out[i] = Frame{Page: p, Data: f.data}
	}
	return out, true
}

func (c *Cached) DeleteFrames(ctx context.Context, session string, pages []uint32) (int, error) {
	defer c.lock(session)()
	n, err := c.back.DeleteFrames(ctx, session, pages)
	c.mu.Lock()
	c.dropFrames(session, pages)
	if err == nil {
		c.indexDelete(session, pages)
	} else {
		delete(c.index, session)
	}
	c.mu.Unlock()
	return n, err
}

func (c *Cached) CountFrames(ctx context.Context, session string) (int, error) {
	return c.back.CountFrames(ctx, session) // memory holds some frames, not all
}

func (c *Cached) DropFrames(ctx context.Context, session string) (int, error) {
	defer c.lock(session)()
	n, err := c.back.DropFrames(ctx, session)
	c.mu.Lock()
	c.dropSessionFrames(session)
	delete(c.index, session) // listed again (empty) if asked: an ended session's entry would stay
	c.mu.Unlock()
	return n, err
}

func (c *Cached) AdoptFrames(ctx context.Context, session string, frames []Frame, owner uint32) error {
	defer c.lock(session)()
	err := c.back.AdoptFrames(ctx, session, frames, owner)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.adopted(session, frames, owner, err)
	return err
}

// adopted brings memory to what an adoption left in the backend; c.mu held.
func (c *Cached) adopted(session string, frames []Frame, owner uint32, err error) {
	if err != nil {
		c.dropFrames(session, pagesOf(frames))
		c.dropTable(session)
		delete(c.index, session)
		return
	}
	c.holdFrames(session, frames)
	c.indexAdd(session, pagesOf(frames))
	c.setOwners(session, pagesOf(frames), owner)
}

func (c *Cached) AdoptAnswered(ctx context.Context, session string, frames []Frame, owner uint32, answers string, answer Frame) error {
	defer c.lock(session, answers)()
	err := c.back.AdoptAnswered(ctx, session, frames, owner, answers, answer)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.adopted(session, frames, owner, err)
	if err == nil {
		c.holdFrames(answers, []Frame{answer})
		c.indexAdd(answers, []uint32{answer.Page})
	} else {
		c.dropFrame(answers, answer.Page)
		delete(c.index, answers)
	}
	return err
}

func (c *Cached) ReleaseFrames(ctx context.Context, session string, pages []uint32, self uint32) (int, error) {
	defer c.lock(session)()
	n, err := c.back.ReleaseFrames(ctx, session, pages, self)
	if !errors.Is(err, errs.ErrStillOwned) { // refused: nothing was deleted
		c.mu.Lock()
		c.dropFrames(session, pages)
		if err == nil {
			c.indexDelete(session, pages)
		} else {
			delete(c.index, session)
		}
		c.mu.Unlock()
	}
	return n, err
}

func (c *Cached) Close() error { return c.back.Close() }

// Snapshot is the backend's (the store of record).
func (c *Cached) Snapshot(ctx context.Context) ([]SessionState, error) {
	if c.snap == nil {
		return nil, fmt.Errorf("page store %T takes no snapshots: %w", c.back, errs.ErrInvalid)
	}
	return c.snap.Snapshot(ctx)
}

// Replace replaces the backend's state and forgets everything held.
func (c *Cached) Replace(ctx context.Context, states []SessionState) error {
	if c.snap == nil {
		return fmt.Errorf("page store %T takes no snapshots: %w", c.back, errs.ErrInvalid)
	}
	for i := range c.stripes {
		c.stripes[i].Lock()
	}
	defer func() {
		for i := range c.stripes {
			c.stripes[i].Unlock()
		}
	}()
	err := c.snap.Replace(ctx, states)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tables, c.tableUse, c.entries = map[string]Table{}, map[string]uint64{}, 0
	c.frames, c.oldest, c.newest, c.frameBytes = map[string]map[uint32]*cachedFrame{}, nil, nil, 0
	c.index = map[string]map[uint32]struct{}{}
	return err
}
