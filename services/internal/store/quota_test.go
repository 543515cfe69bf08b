package store_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/satpage/satpage/services/internal/errs"
	"github.com/satpage/satpage/services/internal/store"
	"github.com/satpage/satpage/services/internal/storetest"
)

// A flood of new pages fills a satellite's Redis (maxmemory 64 MB, noeviction)
// to its quota and no further: new frames are refused, and every clean-up path
// (release, drop, table delete and a handed-over table) still works.
func TestAFullSatelliteRefusesNewFramesButCleanUpStillWorks(t *testing.T) {
	ctx := context.Background()
	r, err := store.NewRedis(ctx, storetest.RedisServer(t))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	q := store.WithQuota(r, 0.8)
	if err := q.OpenTable(ctx, "flood"); err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte{7}, 4096)
	var page uint32
	var refused error
	for range 10_000 { // 10,000 x 256 pages of 4 KiB is 10 GB: far beyond the 64 MB
		batch := make([]store.Frame, 256)
		for i := range batch {
			batch[i] = store.Frame{Page: page, Data: data}
			page++
		}
		if refused = q.AdoptFrames(ctx, "flood", batch, 3); refused != nil {
			break
		}
	}
	if !errors.Is(refused, errs.ErrResourceExhausted) {
		t.Fatalf("flooding: got %v, want resource exhausted", refused)
	}
	for range 1000 { // then page by page, up to the last byte of the quota
		if refused = q.AdoptFrames(ctx, "flood", []store.Frame{{Page: page, Data: data}}, 3); refused != nil {
			break
		}
		page++
	}
	used, limit, err := r.Usage(ctx)
	if err != nil || limit != 64<<20 || used > limit*85/100 || used < limit*60/100 {
		t.Fatalf("usage when refused: %d of %d bytes (%v), want about 80 %%", used, limit, err)
	}
	if err := q.PutFrames(ctx, "bystander", []store.Frame{{Page: 0, Data: data}}); !errors.Is(err, errs.ErrResourceExhausted) {
		t.Errorf("a bystander's new frame: got %v, want resource exhausted", err)
	}
	// Clean-up under memory pressure.
	if err := q.PutTable(ctx, "handed-over", store.Table{0: 1, 1: 2}); err != nil {
		t.Errorf("accepting a handed-over table: %v", err)
	}
	if n, err := q.ReleaseFrames(ctx, "flood", []uint32{0, 1, 2}, 99); err != nil || n != 3 {
		t.Errorf("release: got %d, %v; want 3", n, err)
	}
	if n, err := q.DropFrames(ctx, "flood"); err != nil || n < 1000 {
		t.Errorf("drop: got %d, %v; want the flood's frames", n, err)
	}
	if err := q.DeleteTable(ctx, "flood"); err != nil {
		t.Errorf("delete table: %v", err)
	}
	// The quota re-reads usage after its refresh interval: room again.
	for range 50 {
		if err = q.PutFrames(ctx, "bystander", []store.Frame{{Page: 0, Data: data}}); err == nil {
			break
		}
		storetest.Sleep(20)
	}
	if err != nil {
		t.Errorf("a new frame after the flood was dropped: %v", err)
	}
}
