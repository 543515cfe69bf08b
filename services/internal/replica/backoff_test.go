package replica

import (
	"context"
	"reflect"
	"testing"
	"testing/synctest"
	"time"

	"github.com/satpage/satpage/services/internal/retry"
	"github.com/satpage/satpage/services/internal/store"
)

func (s *sky) setUnreachable(i uint32, cut bool) { s.mu.Lock(); s.unreachable[i] = cut; s.mu.Unlock() }
func (s *sky) snapshotsTo(i uint32) int          { s.mu.Lock(); defer s.mu.Unlock(); return s.snapshots[i] }

// A replica that no route reaches, but that the detector does not find dead
// (the lead's 150-satellite run: a relay with a wrong view of the sky), gets
// snapshots at the backoff's pace, not at every ping; once it has failed for
// asideAfter it is set aside and the satellite behind it holds the copies, so
// writes go on (before, they failed at once for as long as it backed off);
// while set aside it costs one small question per backoff step, no snapshot;
// and once reachable it is back in sync and in the set.
func TestSnapshotsToAnUnreachableReplicaBackOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSky(t, 2)
		p := s.prims[3]
		p.retry.jitter = 0 // 1, 2, 4, 8 s
		p.idle = 0         // ping at every tick, as a replica that just stopped answering needs
		const tick = 100 * time.Millisecond
		work(t, p, "a", 2)
		s.setUnreachable(2, true)
		s.mu.Lock()
		before, asked := s.snapshots[2], s.questions[2]
		s.mu.Unlock()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { p.Maintain(ctx, tick); close(done) }()
		defer func() { cancel(); <-done }()
		const span = 60 * time.Second
		time.Sleep(span)
		s.mu.Lock()
		got, questions := s.snapshots[2]-before, s.questions[2]-asked
		s.mu.Unlock()
		// Tries at 0.1, 1.1 and 3.1 s; set aside at 3.6 s; then questions at
		// 7.1, 15.1, 23.1, ... s (every 8 s), no snapshot.
		if got != 3 {
			t.Errorf("%d snapshot attempts in %v, want 3 (then set aside; a ping every %v without backoff: %d)",
				got, span, tick, int(span/tick))
		}
		if want := 1 + int((span-7100*time.Millisecond)/retryMax); questions != want {
			t.Errorf("%d questions to the replica set aside in %v, want %d (one per backoff step)", questions, span, want)
		}
		// Writes while it is set aside: acknowledged at once, held by 1.
		start := time.Now()
		if err := p.PutFrames(context.Background(), "a", []store.Frame{{Page: 0, Data: []byte("v3")}}); err != nil {
			t.Errorf("write with its replica set aside: %v", err)
		}
		if took := time.Since(start); took != 0 {
			t.Errorf("write took %v, want at once (its replica set aside)", took)
		}
		if got, want := copyOrNil(s, 1, 3), s.snapshotOf(t, 3); !reflect.DeepEqual(got, want) {
			t.Errorf("copy at 1, standing in:\n got %+v\nwant %+v", got, want)
		}
		s.setUnreachable(2, false)
		time.Sleep(retryMax + tick)
		if got, want := copyOrNil(s, 2, 3), s.snapshotOf(t, 3); !reflect.DeepEqual(got, want) {
			t.Errorf("replica 2 not back in sync %v after it became reachable:\n got %+v\nwant %+v", retryMax+tick, got, want)
		}
		if m := p.Members(); !reflect.DeepEqual(m, []uint32{2}) {
			t.Errorf("members %v after 2 took its snapshot, want [2]", m)
		}
		if err := p.PutFrames(context.Background(), "a", []store.Frame{{Page: 1, Data: []byte("v4")}}); err != nil {
			t.Errorf("write after the replica is back: %v", err)
		}
	})
}

// copyOrNil is at's copy of ns, nil when it holds none in sync.
func copyOrNil(s *sky, at, ns uint32) []store.SessionState {
	r, err := s.holders[at].State(context.Background(), ns, true)
	if err != nil || !r.Synced {
		return nil
	}
	return StatesFrom(r.Sessions)
}

func TestAnIdlePrimaryPingsOncePerIntervalAndNotAfterTraffic(t *testing.T) {
	s := newSky(t, 2)
	p := s.prims[3]
	work(t, p, "a", 1)
	if p.needsPing(time.Minute) {
		t.Error("a ping is due right after a change every replica stored")
	}
	time.Sleep(20 * time.Millisecond)
	if !p.needsPing(10 * time.Millisecond) {
		t.Error("no ping needed after 20 ms of quiet with a 10 ms limit")
	}
	s.setUnreachable(2, true)
	// Its caller gives up before the replica is set aside.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := p.PutFrames(ctx, "a", []store.Frame{{Page: 0, Data: []byte("x")}}); err == nil {
		t.Fatal("write acknowledged without its replica")
	}
	if p.needsPing(10 * time.Millisecond) {
		t.Error("a ping is due while the only replica backs off")
	}
}

// A satellite restarting while the one that holds its copy is silent asks
// again for RestoreWait, with rounds backing off, not every 200 ms.
func TestARestoreWaitingForSilentHoldersBacksOff(t *testing.T) {
	const first, most = 10 * time.Millisecond, 80 * time.Millisecond
	was := restorePoll
	restorePoll = retry.Backoff{First: first, Max: most}
	defer func() { restorePoll = was }()
	s := newSky(t, 2)
	s.setUnreachable(2, true) // 3's replica: silent while 3 restarts
	s.mu.Lock()
	s.questions[2] = 0
	s.mu.Unlock()
	local := store.NewMemory()
	p, err := NewPrimary(Options{Self: 3, Spec: s.spec, Replicas: 2, Local: local,
		Transport: skyLink{s, 3}, Liveness: skyLive{s}, RestoreWait: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := p.Restore(context.Background()); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	s.mu.Lock()
	got := s.questions[2]
	s.mu.Unlock()
	// Rounds at 0, 10, 30, 70, 150 ms, then one per 80 ms until RestoreWait (1 s).
	want := 5 + int((took-150*time.Millisecond)/most) + 1
	t.Logf("%d rounds in %v", got, took)
	if took < time.Second {
		t.Errorf("restore gave up after %v, want RestoreWait (1 s) while a holder is silent", took)
	}
	if got > want {
		t.Errorf("%d rounds of questions in %v, want at most %d (every 10 ms: %d)", got, took, want, int(took/first))
	}
}

// An idle primary pings its in-sync replica once per idle period, not at every
// upkeep check: 150 idle satellites pinged 150 times a second before.
func TestAnIdlePrimaryPingsItsReplicaRarely(t *testing.T) {
	s := newSky(t, 2)
	p := s.prims[3]
	p.idle = 200 * time.Millisecond
	work(t, p, "a", 2)
	s.mu.Lock()
	s.replicates[2] = 0
	s.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Maintain(ctx, 5*time.Millisecond); close(done) }()
	time.Sleep(time.Second)
	cancel()
	<-done
	s.mu.Lock()
	got := s.replicates[2]
	s.mu.Unlock()
	// One per 200 ms (+ a tick each): 5, where every check's ping would be 100+.
	if got < 3 || got > 6 {
		t.Errorf("%d pings to the in-sync replica in 1 s of idle upkeep (checks every 5 ms), want about 5", got)
	}
}

// A satellite starting while the one that would hold its copy is not running
// (its dial refused, as in the first start of a whole constellation) does not
// wait for it: a satellite that does not run holds no copy. It asks once.
func TestAFirstStartDoesNotWaitOnASatelliteThatIsNotRunning(t *testing.T) {
	s := newSky(t, 2)
	s.mu.Lock()
	delete(s.holders, 2) // 3's replica has not started
	s.questions[2] = 0
	s.mu.Unlock()
	p, err := NewPrimary(Options{Self: 3, Spec: s.spec, Replicas: 2, Local: store.NewMemory(),
		Transport: skyLink{s, 3}, Liveness: skyLive{s}, RestoreWait: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := p.Restore(context.Background()); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("restore took %v with its replica not running, want no wait (RestoreWait 10 s)", took)
	}
	s.mu.Lock()
	got := s.questions[2]
	s.mu.Unlock()
	if got != 1 {
		t.Errorf("the satellite that is not running was asked %d times, want once", got)
	}
	if !p.Ready() {
		t.Error("not ready after its restore")
	}
}

// A replica that fails its snapshot for a moment (a satellite back from a
// restart that cannot take its copy yet) does not fail the change: the change
// waits for its next try and is stored there, not at the satellite behind
// (make e2e-swarm: "change 142 stored at 0 replica(s) of 1, not at [25]
// (backing off 699ms for the next try)").
func TestAChangeWaitsOutAShortBackoffOfItsReplica(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSky(t, 2)
		p := s.prims[3]
		p.retry.jitter = 0
		work(t, p, "a", 2)
		s.setUnreachable(2, true)
		start := time.Now()
		wrote := make(chan error)
		go func() { wrote <- p.PutFrames(context.Background(), "a", []store.Frame{{Page: 0, Data: []byte("v3")}}) }()
		time.Sleep(1500 * time.Millisecond) // tries at 0 and 1 s failed; the next is at 3 s
		s.setUnreachable(2, false)
		if err := <-wrote; err != nil {
			t.Fatalf("write during the replica's first backoff: %v", err)
		}
		if took := time.Since(start); took != 3*time.Second {
			t.Errorf("write took %v, want 3 s (its replica's third try)", took)
		}
		if !reflect.DeepEqual(copyOrNil(s, 2, 3), s.snapshotOf(t, 3)) {
			t.Error("replica 2 does not hold the primary's state after the write")
		}
		if m := p.Members(); !reflect.DeepEqual(m, []uint32{2}) {
			t.Errorf("members %v, want [2] (never set aside)", m)
		}
	})
}
