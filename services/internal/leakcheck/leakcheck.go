// Package leakcheck finds goroutines of satpage's own code that outlive their
// owner (a test's equivalent of goleak, limited to this module's packages so
// that gRPC's and the runtime's own goroutines, which end on their own
// schedule, are not counted).
package leakcheck

import (
	"bytes"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// ours marks a stack frame of this module's code.
const ours = "github.com/satpage/satpage/services/"

// Snapshot is the set of goroutines running now (their ids).
func Snapshot() map[uint64]bool {
	out := map[uint64]bool{}
	for _, g := range goroutines() {
		out[g.id] = true
	}
	return out
}

// Check fails t when a goroutine that was not running at before and runs
// code of this module is still running after grace (polled: goroutines that
// are ending get that long). The report holds their stacks.
func Check(t testing.TB, before map[uint64]bool, grace time.Duration) {
	t.Helper()
	deadline := time.Now().Add(grace)
	for {
		var left []string
		for _, g := range goroutines() {
			if !before[g.id] && g.ours {
				left = append(left, g.stack)
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%d goroutine(s) outlived their owner:\n\n%s", len(left), strings.Join(left, "\n\n"))
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type goroutine struct {
	id    uint64
	ours  bool
	stack string
}

func goroutines() []goroutine {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []goroutine
	for _, block := range bytes.Split(buf, []byte("\n\n")) {
		s := string(block)
		head, _, _ := strings.Cut(s, " [")
		id, err := strconv.ParseUint(strings.TrimPrefix(head, "goroutine "), 10, 64)
		if err != nil {
			continue
		}
		// The checker itself and the test functions running it are not leaks.
		mine := strings.Contains(s, ours) && !strings.Contains(s, ours+"internal/leakcheck.") &&
			!strings.Contains(s, "testing.tRunner")
		out = append(out, goroutine{id: id, ours: mine, stack: s})
	}
	return out
}
