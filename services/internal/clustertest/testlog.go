package clustertest

import (
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// WarningsTo is an Options.Logger that writes the cluster's warnings and
// errors to t's log: a test that fails shows the failovers, stand-ins and
// retries behind its figures (go test prints the log of failed tests only).
// Call it before New: its cleanup, registered first, runs after the
// cluster's, so nothing is logged to a test that has ended.
func WarningsTo(t testing.TB) *slog.Logger {
	w := &testLog{t: t}
	t.Cleanup(w.stop)
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type testLog struct {
	mu   sync.Mutex
	t    testing.TB
	done bool
}

func (w *testLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimSpace(string(p)))
	}
	return len(p), nil
}

func (w *testLog) stop() {
	w.mu.Lock()
	w.done = true
	w.mu.Unlock()
}
