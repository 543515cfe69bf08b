package liveness

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// fakeSky answers probes: a dead satellite never answers (the probe waits out
// its deadline, like a pod whose address no longer answers).
type fakeSky struct {
	mu   sync.Mutex
	dead map[uint32]bool
}

func (f *fakeSky) set(i uint32, dead bool) { f.mu.Lock(); f.dead[i] = dead; f.mu.Unlock() }

func (f *fakeSky) probe(ctx context.Context, i uint32) error {
	f.mu.Lock()
	dead := f.dead[i]
	f.mu.Unlock()
	if dead {
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}

func TestSuspectMarksADeadSatelliteWithinTheProbeTimeout(t *testing.T) {
	sky := &fakeSky{dead: map[uint32]bool{7: true}}
	d := New(sky.probe, 100*time.Millisecond)
	start := time.Now()
	if !d.Suspect(context.Background(), 7) {
		t.Fatal("Suspect(7) = false for a satellite that does not answer, want true")
	}
	if took := time.Since(start); took > 500*time.Millisecond {
		t.Errorf("noticed after %v, want within the 100 ms probe timeout (+ slack)", took)
	}
	if !d.SatelliteDown(7) || !d.Any() {
		t.Error("satellite 7 not marked down")
	}
	if d.Suspect(context.Background(), 8) || d.SatelliteDown(8) {
		t.Error("a satellite that answers was marked down")
	}
}

func TestSuspectIgnoresACallerThatGaveUp(t *testing.T) {
	sky := &fakeSky{dead: map[uint32]bool{3: true}}
	d := New(sky.probe, time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if d.Suspect(ctx, 3) || d.SatelliteDown(3) {
		t.Error("a cancelled caller's probe marked satellite 3 down")
	}
}

func TestRunMarksARestartedSatelliteAlive(t *testing.T) {
	sky := &fakeSky{dead: map[uint32]bool{}}
	d := New(sky.probe, 50*time.Millisecond)
	d.MarkDead(4)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go d.Run(ctx, 20*time.Millisecond)
	deadline := time.Now().Add(2 * time.Second)
	for d.SatelliteDown(4) {
		if time.Now().After(deadline) {
			t.Fatal("satellite 4 answers but is still marked down after 2 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if d.Any() {
		t.Errorf("view not empty: down %v", d.Down())
	}
}

func TestCutLinksAreUndirected(t *testing.T) {
	d := New(func(context.Context, uint32) error { return errors.New("unused") }, 0)
	d.SetCut([][2]uint32{{9, 2}, {5, 6}})
	if !d.LinkCut(2, 9) || !d.LinkCut(9, 2) || !d.LinkCut(6, 5) || d.LinkCut(2, 5) {
		t.Errorf("cut set %v answers wrongly", d.Cut())
	}
	if got := d.Cut(); len(got) != 2 || got[0] != [2]uint32{2, 9} || got[1] != [2]uint32{5, 6} {
		t.Errorf("Cut() = %v, want [[2 9] [5 6]]", got)
	}
	d.SetCut(nil)
	if d.Any() {
		t.Error("view not empty after clearing the cuts")
	}
}
