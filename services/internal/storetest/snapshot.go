package storetest

import (
	"context"
	"reflect"
	"testing"

	"github.com/satpage/satpage/services/internal/store"
)

// RunSnapshot is the conformance suite of store.Snapshotter; open returns a
// fresh store of its own (Replace discards everything the store holds).
func RunSnapshot(t *testing.T, open func(t *testing.T) store.PageStore) {
	ctx := context.Background()
	build := func(t *testing.T, s store.PageStore) {
		t.Helper()
		must := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		must(s.OpenTable(ctx, "served"))
		must(s.AdoptFrames(ctx, "served", []store.Frame{{Page: 1, Data: []byte("one")}, {Page: 9, Data: []byte{0, 255}}}, 4))
		must(s.SetOwner(ctx, "served", []uint32{30}, 7))
		must(s.OpenTable(ctx, "empty-table"))
		must(s.PutFrames(ctx, "frames-only", []store.Frame{{Page: 3, Data: []byte{}}, {Page: 2, Data: []byte("two")}}))
		must(s.PutFrames(ctx, "gone", []store.Frame{{Page: 5, Data: []byte("x")}}))
		if _, err := s.DropFrames(ctx, "gone"); err != nil {
			t.Fatal(err)
		}
	}
	want := []store.SessionState{
		{Session: "empty-table", HasTable: true, Table: store.Table{}},
		{Session: "frames-only", Frames: []store.Frame{{Page: 2, Data: []byte("two")}, {Page: 3, Data: []byte{}}}},
		{Session: "served", HasTable: true, Table: store.Table{1: 4, 9: 4, 30: 7},
			Frames: []store.Frame{{Page: 1, Data: []byte("one")}, {Page: 9, Data: []byte{0, 255}}}},
	}
	snap := func(t *testing.T, s store.PageStore) []store.SessionState {
		t.Helper()
		got, err := s.(store.Snapshotter).Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for i := range got { // an empty frame may come back as nil or empty
			for j := range got[i].Frames {
				if len(got[i].Frames[j].Data) == 0 {
					got[i].Frames[j].Data = []byte{}
				}
			}
		}
		return got
	}

	t.Run("a snapshot holds every table and frame, sorted", func(t *testing.T) {
		s := open(t)
		build(t, s)
		if got := snap(t, s); !reflect.DeepEqual(got, want) {
			t.Errorf("Snapshot:\n got %+v\nwant %+v", got, want)
		}
	})

	t.Run("replace discards the old state and restores a snapshot", func(t *testing.T) {
		s := open(t)
		if err := s.PutFrames(ctx, "old", []store.Frame{{Page: 1, Data: []byte("stale")}}); err != nil {
			t.Fatal(err)
		}
		if err := s.(store.Snapshotter).Replace(ctx, want); err != nil {
			t.Fatal(err)
		}
		if got := snap(t, s); !reflect.DeepEqual(got, want) {
			t.Errorf("after Replace:\n got %+v\nwant %+v", got, want)
		}
		if o, err := s.Owners(ctx, "served", []uint32{30}); err != nil || o[30] != 7 {
			t.Errorf("Owners after Replace: got %v, %v, want page 30 -> 7", o, err)
		}
	})
}
