package replica

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/satpage/satpage/services/internal/errs"
	"github.com/satpage/satpage/services/internal/store"
)

// A takeover fences the copy of a primary's state: the copy refuses the
// primary's changes of the older epoch (never acknowledged), the session
// taken over leaves the copy (answered to the taker, again on a retry), and
// the primary restores from the copy: without that session, serving the
// others, at the new epoch, which the copy accepts.
func TestAFencedCopyRefusesTheOldEpochAndThePrimaryRestoresWithoutTheSession(t *testing.T) {
	s := newSky(t, 2)
	p := s.prims[3]
	work(t, p, "a", 2)
	work(t, p, "b", 2)
	ctx := context.Background()
	before := p.Epoch()
	r, err := s.holders[2].Fence(ctx, 3, []string{"a"})
	if err != nil || !r.Synced || len(r.Sessions) != 1 || !r.Sessions[0].HasTable {
		t.Fatalf("fence: got %v, %v, want the in-sync copy of session a", r, err)
	}
	if r.Version.GetEpoch() <= before {
		t.Fatalf("epoch after the fence: got %d, want above the primary's %d", r.Version.GetEpoch(), before)
	}
	again, err := s.holders[2].Fence(ctx, 3, []string{"a"})
	if err != nil || len(again.Sessions) != 1 || again.Version.GetEpoch() <= r.Version.GetEpoch() {
		t.Errorf("fence retried: got %v, %v, want session a again at a higher epoch", again, err)
	}
	err = p.PutFrames(ctx, "a", []store.Frame{{Page: 0, Data: []byte("stale")}})
	if !errors.Is(err, errs.ErrStaleEpoch) {
		t.Fatalf("a change after the fence: got %v, want ErrStaleEpoch", err)
	}
	if p.Ready() {
		t.Error("the fenced primary still serves before it restored")
	}
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { p.Maintain(mctx, time.Hour); close(done) }()
	defer func() { cancel(); <-done }()
	for deadline := time.Now().Add(5 * time.Second); !p.Ready(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the fenced primary did not restore within 5 s")
		}
	}
	if p.Epoch() != again.Version.GetEpoch() {
		t.Errorf("epoch after the restore: got %d, want the copy's %d", p.Epoch(), again.Version.GetEpoch())
	}
	if _, err := p.GetTable(ctx, "a"); !errors.Is(err, errs.ErrUnknownSession) {
		t.Errorf("session a at the restored primary: got %v, want ErrUnknownSession (taken over)", err)
	}
	if err := p.PutFrames(ctx, "b", []store.Frame{{Page: 0, Data: []byte("v3")}}); err != nil {
		t.Fatalf("a change of session b after the restore: %v", err)
	}
	got, err := s.holders[2].Frames(ctx, 3, "b", []uint32{0})
	if err != nil || len(got) != 1 || string(got[0].Data) != "v3" {
		t.Errorf("the copy after the restore: got %v, %v, want b's page 0 = v3", got, err)
	}
	if held, err := s.holders[2].Forget(ctx, 3, []string{"a"}); !held || err != nil {
		t.Errorf("forget: got %v, %v", held, err)
	}
	if r, _ := s.holders[2].Fence(ctx, 3, []string{"a"}); len(r.Sessions) != 0 {
		t.Errorf("fence after forget: got %d sessions, want none", len(r.Sessions))
	}
}
