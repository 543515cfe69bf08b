package linkemu

import (
	"container/heap"
	"context"
	"sync"
	"time"
)

// The holds of a process: every reply held until its instant at the origin
// of its request (ClientInterceptor) waits in one queue ordered by instant.
// One of the held goroutines, the leader, sleeps until the earliest instant
// on a clock that wakes within microseconds of it (a timerfd in the runtime's
// poller on Linux, no thread held: wakeClock), then releases every message due
// by then in one wake-up. The leader's own instant is never before the
// earliest, so a message held alone (the common case: a satellite holds a few
// at a time) costs one clock setting and one wake-up of its own goroutine:
// no timer of its own, no thread sleeping in the kernel, no hand-over between
// goroutines. When the leader's instant comes and others are still held, the
// earliest of them leads on. No goroutine runs for the queue itself.
var holds = &holdQueue{}

// holdUntil returns no earlier than wall ns `at`, and as soon after it as the
// machine lets it (false: ctx ended first).
func holdUntil(ctx context.Context, at int64) bool {
	if at <= time.Now().UnixNano() {
		return ctx.Err() == nil
	}
	w := holds.add(at)
	lead := w.lead
	var stop func() bool
	for {
		if lead {
			if stop == nil { // the leader sleeps on the clock: its context's end sets the clock to now
				stop = context.AfterFunc(ctx, func() { holds.kick(w) })
				defer stop()
			}
			err := holds.clock.wait()
			if holds.tick(w, err) {
				return ctx.Err() == nil
			}
			if ctx.Err() != nil {
				holds.cancel(w)
				return false
			}
			continue
		}
		select {
		case lead = <-w.ch:
			if !lead {
				return ctx.Err() == nil
			}
		case <-ctx.Done():
			holds.cancel(w)
			return false
		}
	}
}

type holdQueue struct {
	mu     sync.Mutex
	q      waiters
	leader *waiter   // the goroutine waiting on the clock (nil: none held)
	armed  int64     // the instant clock is set for
	clock  wakeClock // created with the first hold, kept for the process' life
}

type waiter struct {
	at   int64
	ch   chan bool // one message: false released, true lead
	lead bool      // it leads from the start
	i    int       // index in the heap; -1 once out of it
}

func (h *holdQueue) add(at int64) *waiter {
	w := &waiter{at: at, ch: make(chan bool, 1)}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.clock == nil {
		h.clock = newWakeClock()
	}
	heap.Push(&h.q, w)
	switch {
	case h.leader == nil:
		h.leader, w.lead = w, true
		h.arm(at)
	case at < h.armed:
		h.arm(at) // the leader wakes earlier to release this one
	}
	return w
}

func (h *holdQueue) arm(at int64) {
	h.armed = at
	h.clock.set(at)
}

// tick is the leader's turn after its clock woke (err: the clock cannot wait,
// it would spin: a runtime timer from now on): it releases everything due,
// and true when its own hold is over, the lead passed on to the earliest left.
func (h *holdQueue) tick(w *waiter, err error) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil {
		h.clock = newTimerClock()
	}
	now := time.Now().UnixNano()
	done := false
	for len(h.q) > 0 && h.q[0].at <= now {
		x := heap.Pop(&h.q).(*waiter)
		if x == w {
			done = true
			continue
		}
		x.ch <- false
	}
	if !done {
		h.arm(h.q[0].at) // w is still held: the queue is not empty
		return false
	}
	h.leader = nil
	if len(h.q) > 0 {
		h.passLead()
	}
	return true
}

// passLead makes the earliest held goroutine the leader (h.mu held, queue not empty).
func (h *holdQueue) passLead() {
	h.leader = h.q[0]
	h.arm(h.leader.at)
	h.leader.ch <- true
}

// kick wakes the leader w now (its context ended).
func (h *holdQueue) kick(w *waiter) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.leader == w {
		h.arm(time.Now().UnixNano())
	}
}

func (h *holdQueue) cancel(w *waiter) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if w.i >= 0 {
		heap.Remove(&h.q, w.i) // the clock may wake for it anyway: nothing is released then
	}
	if h.leader == w { // it was asked to lead as its context ended
		h.leader = nil
		if len(h.q) > 0 {
			h.passLead()
		}
	}
}

// waiters is a min-heap of waiters by instant.
type waiters []*waiter

func (q waiters) Len() int           { return len(q) }
func (q waiters) Less(i, j int) bool { return q[i].at < q[j].at }
func (q waiters) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].i, q[j].i = i, j
}
func (q *waiters) Push(x any) {
	w := x.(*waiter)
	w.i = len(*q)
	*q = append(*q, w)
}
func (q *waiters) Pop() any {
	old := *q
	w := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	w.i = -1
	return w
}

// wakeClock is the releasing goroutine's alarm: set(at) (wall ns; 0 unsets)
// replaces the instant, and wait returns at or after it, or at once when it
// already passed; an error says the clock cannot wait. set and wait may be
// called from different goroutines.
type wakeClock interface {
	set(at int64)
	wait() error
}

// timerClock is the portable clock: a runtime timer, which fires up to the
// poller's millisecond step late in an idle process (newWakeClock's fallback).
type timerClock struct{ t *time.Timer }

func newTimerClock() *timerClock {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &timerClock{t: t}
}

func (c *timerClock) set(at int64) {
	if at == 0 {
		c.t.Stop()
		return
	}
	c.t.Reset(time.Duration(at - time.Now().UnixNano())) // Go 1.23 timers: no stale fire after Reset
}

func (c *timerClock) wait() error {
	<-c.t.C
	return nil
}
