package store_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/satpage/satpage/services/internal/errs"
	"github.com/satpage/satpage/services/internal/store"
)

// backend is a Memory store that counts the calls reaching it and can fail the
// next changes after applying them (a reply lost after the backend stored the
// change: the worst case for a cache, which must not keep the old value).
type backend struct {
	*store.Memory
	calls atomic.Int64
	fail  atomic.Bool // the next changes are applied, then reported failed
}

var errLost = fmt.Errorf("reply lost: %w", errs.ErrUnavailable)

func newBackend() *backend { return &backend{Memory: store.NewMemory()} }

func (b *backend) after(err error) error {
	b.calls.Add(1)
	if err == nil && b.fail.Load() {
		return errLost
	}
	return err
}

func (b *backend) Owners(ctx context.Context, s string, p []uint32) (store.Table, error) {
	b.calls.Add(1)
	return b.Memory.Owners(ctx, s, p)
}

func (b *backend) GetTable(ctx context.Context, s string) (store.Table, error) {
	b.calls.Add(1)
	return b.Memory.GetTable(ctx, s)
}

func (b *backend) GetFrames(ctx context.Context, s string, p []uint32) ([]store.Frame, error) {
	b.calls.Add(1)
	return b.Memory.GetFrames(ctx, s, p)
}

func (b *backend) PutFrames(ctx context.Context, s string, f []store.Frame) error {
	return b.after(b.Memory.PutFrames(ctx, s, f))
}

func (b *backend) AdoptFrames(ctx context.Context, s string, f []store.Frame, o uint32) error {
	return b.after(b.Memory.AdoptFrames(ctx, s, f, o))
}

func (b *backend) SetOwner(ctx context.Context, s string, p []uint32, o uint32) error {
	return b.after(b.Memory.SetOwner(ctx, s, p, o))
}

func TestACachedFaultMakesOneBackendCall(t *testing.T) {
	ctx := context.Background()
	b := newBackend()
	c := store.NewCached(b, 1<<10, 1<<20)
	if err := c.OpenTable(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	adopted := []byte("one")
	if err := c.AdoptFrames(ctx, "s", []store.Frame{{Page: 1, Data: adopted}}, 7); err != nil {
		t.Fatal(err)
	}
	before := b.calls.Load()
	// The serving satellite's lookup and the old owner's read of the frame.
	owners, err := c.Owners(ctx, "s", []uint32{1, 2})
	if want := (store.Table{1: 7}); err != nil || !maps.Equal(owners, want) {
		t.Errorf("Owners: got %v, %v, want %v", owners, err, want)
	}
	f, err := c.GetFrames(ctx, "s", []uint32{1})
	if err != nil || string(f[0].Data) != "one" {
		t.Errorf("GetFrames: got %v, %v, want one", f, err)
	}
	if n := b.calls.Load() - before; n != 0 {
		t.Errorf("backend calls for a held table and frame: got %d, want 0", n)
	}
	// Frames are never changed in place (store.Frame): the adopted bytes are
	// held and served as they are, not copied on the way in or out.
	if &f[0].Data[0] != &adopted[0] {
		t.Error("GetFrames returned a copy of the adopted frame's bytes, want the same bytes")
	}
}

func TestAFailedChangeLeavesNothingStaleInMemory(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		change func(c store.PageStore) error
		page   uint32
		data   string // what the backend holds after the change
		owner  uint32
	}{
		{"put frames", func(c store.PageStore) error {
			return c.PutFrames(ctx, "s", []store.Frame{{Page: 1, Data: []byte("new")}})
		}, 1, "new", 7},
		{"adopt frames", func(c store.PageStore) error {
			return c.AdoptFrames(ctx, "s", []store.Frame{{Page: 1, Data: []byte("new")}}, 9)
		}, 1, "new", 9},
		{"set owner", func(c store.PageStore) error { return c.SetOwner(ctx, "s", []uint32{1}, 9) }, 1, "old", 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBackend()
			c := store.NewCached(b, 1<<10, 1<<20)
			if err := c.OpenTable(ctx, "s"); err != nil {
				t.Fatal(err)
			}
			if err := c.AdoptFrames(ctx, "s", []store.Frame{{Page: 1, Data: []byte("old")}}, 7); err != nil {
				t.Fatal(err)
			}
			b.fail.Store(true)
			if err := tc.change(c); !errors.Is(err, errs.ErrUnavailable) {
				t.Fatalf("change: got %v, want the backend's error", err)
			}
			b.fail.Store(false)
			f, err := c.GetFrames(ctx, "s", []uint32{tc.page})
			if err != nil || string(f[0].Data) != tc.data {
				t.Errorf("GetFrames after a failed change: got %v, %v, want %q (the backend's)", f, err, tc.data)
			}
			o, err := c.Owners(ctx, "s", []uint32{tc.page})
			if err != nil || o[tc.page] != tc.owner {
				t.Errorf("Owners after a failed change: got %v, %v, want %d (the backend's)", o, err, tc.owner)
			}
		})
	}
}

func TestReplaceForgetsWhatMemoryHeld(t *testing.T) {
	ctx := context.Background()
	c := store.NewCached(newBackend(), 1<<10, 1<<20)
	if err := c.OpenTable(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if err := c.AdoptFrames(ctx, "s", []store.Frame{{Page: 1, Data: []byte("old")}}, 7); err != nil {
		t.Fatal(err)
	}
	err := c.Replace(ctx, []store.SessionState{{Session: "s", HasTable: true, Table: store.Table{1: 3},
		Frames: []store.Frame{{Page: 1, Data: []byte("restored")}}}})
	if err != nil {
		t.Fatal(err)
	}
	if f, err := c.GetFrames(ctx, "s", []uint32{1}); err != nil || string(f[0].Data) != "restored" {
		t.Errorf("GetFrames after Replace: got %v, %v, want restored", f, err)
	}
	if o, err := c.Owners(ctx, "s", []uint32{1}); err != nil || o[1] != 3 {
		t.Errorf("Owners after Replace: got %v, %v, want 3", o, err)
	}
}

func TestTheCacheStaysWithinItsBudget(t *testing.T) {
	ctx := context.Background()
	b := newBackend()
	c := store.NewCached(b, 100, 10*(1024+96))
	for s := range 20 {
		sid := fmt.Sprint("s", s)
		if err := c.OpenTable(ctx, sid); err != nil {
			t.Fatal(err)
		}
		frames := make([]store.Frame, 10)
		for p := range frames {
			frames[p] = store.Frame{Page: uint32(p), Data: make([]byte, 1024)}
		}
		if err := c.AdoptFrames(ctx, sid, frames, 1); err != nil {
			t.Fatal(err)
		}
	}
	// The last session's frames and table are held; the first ones' were
	// evicted and come from the backend, unchanged.
	before := b.calls.Load()
	if _, err := c.GetFrames(ctx, "s19", []uint32{0, 9}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Owners(ctx, "s19", []uint32{0}); err != nil {
		t.Fatal(err)
	}
	if n := b.calls.Load() - before; n != 0 {
		t.Errorf("backend calls for the newest session: got %d, want 0", n)
	}
	if f, err := c.GetFrames(ctx, "s0", []uint32{3}); err != nil || len(f[0].Data) != 1024 {
		t.Errorf("an evicted frame: got %v, %v", f, err)
	}
	if o, err := c.Owners(ctx, "s0", []uint32{3}); err != nil || o[3] != 1 {
		t.Errorf("an evicted table: got %v, %v", o, err)
	}
	if b.calls.Load() == before {
		t.Error("evicted state came from memory, want the backend")
	}
}

func TestConcurrentChangesAndReadsOfASessionAgreeWithTheBackend(t *testing.T) {
	for _, indexed := range []bool{false, true} {
		t.Run(fmt.Sprint("indexed=", indexed), func(t *testing.T) { concurrentChangesAndReads(t, indexed) })
	}
}

func concurrentChangesAndReads(t *testing.T, indexed bool) {
	ctx := context.Background()
	b := newBackend()
	c := store.NewCached(b, 1<<10, 8*(8+96)) // a few frames: misses load while others write
	if indexed {
		c.IndexFrames("s") // absent pages answered from the index while others adopt them
	}
	if err := c.OpenTable(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 200 {
				p := uint32(i % 16)
				data := []byte(fmt.Sprintf("%d-%d", w, i))
				if err := c.AdoptFrames(ctx, "s", []store.Frame{{Page: p, Data: data}}, uint32(w)); err != nil {
					t.Error(err)
					return
				}
				if _, err := c.GetFrames(ctx, "s", []uint32{(p + 5) % 16}); err != nil && !errors.Is(err, errs.ErrNotFound) {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	want, err := b.Memory.GetTable(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.GetTable(ctx, "s")
	if err != nil || !maps.Equal(got, want) {
		t.Errorf("table: got %v, %v, want the backend's %v", got, err, want)
	}
	for p := range uint32(16) {
		w, _ := b.Memory.GetFrames(ctx, "s", []uint32{p})
		g, err := c.GetFrames(ctx, "s", []uint32{p})
		if err != nil || string(g[0].Data) != string(w[0].Data) {
			t.Errorf("page %d: got %v, %v, want the backend's %q", p, g, err, w[0].Data)
		}
	}
}

// An indexed session (IndexFrames): once its pages are listed, a page the
// backend does not hold is answered from memory, every change keeps the index,
// and a change whose outcome is unknown (its reply lost) makes it list again.
func TestAnIndexedSessionAnswersAbsentPagesWithoutTheBackend(t *testing.T) {
	ctx := context.Background()
	b := newBackend()
	c := store.NewCached(b, 1<<10, 1<<20)
	c.IndexFrames("answers:")
	const s = "answers:x"
	if err := c.PutFrames(ctx, s, []store.Frame{{Page: 3, Data: []byte("three")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetFrames(ctx, s, []uint32{4}); !errors.Is(err, errs.ErrNotFound) {
		t.Fatalf("GetFrames of an absent page: got %v, want not found", err)
	}
	before := b.calls.Load()
	for p := range uint32(64) {
		_, err := c.GetFrames(ctx, s, []uint32{100 + p})
		if !errors.Is(err, errs.ErrNotFound) {
			t.Fatalf("GetFrames of absent page %d: got %v, want not found", 100+p, err)
		}
	}
	if got := b.calls.Load() - before; got != 0 {
		t.Errorf("64 lookups of absent pages of an indexed session made %d backend calls, want 0", got)
	}
	// The reply of a store is lost after the backend stored the frame: the
	// index must not say it is absent.
	b.fail.Store(true)
	if err := c.PutFrames(ctx, s, []store.Frame{{Page: 5, Data: []byte("five")}}); err == nil {
		t.Fatal("PutFrames with its reply lost: got nil error")
	}
	b.fail.Store(false)
	f, err := c.GetFrames(ctx, s, []uint32{5})
	if err != nil || string(f[0].Data) != "five" {
		t.Fatalf("GetFrames of a frame stored with its reply lost: got %v, %v, want five", f, err)
	}
	// Deleted and released pages are absent again; a session not indexed asks the backend.
	if _, err := c.DeleteFrames(ctx, s, []uint32{3}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetFrames(ctx, s, []uint32{3}); !errors.Is(err, errs.ErrNotFound) {
		t.Errorf("GetFrames of a deleted page: got %v, want not found", err)
	}
	before = b.calls.Load()
	if _, err := c.GetFrames(ctx, "other", []uint32{1}); !errors.Is(err, errs.ErrNotFound) {
		t.Errorf("GetFrames of a session not indexed: got %v, want not found", err)
	}
	if got := b.calls.Load() - before; got != 1 {
		t.Errorf("a lookup in a session not indexed made %d backend calls, want 1", got)
	}
}
