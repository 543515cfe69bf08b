package replica

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/satpage/satpage/services/internal/store"
)

// unstarted replaces every satellite of s with one whose process has just
// started (empty memory, no restore yet), all of generation gen: the first
// start of a whole deployment.
func (s *sky) unstarted(gen string) {
	for i := range uint32(30) {
		p, err := NewPrimary(Options{Self: i, Spec: s.spec, Replicas: s.r, Local: store.NewMemory(),
			Transport: skyLink{s, i}, Liveness: skyLive{s}, RestoreWait: 50 * time.Millisecond, Generation: gen})
		if err != nil {
			s.t.Fatal(err)
		}
		s.mu.Lock()
		s.holders[i], s.prims[i], s.gens[i] = NewHolder(), p, gen
		s.mu.Unlock()
	}
}

// restoreTook restores satellite 3 of generation gen (RestoreWait wait) and
// returns how long it took.
func restoreTook(t *testing.T, s *sky, gen string, wait time.Duration) time.Duration {
	t.Helper()
	p, err := NewPrimary(Options{Self: 3, Spec: s.spec, Replicas: 2, Local: store.NewMemory(),
		Transport: skyLink{s, 3}, Liveness: skyLive{s}, RestoreWait: wait, Generation: gen})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := p.Restore(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !p.Ready() || !p.Started() {
		t.Fatal("restored primary neither ready nor started")
	}
	return time.Since(start)
}

// The first start of a deployment: every satellite of the plane that answers
// says it has not served in this generation, so the silent one behind 3 (which
// would hold its copy) is starting too and holds none: 3 does not wait for it.
func TestAFirstStartWaitsOnNoSilentPeer(t *testing.T) {
	s := newSky(t, 2)
	s.unstarted("g1")
	s.setUnreachable(2, true) // 3's replica: silent (loaded), not refused
	if took := restoreTook(t, s, "g1", 10*time.Second); took > 2*time.Second {
		t.Errorf("first start took %v with its silent replica, want no wait (RestoreWait 10 s)", took)
	}
}

// A restart: one satellite of the plane has served in this generation, so the
// deployment runs and the silent replica may hold 3's copy: 3 waits for it up
// to RestoreWait, as without a generation.
func TestARestartWaitsOnItsSilentReplica(t *testing.T) {
	s := newSky(t, 2)
	s.unstarted("g1")
	s.prims[5].started.Store(true) // served in g1 (same plane as 3: satellites 0-14)
	s.setUnreachable(2, true)
	if took := restoreTook(t, s, "g1", 500*time.Millisecond); took < 500*time.Millisecond {
		t.Errorf("restart gave up after %v with a satellite of the plane started, want RestoreWait (500 ms)", took)
	}
	// Without a generation nothing tells a first start apart: it waits too.
	s.unstarted("")
	s.setUnreachable(2, true)
	if took := restoreTook(t, s, "", 500*time.Millisecond); took < 500*time.Millisecond {
		t.Errorf("restore without a generation gave up after %v, want RestoreWait (500 ms)", took)
	}
}

// A satellite of a previous deployment (another generation) that has served
// does not make this deployment's first start a restart.
func TestAStartedPeerOfAnotherGenerationIsNoRestart(t *testing.T) {
	s := newSky(t, 2)
	s.unstarted("g2")
	s.prims[5].started.Store(true)
	s.mu.Lock()
	s.gens[5] = "g1"
	s.mu.Unlock()
	s.setUnreachable(2, true)
	if took := restoreTook(t, s, "g2", 10*time.Second); took > 2*time.Second {
		t.Errorf("first start of g2 took %v beside a started satellite of g1, want no wait (RestoreWait 10 s)", took)
	}
}

// The first start of a constellation: a satellite that restores nothing (no
// copy anywhere, an empty store) sends its replicas nothing, neither a
// snapshot nor a ping, nor asks its primaries for theirs, until its first
// change, which it then replicates as one (its pages counted as copied).
func TestAFirstStartSendsNothingToItsReplicasUntilItsFirstChange(t *testing.T) {
	s := newSky(t, 2)
	s.unstarted("g1")
	for i := range uint32(15) { // plane 0, every satellite starting at once
		if err := s.prims[i].Restore(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	s.mu.Lock()
	snaps, reps := s.snapshots[2], s.replicates[2]
	s.mu.Unlock()
	if snaps != 0 || reps != 0 {
		t.Errorf("after the plane's first start satellite 2 got %d snapshots and %d Replicates, want none", snaps, reps)
	}
	p := s.prims[3]
	if !p.Blank() || p.needsPing(0) {
		t.Errorf("a first start with nothing to copy: Blank %v, needsPing %v; want true, false", p.Blank(), p.needsPing(0))
	}
	if err := p.SyncReplica(context.Background(), 2); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	snaps = s.snapshots[2]
	s.mu.Unlock()
	if snaps != 0 {
		t.Errorf("satellite 2 asked a blank primary for its copy and got %d snapshots, want none", snaps)
	}
	p.o.Counters = skyCount{s, 3}
	work(t, p, "a", 3)
	if p.Blank() {
		t.Error("still blank after its first change")
	}
	want, err := p.snap.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := s.copyAt(t, 2, 3); !reflect.DeepEqual(got, want) {
		t.Errorf("copy at 2 after 3's first changes:\n got %+v\nwant %+v", got, want)
	}
	s.mu.Lock()
	copies := s.copies[3]
	s.mu.Unlock()
	if copies != 4 { // 3 adopted + 1 written, as when the replicas got an empty snapshot at start
		t.Errorf("pages counted as copied by 3's changes: got %d, want 4", copies)
	}
}

// A satellite that restores a copy (a restart) is not blank: its replicas get
// their snapshots at once, as before.
func TestARestartWithAStateSendsItsSnapshotsAtOnce(t *testing.T) {
	s := newSky(t, 2)
	work(t, s.prims[3], "a", 3)
	s.kill(3)
	s.start(3, true)
	if s.prims[3].Blank() {
		t.Error("a restart that restored a copy is blank")
	}
	if got, want := s.copyAt(t, 2, 3), s.snapshotOf(t, 3); !reflect.DeepEqual(got, want) {
		t.Errorf("copy at 2 after 3's restart:\n got %+v\nwant %+v", got, want)
	}
}
