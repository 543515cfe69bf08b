package replica

import (
	"context"
	"fmt"
	"maps"
	"slices"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/errs"
	"github.com/satpage/satpage/services/internal/store"
)

type kind = satpagev1.StoreOp_Kind

// Apply performs op on st, the same call the primary made on its own store,
// so a copy that started equal stays equal.
func Apply(ctx context.Context, st store.PageStore, op *satpagev1.StoreOp) error {
	s := op.SessionId
	var err error
	switch op.Kind {
	case satpagev1.StoreOp_KIND_PING:
	case satpagev1.StoreOp_KIND_OPEN_TABLE:
		err = st.OpenTable(ctx, s)
	case satpagev1.StoreOp_KIND_PUT_TABLE:
		err = st.PutTable(ctx, s, tableFrom(op.Table))
	case satpagev1.StoreOp_KIND_SET_OWNER:
		err = st.SetOwner(ctx, s, op.Pages, op.Owner)
	case satpagev1.StoreOp_KIND_DELETE_TABLE:
		err = st.DeleteTable(ctx, s)
	case satpagev1.StoreOp_KIND_PUT_FRAMES:
		err = st.PutFrames(ctx, s, framesFrom(op.Frames))
	case satpagev1.StoreOp_KIND_DELETE_FRAMES:
		_, err = st.DeleteFrames(ctx, s, op.Pages)
	case satpagev1.StoreOp_KIND_DROP_FRAMES:
		_, err = st.DropFrames(ctx, s)
	case satpagev1.StoreOp_KIND_ADOPT_FRAMES:
		err = st.AdoptFrames(ctx, s, framesFrom(op.Frames), op.Owner)
	case satpagev1.StoreOp_KIND_ADOPT_ANSWERED:
		a := op.Answer
		if a == nil || op.AnswerSession == "" {
			return fmt.Errorf("store op ADOPT_ANSWERED without an answer: %w", errs.ErrInvalid)
		}
		err = st.AdoptAnswered(ctx, s, framesFrom(op.Frames), op.Owner, op.AnswerSession,
			store.Frame{Page: a.Page, Data: append([]byte{}, a.Data...)})
	case satpagev1.StoreOp_KIND_RELEASE_FRAMES:
		_, err = st.ReleaseFrames(ctx, s, op.Pages, op.Owner)
	default:
		return fmt.Errorf("store op kind %d unknown: %w", op.Kind, errs.ErrInvalid)
	}
	return err
}

func tableFrom(entries []*satpagev1.TableEntry) store.Table {
	t := make(store.Table, len(entries))
	for _, e := range entries {
		t[e.Page] = e.Owner
	}
	return t
}

func tableTo(t store.Table) []*satpagev1.TableEntry {
	out := make([]*satpagev1.TableEntry, 0, len(t))
	for _, p := range slices.Sorted(maps.Keys(t)) {
		out = append(out, &satpagev1.TableEntry{Page: p, Owner: t[p]})
	}
	return out
}

func framesFrom(pages []*satpagev1.Page) []store.Frame {
	out := make([]store.Frame, len(pages))
	for i, p := range pages {
		out[i] = store.Frame{Page: p.Page, Data: p.Data}
		if out[i].Data == nil {
			out[i].Data = []byte{}
		}
	}
	return out
}

func framesTo(frames []store.Frame) []*satpagev1.Page {
	out := make([]*satpagev1.Page, len(frames))
	for i, f := range frames {
		out[i] = &satpagev1.Page{Page: f.Page, Data: f.Data}
	}
	return out
}

// StatesTo converts a snapshot to its wire form.
func StatesTo(states []store.SessionState) []*satpagev1.SessionState {
	out := make([]*satpagev1.SessionState, len(states))
	for i, s := range states {
		out[i] = &satpagev1.SessionState{SessionId: s.Session, HasTable: s.HasTable, Frames: framesTo(s.Frames)}
		if s.HasTable {
			out[i].Table = tableTo(s.Table)
		}
	}
	return out
}

// StatesFrom converts a snapshot from its wire form.
func StatesFrom(states []*satpagev1.SessionState) []store.SessionState {
	out := make([]store.SessionState, len(states))
	for i, s := range states {
		out[i] = store.SessionState{Session: s.SessionId, HasTable: s.HasTable, Frames: framesFrom(s.Frames)}
		if s.HasTable {
			out[i].Table = tableFrom(s.Table)
		}
	}
	return out
}

// newer reports whether version a is later than b.
// Newer reports whether version a is newer than b: a higher serving epoch,
// then a later incarnation, then more changes.
func Newer(a, b *satpagev1.ReplicaVersion) bool { return newer(a, b) }

func newer(a, b *satpagev1.ReplicaVersion) bool {
	if a.GetEpoch() != b.GetEpoch() {
		return a.GetEpoch() > b.GetEpoch()
	}
	if a.GetIncarnation() != b.GetIncarnation() {
		return a.GetIncarnation() > b.GetIncarnation()
	}
	return a.GetSeq() > b.GetSeq()
}
