package clustertest

import (
	"sync"
	"time"

	"github.com/satpage/satpage/services/internal/node"
)

// Timers are timers that fire only when a test says so (Fire), for the
// nodes' bound on held read faults (Options.HeldTimers, node.Options.AfterFunc):
// a test decides when the bound has passed instead of waiting it out.
type Timers struct {
	mu    sync.Mutex // guards armed and every timer's done
	armed []*timer   // in the order they were armed
}

type timer struct {
	ts   *Timers
	wait time.Duration
	f    func()
	done bool // fired or stopped
}

var _ node.Timer = (*timer)(nil)

// AfterFunc arms a timer that runs f when Fire is called (wait is recorded:
// Armed).
func (ts *Timers) AfterFunc(wait time.Duration, f func()) node.Timer {
	t := &timer{ts: ts, wait: wait, f: f}
	ts.mu.Lock()
	ts.armed = append(ts.armed, t)
	ts.mu.Unlock()
	return t
}

// afterFunc is ts.AfterFunc for node.Options (nil when ts is: real timers).
func (ts *Timers) afterFunc() func(time.Duration, func()) node.Timer {
	if ts == nil {
		return nil
	}
	return ts.AfterFunc
}

// Stop disarms t and reports whether it had neither fired nor been stopped.
func (t *timer) Stop() bool {
	t.ts.mu.Lock()
	defer t.ts.mu.Unlock()
	if t.done {
		return false
	}
	t.done = true
	for i, a := range t.ts.armed {
		if a == t {
			t.ts.armed = append(t.ts.armed[:i], t.ts.armed[i+1:]...)
			break
		}
	}
	return true
}

// Armed is the waits of the timers armed now (neither fired nor stopped), in
// the order they were armed.
func (ts *Timers) Armed() []time.Duration {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	out := make([]time.Duration, len(ts.armed))
	for i, t := range ts.armed {
		out[i] = t.wait
	}
	return out
}

// Fire runs the function of every timer armed now, one after the other in
// the caller's goroutine (a real timer's runs in a goroutine of its own), and
// returns how many it ran: when it returns, what they did is done.
func (ts *Timers) Fire() int {
	ts.mu.Lock()
	fire := ts.armed
	ts.armed = nil
	for _, t := range fire {
		t.done = true
	}
	ts.mu.Unlock()
	for _, t := range fire {
		t.f()
	}
	return len(fire)
}
