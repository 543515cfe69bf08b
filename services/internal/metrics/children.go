package metrics

import (
	"sync"
	"sync/atomic"
)

// Children are the children of a metric vector with one label, each looked up
// in the vector once: WithLabelValues checks its label values, hashes them and
// finds the child under the vector's lock on every call, and a one-page fault
// made about ten such calls (docs/services.md, "One page per request").
// Of(v) is WithLabelValues(v): the child appears at its first use, as before.
type Children[T any] struct {
	with func(...string) T
	mu   sync.Mutex                   // serialises adding a child (readers never wait)
	m    atomic.Pointer[map[string]T] // replaced, never changed, when a child is added
}

// ChildrenOf caches the children of a vector by its WithLabelValues.
func ChildrenOf[T any](with func(...string) T) *Children[T] { return &Children[T]{with: with} }

// Of is the child with label value v.
func (c *Children[T]) Of(v string) T {
	if m := c.m.Load(); m != nil {
		if t, ok := (*m)[v]; ok {
			return t
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.m.Load()
	if old != nil {
		if t, ok := (*old)[v]; ok {
			return t
		}
	}
	m := make(map[string]T, 1)
	if old != nil {
		for k, t := range *old {
			m[k] = t
		}
	}
	t := c.with(v)
	m[v] = t
	c.m.Store(&m)
	return t
}
