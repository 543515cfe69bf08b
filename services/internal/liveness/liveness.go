// Package liveness is a satellite's view of which satellites are dead and
// which ISLs are cut. A satellite is suspected when a call to it fails, and a
// health probe decides (docs/faults.md, "The failure detector"):
//
//   - a probe that is refused (no process on the port, no such host, the
//     connection reset) marks it dead at once: within ProbeTimeout of the first
//     failed call;
//   - a probe that times out is only a miss: a loaded machine makes live
//     satellites slow, not silent for long. SilentMisses consecutive misses
//     (the detector probes again every RecheckInterval) spanning at least
//     (SilentMisses-1) x ProbeTimeout mark it dead: within SilentMisses x
//     ProbeTimeout + (SilentMisses-1) x RecheckInterval (DetectionBound);
//   - any answer (a probe, or a call to or from it that MarkAlive reports)
//     clears the misses and marks it alive.
//
// Dead satellites are probed again, first after RecheckInterval, then twice as
// long after each probe that fails, up to RecheckMax (a dead satellite costs
// one probe every RecheckMax), each with twice the probe timeout (so a live
// satellite on a loaded machine gets back); one that answers
// (SERVING or not: the probe decides what counts) is marked alive.
// Probes of one satellite never overlap: concurrent suspicions share one.
// ISL cuts come from outside (the link layer, or `satpage cluster chaos`)
// through SetCut.
//
// The view is local and eventually right: two satellites may disagree for up
// to RecheckMax. Routing on it is safe either way, because a relay that
// finds its next hop dead marks it and routes around it.
package liveness

import (
	"context"
	"errors"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/satpage/satpage/services/internal/errs"
)

// Defaults of the detector (docs/faults.md).
const (
	// A dead process's port refuses at once; the timeout bounds one probe of an
	// address that does not answer (a deleted pod, or a satellite too loaded to
	// answer in time: a miss, not a death, see SilentMisses).
	ProbeTimeout = time.Second
	// SilentMisses consecutive probe timeouts mark a satellite dead.
	SilentMisses = 3
	// RecheckInterval is the first re-probe of a dead (or missed) satellite;
	// it doubles after each failed re-probe of a dead one up to RecheckMax.
	RecheckInterval = 250 * time.Millisecond
	RecheckMax      = 2 * time.Second
)

// silentSpan is how long the misses that mark a satellite dead must span.
func silentSpan(timeout time.Duration) time.Duration { return (SilentMisses - 1) * timeout }

// DetectionBound is the longest a dead satellite stays unnoticed after the
// first failed call to it (a satellite that does not refuse but never answers).
const DetectionBound = SilentMisses*ProbeTimeout + (SilentMisses-1)*RecheckInterval

// Probe asks satellite i whether it is alive: nil when it answers within ctx.
type Probe func(ctx context.Context, i uint32) error

// Detector is safe for concurrent use. Reads (SatelliteDown, LinkCut, Any)
// are lock-free: they run in every routing decision.
type Detector struct {
	probe   Probe
	timeout time.Duration
	recheck time.Duration // first re-probe delay (RecheckInterval)
	maxWait time.Duration // RecheckMax
	view    atomic.Pointer[view]
	mu      sync.Mutex // serialises writers of view; guards state
	state   map[uint32]*peerState
	tracked atomic.Int64  // len(state): MarkAlive's lock-free fast path
	probes  atomic.Int64  // probes sent (tests and metrics)
	wake    chan struct{} // tells Run a probe was scheduled
}

// peerState is what the detector tracks of a satellite that is suspected or dead.
type peerState struct {
	misses   int           // consecutive probe timeouts
	since    time.Time     // the first of them
	next     time.Time     // next re-probe
	wait     time.Duration // delay after the next failed re-probe
	inflight *probeCall    // the probe now running, shared by every suspicion
}

type probeCall struct {
	done     chan struct{}
	sent     time.Time
	dead     bool
	answered bool // the satellite answered this probe
}

// view is immutable once published.
type view struct {
	down map[uint32]time.Time // dead satellite -> when it was marked
	cut  map[[2]uint32]bool   // cut ISL (low, high)
}

// New builds a detector that confirms suspicions with probe, each probe bounded
// by timeout (ProbeTimeout when <= 0).
func New(probe Probe, timeout time.Duration) *Detector {
	if timeout <= 0 {
		timeout = ProbeTimeout
	}
	d := &Detector{probe: probe, timeout: timeout, recheck: RecheckInterval, maxWait: RecheckMax,
		state: map[uint32]*peerState{}, wake: make(chan struct{}, 1)}
	d.view.Store(&view{down: map[uint32]time.Time{}, cut: map[[2]uint32]bool{}})
	return d
}

// SetRecheck changes the re-probe delays (tests): first after first, doubling up to max.
func (d *Detector) SetRecheck(first, maxWait time.Duration) {
	d.mu.Lock()
	d.recheck, d.maxWait = first, max(first, maxWait)
	d.mu.Unlock()
}

// Probes is how many probes the detector has sent.
func (d *Detector) Probes() int64 { return d.probes.Load() }

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

// publish stores a copy of the view changed by f (when f reports a change).
// d.mu must be held.
func (d *Detector) publish(f func(v *view) bool) {
	old := d.view.Load()
	nv := &view{down: make(map[uint32]time.Time, len(old.down)+1), cut: old.cut}
	for k, t := range old.down {
		nv.down[k] = t
	}
	if f(nv) {
		d.view.Store(nv)
	}
}

func (d *Detector) peer(i uint32) *peerState {
	s := d.state[i]
	if s == nil {
		s = &peerState{}
		d.state[i] = s
		d.tracked.Add(1)
	}
	return s
}

// markDead: d.mu must be held.
func (d *Detector) markDead(i uint32, now time.Time) {
	s := d.peer(i)
	s.misses, s.next, s.wait = 0, now.Add(d.recheck), d.recheck
	d.publish(func(v *view) bool {
		if _, ok := v.down[i]; ok {
			return false
		}
		v.down[i] = now
		return true
	})
	d.poke()
}

// MarkDead records i as dead.
func (d *Detector) MarkDead(i uint32) {
	d.mu.Lock()
	d.markDead(i, time.Now())
	d.mu.Unlock()
}

// MarkAlive records i as alive (it answered, or it called us): no longer dead,
// its misses forgotten. Lock-free while nothing is suspected (every answered
// call reports it).
func (d *Detector) MarkAlive(i uint32) {
	if d.tracked.Load() == 0 {
		return
	}
	d.mu.Lock()
	d.alive(i)
	d.mu.Unlock()
}

// alive: d.mu must be held.
func (d *Detector) alive(i uint32) {
	if s := d.state[i]; s != nil && s.inflight == nil {
		delete(d.state, i)
		d.tracked.Add(-1)
	} else if s != nil {
		s.misses = 0
	}
	if _, down := d.view.Load().down[i]; down {
		d.publish(func(v *view) bool { delete(v.down, i); return true })
	}
}

// Suspect is called when a call to i failed as if i were unreachable: it
// probes i (bounded by the detector's timeout; a probe already running for i
// is shared) and reports whether i is now considered dead: refused at once, or
// SilentMisses probe timeouts in a row (the detector keeps probing a missed
// satellite by itself, so a dead one is marked within DetectionBound).
func (d *Detector) Suspect(ctx context.Context, i uint32) bool {
	if d.SatelliteDown(i) {
		return true
	}
	c := d.startProbe(ctx, i, d.timeout, time.Time{})
	select {
	case <-c.done:
		return c.dead
	case <-ctx.Done():
		return d.SatelliteDown(i) // our caller gave up: that says nothing more about i
	}
}

// Confirm is Suspect for a caller that must know (a takeover: serving a
// session in place of a satellite that is alive would split it): while i's
// probes only time out, it waits for the next probe until i is marked dead
// (within DetectionBound) or answers, or ctx ends. It reports whether i is dead.
// Only probes sent after Confirm was called count as an answer: a probe in
// flight, or a call that reached us, from before i died says nothing of now.
func (d *Detector) Confirm(ctx context.Context, i uint32) bool {
	asked := time.Now()
	for {
		if d.SatelliteDown(i) {
			return true
		}
		c := d.startProbe(ctx, i, d.timeout, asked)
		select {
		case <-c.done:
		case <-ctx.Done():
			return d.SatelliteDown(i)
		}
		if c.dead || d.SatelliteDown(i) {
			return true
		}
		if c.answered {
			return false
		}
		select { // a miss: probe again
		case <-time.After(d.recheck):
		case <-ctx.Done():
			return d.SatelliteDown(i)
		}
	}
}

// Recheck probes i now, even when it is marked dead, and reports whether it is
// dead: for a caller that has reason to doubt the mark (a request for i came
// from a satellite that holds it alive). A satellite that came back is marked
// alive at once instead of at its next re-probe. Only a probe sent after the
// call counts.
func (d *Detector) Recheck(ctx context.Context, i uint32) bool {
	c := d.startProbe(ctx, i, d.timeout, time.Now())
	select {
	case <-c.done:
		return c.dead || (!c.answered && d.SatelliteDown(i))
	case <-ctx.Done():
		return d.SatelliteDown(i)
	}
}

// startProbe returns the probe of i now running, or starts one with timeout.
// The probe runs apart from the caller's context (its answer serves every
// caller waiting on it, and counts towards the misses whoever waits). A probe
// sent before notBefore is waited out and a new one started.
func (d *Detector) startProbe(ctx context.Context, i uint32, timeout time.Duration, notBefore time.Time) *probeCall {
	for {
		d.mu.Lock()
		s := d.peer(i)
		if c := s.inflight; c != nil {
			d.mu.Unlock()
			if !c.sent.Before(notBefore) {
				return c
			}
			select {
			case <-c.done:
				continue
			case <-ctx.Done():
				return c // the caller gives up too
			}
		}
		c := &probeCall{done: make(chan struct{}), sent: time.Now()}
		s.inflight = c
		d.mu.Unlock()
		go func() { // ends within timeout; waited for by its callers (Run's: by Run)
			pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
			d.probes.Add(1)
			err := d.probe(pctx, i)
			cancel()
			d.mu.Lock()
			c.dead, c.answered = d.settle(i, err, time.Now()), err == nil
			d.mu.Unlock()
			close(c.done)
		}()
		return c
	}
}

// settle applies one probe's outcome to i and reports whether i is dead. d.mu must be held.
func (d *Detector) settle(i uint32, err error, now time.Time) bool {
	s := d.peer(i)
	s.inflight = nil
	_, down := d.view.Load().down[i]
	switch {
	case err == nil:
		d.alive(i)
		return false
	case down:
		// A re-probe of a dead satellite failed: wait twice as long next time.
		s.wait = min(2*s.wait, d.maxWait)
		s.next = now.Add(s.wait)
		d.poke()
		return true
	case Silent(err):
		if s.misses == 0 {
			s.since = now
		}
		s.misses++
		// Misses must also span silentSpan: a connection whose TLS handshake
		// timed out fails the next probes at once with the same timeout, and
		// three of those within a few hundred ms prove no silence.
		if s.misses >= SilentMisses && now.Sub(s.since) >= silentSpan(d.timeout) {
			d.markDead(i, now)
			return true
		}
		s.next = now.Add(d.recheck) // probed again by Run until it answers or is dead
		d.poke()
		return false
	default:
		d.markDead(i, now)
		return true
	}
}

// Silent reports whether a call's error is silence (the satellite may be
// alive but paused or slow) rather than a refusal (nothing runs at its
// address): the caller marked it errs.ErrSilent (the node's probe does, from
// the call's deadline and peers.Pool.Unanswered), it carries that reason from
// another process, or it is a deadline or a network timeout. Never the text:
// gRPC's messages are no interface.
func Silent(err error) bool {
	if err == nil {
		return false
	}
	if errs.Has(err, errs.ErrSilent) || errors.Is(err, context.DeadlineExceeded) || status.Code(err) == codes.DeadlineExceeded {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// Absent reports whether a call's error says that nothing runs at the
// satellite's address: a transport failure (Unavailable with no reason of
// satpage's own: a satnode that is restoring answers Unavailable with one)
// that was no silence, such as a refused connection or an unknown name (no
// pod or task yet, or no longer). Unlike a timeout, that is no slow
// satellite: a satellite whose process does not run holds no state in it.
func Absent(err error) bool {
	return err != nil && !Silent(err) && status.Code(err) == codes.Unavailable && errs.Reason(err) == ""
}

// SetCut replaces the set of cut ISLs.
func (d *Detector) SetCut(links [][2]uint32) {
	cut := make(map[[2]uint32]bool, len(links))
	for _, l := range links {
		cut[link(l[0], l[1])] = true
	}
	d.mu.Lock()
	d.publish(func(v *view) bool {
		v.cut = cut
		return true
	})
	d.mu.Unlock()
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

// CutsOnly is the view with the cut ISLs but no dead satellite: the graph a
// relay falls back to when the live graph has no route to a destination not
// known dead (docs/faults.md, "Relays").
func (d *Detector) CutsOnly() CutsOnly { return CutsOnly{d} }

// CutsOnly is a constellation.Faults that leaves the suspicions out.
type CutsOnly struct{ d *Detector }

func (c CutsOnly) Any() bool                 { return len(c.d.view.Load().cut) > 0 }
func (c CutsOnly) SatelliteDown(uint32) bool { return false }
func (c CutsOnly) LinkCut(a, b uint32) bool  { return c.d.LinkCut(a, b) }

// Run re-probes the satellites that are due: the dead (backing off) and the
// missed (until they answer or are dead), until ctx ends. It sleeps while
// nothing is suspected. interval > 0 is the longest sleep between checks (tests).
func (d *Detector) Run(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		interval = time.Hour // woken by every change
	}
	timer := time.NewTimer(interval)
	defer timer.Stop()
	// The probes Run started: once ctx ends, Run returns only after they have
	// (each within its timeout), so that whoever owns Run owns them too.
	var started []*probeCall
	defer func() {
		for _, c := range started {
			<-c.done
		}
	}()
	for {
		started = slices.DeleteFunc(started, func(c *probeCall) bool {
			select {
			case <-c.done:
				return true
			default:
				return false
			}
		})
		sleep := interval
		var due []uint32
		d.mu.Lock() // Run reads the view under it: a change and its poke come together
		now, down := time.Now(), d.view.Load().down
		for i, s := range d.state {
			_, dead := down[i]
			if s.inflight != nil || (!dead && s.misses == 0) {
				continue
			}
			if wait := s.next.Sub(now); wait > 0 {
				sleep = min(sleep, wait)
			} else {
				due = append(due, i)
			}
		}
		d.mu.Unlock()
		for _, i := range due {
			timeout := d.timeout
			if _, dead := down[i]; dead {
				timeout = 2 * d.timeout // a loaded satellite gets longer to come back
			}
			started = append(started, d.startProbe(ctx, i, timeout, time.Time{}))
		}
		timer.Reset(sleep)
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-d.wake:
		}
	}
}

// poke wakes Run (a satellite was scheduled for a probe).
func (d *Detector) poke() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}
