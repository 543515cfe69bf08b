// Package liveness is a satellite's view of which satellites are dead and
// which ISLs are cut. A satellite is marked dead when a call to it fails and a
// health probe with a short deadline confirms it (so a failure is noticed
// within ProbeTimeout of the first failed call, instead of after a request's
// whole deadline); dead satellites are probed again every RecheckInterval and
// marked alive once they answer SERVING. ISL cuts come from outside (the link
// layer, or `satpage cluster chaos`) through SetCut.
//
// The view is local and eventually right: two satellites may disagree for up
// to RecheckInterval. Routing on it is safe either way, because a relay that
// finds its next hop dead marks it and routes around it.
package liveness

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of the detector (docs/faults.md).
const (
	// A dead process's port refuses at once; the timeout bounds an address that
	// no longer answers (a deleted pod), and is long enough that a loaded
	// machine does not make a live satellite look dead.
	ProbeTimeout    = time.Second
	RecheckInterval = 250 * time.Millisecond
)

// Probe asks satellite i whether it serves: nil when it answers SERVING within ctx.
type Probe func(ctx context.Context, i uint32) error

// Detector is safe for concurrent use. Reads (SatelliteDown, LinkCut, Any)
// are lock-free: they run in every routing decision.
type Detector struct {
	probe   Probe
	timeout time.Duration
	view    atomic.Pointer[view]
	mu      sync.Mutex // serialises writers of view
}

// view is immutable once published.
type view struct {
	down map[uint32]time.Time // dead satellite -> when it was marked
	cut  map[[2]uint32]bool   // cut ISL (low, high)
}

// New builds a detector that confirms suspicions with probe.
func New(probe Probe, timeout time.Duration) *Detector {
	if timeout <= 0 {
		timeout = ProbeTimeout
	}
	d := &Detector{probe: probe, timeout: timeout}
	d.view.Store(&view{down: map[uint32]time.Time{}, cut: map[[2]uint32]bool{}})
	return d
}

func link(a, b uint32) [2]uint32 { return [2]uint32{min(a, b), max(a, b)} }

// Any reports whether anything is down or cut.
func (d *Detector) Any() bool { v := d.view.Load(); return len(v.down)+len(v.cut) > 0 }

// SatelliteDown reports whether i is marked dead.
func (d *Detector) SatelliteDown(i uint32) bool { _, ok := d.view.Load().down[i]; return ok }

// LinkCut reports whether the ISL a-b is cut.
func (d *Detector) LinkCut(a, b uint32) bool { return d.view.Load().cut[link(a, b)] }

// Down is the dead satellites, ascending.
func (d *Detector) Down() []uint32 {
	v := d.view.Load()
	out := make([]uint32, 0, len(v.down))
	for i := range v.down {
		out = append(out, i)
	}
	slices.Sort(out)
	return out
}

// update publishes a copy of the view changed by f (when f reports a change).
func (d *Detector) update(f func(v *view) bool) {
	d.mu.Lock()
	old := d.view.Load()
	nv := &view{down: make(map[uint32]time.Time, len(old.down)+1), cut: old.cut}
	for k, t := range old.down {
		nv.down[k] = t
	}
	if f(nv) {
		d.view.Store(nv)
	}
	d.mu.Unlock()
}

// MarkDead records i as dead (a call to it failed and it did not answer a probe).
func (d *Detector) MarkDead(i uint32) {
	d.update(func(v *view) bool {
		if _, ok := v.down[i]; ok {
			return false
		}
		v.down[i] = time.Now()
		return true
	})
}

// MarkAlive records i as alive (it answered, or it called us).
func (d *Detector) MarkAlive(i uint32) {
	if !d.SatelliteDown(i) {
		return
	}
	d.update(func(v *view) bool {
		if _, ok := v.down[i]; !ok {
			return false
		}
		delete(v.down, i)
		return true
	})
}

// Suspect is called when a call to i failed as if i were unreachable: it
// probes i (bounded by the detector's timeout) and marks it dead when the
// probe fails. It reports whether i is now considered dead.
func (d *Detector) Suspect(ctx context.Context, i uint32) bool {
	if d.SatelliteDown(i) {
		return true
	}
	pctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	if err := d.probe(pctx, i); err != nil {
		if ctx.Err() != nil {
			return false // our caller gave up: that says nothing about i
		}
		d.MarkDead(i)
		return true
	}
	return false
}

// SetCut replaces the set of cut ISLs.
func (d *Detector) SetCut(links [][2]uint32) {
	cut := make(map[[2]uint32]bool, len(links))
	for _, l := range links {
		cut[link(l[0], l[1])] = true
	}
	d.update(func(v *view) bool {
		v.cut = cut
		return true
	})
}

// Cut is the cut ISLs (low, high), sorted.
func (d *Detector) Cut() [][2]uint32 {
	v := d.view.Load()
	out := make([][2]uint32, 0, len(v.cut))
	for l := range v.cut {
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b [2]uint32) int {
		if a[0] != b[0] {
			return int(a[0]) - int(b[0])
		}
		return int(a[1]) - int(b[1])
	})
	return out
}

// Run probes the dead satellites every interval (RecheckInterval when <= 0)
// and marks the ones that answer alive, until ctx ends.
func (d *Detector) Run(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		interval = RecheckInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		var wg sync.WaitGroup
		for _, i := range d.Down() {
			wg.Go(func() {
				pctx, cancel := context.WithTimeout(ctx, d.timeout)
				defer cancel()
				if d.probe(pctx, i) == nil {
					d.MarkAlive(i)
				}
			})
		}
		wg.Wait()
	}
}
