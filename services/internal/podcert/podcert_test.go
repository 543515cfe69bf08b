package podcert_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/satpage/satpage/services/internal/errs"
	"github.com/satpage/satpage/services/internal/leakcheck"
	"github.com/satpage/satpage/services/internal/podcert"
	"github.com/satpage/satpage/services/internal/retry"
	"github.com/satpage/satpage/services/internal/signer"
	"github.com/satpage/satpage/services/internal/tlsconf"
	"github.com/satpage/satpage/services/internal/tlsconf/tlstest"
)

// reviewer accepts "pod-<name>" as the token of pod <name> of the satellites' account.
type reviewer struct{ calls atomic.Int32 }

func (r *reviewer) Review(_ context.Context, token, audience string) (signer.Review, error) {
	r.calls.Add(1)
	pod, ok := strings.CutPrefix(token, "pod-")
	if !ok {
		return signer.Review{}, fmt.Errorf("token %q: %w", token, errs.ErrUnauthenticated)
	}
	return signer.Review{Username: "system:serviceaccount:sp:satpage", Audiences: []string{audience},
		Extra: map[string][]string{signer.PodNameKey: {pod}}}, nil
}

// world is a signer's material (the gateway's certificate, the CA and its key)
// and a satellite pod's directories.
type world struct {
	ca, tls, token string
	signer         *signer.Signer
	gateway        *tlsconf.Material
	rev            *reviewer
}

func newWorld(t *testing.T) *world {
	t.Helper()
	ca := t.TempDir()
	a := tlstest.Write(t, ca, 0)
	a.WriteKey(t, "ca-key.pem")
	cert, key, err := signer.LoadCA(filepath.Join(ca, tlsconf.CAFile), filepath.Join(ca, "ca-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	w := &world{ca: ca, tls: t.TempDir(), token: filepath.Join(t.TempDir(), "token"), rev: &reviewer{}}
	w.signer, err = signer.New(signer.Options{CACert: cert, CAKey: key, Reviewer: w.rev, Logger: slog.New(slog.DiscardHandler),
		Policy: signer.Policy{Audience: "satpage-signer", Namespace: "sp", ServiceAccount: "satpage", StatefulSet: "satpage",
			Satellites: 10, TTL: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	if w.gateway, err = tlsconf.LoadGateway(ca); err != nil {
		t.Fatal(err)
	}
	w.setToken(t, "pod-satpage-3")
	return w
}

func (w *world) setToken(t *testing.T, tok string) {
	t.Helper()
	if err := os.WriteFile(w.token, []byte(tok), 0o600); err != nil {
		t.Fatal(err)
	}
}

// serve runs the signer on ln until the test ends.
func (w *world) serve(t *testing.T, ln net.Listener) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := signer.Serve(ctx, ln, signer.ServerTLS(w.gateway.Cert), w.signer.Handler(), slog.New(slog.DiscardHandler)); err != nil {
			t.Error(err)
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
}

func (w *world) options(addr string) podcert.Options {
	return podcert.Options{Signer: addr, ServerName: tlsconf.GatewayName(), CAFile: filepath.Join(w.ca, tlsconf.CAFile),
		TokenFile: w.token, Index: 3, Dir: w.tls, Timeout: 5 * time.Second,
		Backoff: retry.Backoff{First: 50 * time.Millisecond, Max: 200 * time.Millisecond, Jitter: 0.5},
		Reuse:   10 * time.Minute, Logger: slog.New(slog.DiscardHandler)}
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

func TestASatelliteGetsItsCertificateAndKeepsItsKeyToItself(t *testing.T) {
	before := leakcheck.Snapshot()
	t.Cleanup(func() { leakcheck.Check(t, before, 2*time.Second) }) // after the signer's own cleanup
	w := newWorld(t)
	ln := listen(t)
	w.serve(t, ln)
	if err := podcert.Ensure(context.Background(), w.options(ln.Addr().String())); err != nil {
		t.Fatal(err)
	}
	// What satnode loads next: its pair and the CA, the tlsconf layout.
	m, err := tlsconf.LoadSatellite(w.tls, 3)
	if err != nil {
		t.Fatal(err)
	}
	id, err := tlsconf.IdentityOf(m.Cert.Leaf)
	if err != nil || id.Role != tlsconf.Satellite || id.Index != 3 {
		t.Fatalf("identity %v (%v), want satellite 3", id, err)
	}
	st, err := os.Stat(filepath.Join(w.tls, tlsconf.SatelliteKey(3)))
	if err != nil || st.Mode().Perm() != 0o400 {
		t.Fatalf("key file mode %v (%v), want 0400", st.Mode(), err)
	}
	entries, _ := os.ReadDir(w.tls)
	if len(entries) != 3 {
		t.Fatalf("%d files in the TLS directory, want ca.pem and the pair", len(entries))
	}
}

func TestARestartedContainerReusesItsPairWithoutTheSigner(t *testing.T) {
	w := newWorld(t)
	ln := listen(t)
	w.serve(t, ln)
	o := w.options(ln.Addr().String())
	if err := podcert.Ensure(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	first, _ := os.ReadFile(filepath.Join(w.tls, tlsconf.SatelliteKey(3)))
	o.Signer = "127.0.0.1:1" // nobody: a second request would fail
	o.Timeout = 300 * time.Millisecond
	if err := podcert.Ensure(context.Background(), o); err != nil {
		t.Fatalf("restart: %v", err)
	}
	again, _ := os.ReadFile(filepath.Join(w.tls, tlsconf.SatelliteKey(3)))
	if string(first) != string(again) || w.rev.calls.Load() != 1 {
		t.Fatalf("key changed %v, %d reviews: want the kept pair and 1 review", string(first) != string(again), w.rev.calls.Load())
	}
	// A pair that ends within Reuse is replaced (the signer's certificates last an hour here).
	o.Signer, o.Timeout, o.Reuse = ln.Addr().String(), 5*time.Second, 2*time.Hour
	if err := podcert.Ensure(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	renewed, _ := os.ReadFile(filepath.Join(w.tls, tlsconf.SatelliteKey(3)))
	if string(renewed) == string(first) || w.rev.calls.Load() != 2 {
		t.Fatalf("a pair about to end was kept (%d reviews)", w.rev.calls.Load())
	}
}

func TestASignerThatComesUpLateIsWaitedFor(t *testing.T) {
	w := newWorld(t)
	ln := listen(t)
	addr := ln.Addr().String()
	ln.Close() // refused until the signer starts
	done := make(chan error, 1)
	go func() { done <- podcert.Ensure(context.Background(), w.options(addr)) }()
	time.Sleep(400 * time.Millisecond)
	ln2, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("port %s taken meanwhile: %v", addr, err)
	}
	w.serve(t, ln2)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := tlsconf.LoadSatellite(w.tls, 3); err != nil {
		t.Fatal(err)
	}
}

func TestARefusalEndsTheStartAtOnceWithTheSignersReason(t *testing.T) {
	w := newWorld(t)
	ln := listen(t)
	w.serve(t, ln)
	o := w.options(ln.Addr().String())
	o.Timeout = time.Minute
	for _, tc := range []struct {
		token string
		want  error
		says  string
	}{
		{"pod-satpage-4", errs.ErrPermissionDenied, "403 Forbidden: pod satpage-4 asks for [\"satellite-3.satpage\"], not for its own name satellite-4.satpage"},
		{"forged", errs.ErrUnauthenticated, "401 Unauthorized: token \"forged\""},
	} {
		w.setToken(t, tc.token)
		start := time.Now()
		err := podcert.Ensure(context.Background(), o)
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
			t.Fatalf("got %v, want %v saying %q", err, tc.want, tc.says)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("took %v: a refusal is not tried again", d)
		}
	}
	if _, err := os.Stat(filepath.Join(w.tls, tlsconf.SatelliteKey(3))); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused start left a key behind: %v", err)
	}
}

func TestNoSignerWithinTheDeadlineIsUnavailableNamingTheLastFailure(t *testing.T) {
	w := newWorld(t)
	o := w.options("127.0.0.1:1")
	o.Timeout = 500 * time.Millisecond
	start := time.Now()
	err := podcert.Ensure(context.Background(), o)
	if !errors.Is(err, errs.ErrUnavailable) || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("got %v, want unavailable naming the refused connection", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("took %v, past the 500ms deadline", d)
	}
}
