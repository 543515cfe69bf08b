package liveness

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/satpage/satpage/services/internal/errs"
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

var errRefused = errors.New(`connection error: desc = "transport: Error while dialing: dial tcp 127.0.0.1:7007: connect: connection refused"`)

func TestSuspectMarksARefusingSatelliteDeadAtOnce(t *testing.T) {
	d := New(func(_ context.Context, i uint32) error {
		if i == 7 {
			return errRefused
		}
		return nil
	}, 10*time.Second) // a long probe timeout: "at once" is far below it even on a loaded host
	start := time.Now()
	if !d.Suspect(context.Background(), 7) {
		t.Fatal("Suspect(7) = false for a satellite whose port refuses, want true")
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("noticed after %v, want at once (the probe was refused), not after its timeout", took)
	}
	if !d.SatelliteDown(7) || !d.Any() {
		t.Error("satellite 7 not marked down")
	}
	if d.Suspect(context.Background(), 8) || d.SatelliteDown(8) {
		t.Error("a satellite that answers was marked down")
	}
}

func TestASilentSatelliteIsMarkedDeadWithinTheDetectionBound(t *testing.T) {
	sky := &fakeSky{dead: map[uint32]bool{7: true}}
	const timeout, recheck = 50 * time.Millisecond, 20 * time.Millisecond
	d := New(sky.probe, timeout)
	d.SetRecheck(recheck, 4*recheck)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go d.Run(ctx, 0)
	start := time.Now()
	if d.Suspect(ctx, 7) {
		t.Error("one probe timeout marked satellite 7 dead, want a miss only")
	}
	bound := SilentMisses*timeout + (SilentMisses-1)*recheck
	for !d.SatelliteDown(7) {
		if time.Since(start) > 4*bound {
			t.Fatalf("silent satellite 7 not marked dead after %v (bound %v)", time.Since(start), bound)
		}
		time.Sleep(2 * time.Millisecond)
	}
	if took := time.Since(start); took < time.Duration(SilentMisses)*timeout {
		t.Errorf("marked dead after %v, before %d probe timeouts of %v", took, SilentMisses, timeout)
	}
}

// A connection whose TLS handshake timed out fails the next probes at once
// with the same timeout: those misses count only once they span
// (SilentMisses-1) probe timeouts, so a burst of them does not mark a live but
// loaded satellite dead, and a satellite that stays so is still marked.
func TestFastTimeoutsMarkDeadOnlyAfterTheirSpan(t *testing.T) {
	// As the node's probe marks it: the connection's last attempt timed out
	// (peers.Pool.Unanswered), so the cached failure is silence.
	handshake := fmt.Errorf("satellite 6: %w: %w", errs.ErrSilent,
		status.Error(codes.Unavailable, `connection error: desc = "transport: authentication handshake failed: context deadline exceeded"`))
	const timeout, recheck = 100 * time.Millisecond, 10 * time.Millisecond
	d := New(func(context.Context, uint32) error { return handshake }, timeout)
	d.SetRecheck(recheck, recheck)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go d.Run(ctx, 0)
	start := time.Now()
	d.Suspect(ctx, 6)
	for !d.SatelliteDown(6) {
		if time.Since(start) > 2*time.Second {
			t.Fatal("a satellite whose every probe times out is not marked dead after 2 s")
		}
		time.Sleep(time.Millisecond)
	}
	took := time.Since(start)
	if span := (SilentMisses - 1) * timeout; took < span {
		t.Errorf("marked dead after %v by %d probes, before the misses spanned %v", took, d.Probes(), span)
	}
	if bound := SilentMisses*timeout + (SilentMisses-1)*recheck; took > 3*bound {
		t.Errorf("marked dead after %v, bound %v", took, bound)
	}
}

// flakySky answers satellite 5's probes only from the fail-th one on, and
// then slowly (after slow): a live satellite on a loaded machine.
type flakySky struct {
	mu         sync.Mutex
	probes     int
	fail       int
	slow       time.Duration
	refuseTill int // the first probes are refused (the process restarting)
}

func (f *flakySky) probe(ctx context.Context, _ uint32) error {
	f.mu.Lock()
	f.probes++
	n := f.probes
	f.mu.Unlock()
	if n <= f.refuseTill {
		return errRefused
	}
	if n <= f.fail {
		<-ctx.Done()
		return ctx.Err()
	}
	select {
	case <-time.After(f.slow):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func TestASlowProbeDoesNotLeaveALiveSatelliteDead(t *testing.T) {
	const timeout, recheck = 40 * time.Millisecond, 10 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, tc := range []struct {
		name string
		sky  *flakySky
	}{
		{"fewer timeouts than SilentMisses", &flakySky{fail: SilentMisses - 1}},
		{"marked dead by timeouts, then answers slower than a first probe", &flakySky{fail: SilentMisses + 2, slow: 3 * timeout / 2}},
		{"refused while restarting, then slow", &flakySky{refuseTill: 2, fail: 2, slow: 3 * timeout / 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := New(tc.sky.probe, timeout)
			d.SetRecheck(recheck, 4*recheck)
			go d.Run(ctx, 0)
			d.Suspect(ctx, 5)
			deadline := time.Now().Add(3 * time.Second)
			for {
				tc.sky.mu.Lock()
				n := tc.sky.probes
				tc.sky.mu.Unlock()
				if n > tc.sky.fail && !d.SatelliteDown(5) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("satellite 5 answers but is still down after 3 s (%d probes)", n)
				}
				time.Sleep(2 * time.Millisecond)
			}
			time.Sleep(5 * recheck)
			if d.SatelliteDown(5) || d.Any() {
				t.Errorf("satellite 5 down again: %v", d.Down())
			}
		})
	}
	// Fewer misses than SilentMisses never mark it dead at all.
	sky := &flakySky{fail: SilentMisses - 1}
	d := New(sky.probe, timeout)
	for range SilentMisses - 1 {
		if d.Suspect(ctx, 5) {
			t.Fatal("marked dead after fewer than SilentMisses timeouts")
		}
	}
	if d.Suspect(ctx, 5) || d.SatelliteDown(5) {
		t.Error("a satellite that answered its last probe is down")
	}
}

func TestMarkAliveForgetsTheMisses(t *testing.T) {
	sky := &fakeSky{dead: map[uint32]bool{2: true}}
	d := New(sky.probe, 10*time.Millisecond)
	for range 2 * SilentMisses {
		d.Suspect(context.Background(), 2)
		d.MarkAlive(2) // a call to or from 2 succeeded in between
	}
	if d.SatelliteDown(2) {
		t.Errorf("satellite 2 down after %d misses each followed by an answer", 2*SilentMisses)
	}
}

func TestConcurrentSuspicionsShareOneProbe(t *testing.T) {
	sky := &fakeSky{dead: map[uint32]bool{9: true}}
	d := New(sky.probe, 50*time.Millisecond)
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() { d.Suspect(context.Background(), 9) })
	}
	wg.Wait()
	if got := d.Probes(); got != 1 {
		t.Errorf("20 concurrent suspicions sent %d probes, want 1", got)
	}
	if d.SatelliteDown(9) {
		t.Error("one shared timeout marked satellite 9 dead")
	}
}

func TestReprobesOfADeadSatelliteBackOff(t *testing.T) {
	const first, most = 10 * time.Millisecond, 80 * time.Millisecond
	d := New(func(context.Context, uint32) error { return errRefused }, 50*time.Millisecond)
	d.SetRecheck(first, most)
	ctx, cancel := context.WithCancel(context.Background())
	go d.Run(ctx, 0)
	d.MarkDead(3)
	const span = time.Second
	time.Sleep(span)
	cancel()
	// Probes at 10, 30, 70, 150, 230, ... ms: 3 while backing off, then one per 80 ms.
	want := 3 + int((span-70*time.Millisecond)/most) + 1
	if got := d.Probes(); got > int64(want) || got < int64(want)/2 {
		t.Errorf("%d re-probes of a dead satellite in %v, want about %d (at a fixed %v: %d)",
			got, span, want, first, span/first)
	}
	if !d.SatelliteDown(3) {
		t.Error("a refusing satellite came back alive")
	}
}

func TestCutsOnlyKeepsTheCutsAndDropsTheSuspicions(t *testing.T) {
	d := New(func(context.Context, uint32) error { return errRefused }, 0)
	d.MarkDead(4)
	c := d.CutsOnly()
	if c.Any() || c.SatelliteDown(4) {
		t.Error("CutsOnly reports the dead satellite 4")
	}
	d.SetCut([][2]uint32{{1, 2}})
	if !c.Any() || !c.LinkCut(2, 1) || c.LinkCut(1, 3) {
		t.Errorf("CutsOnly answers the cuts %v wrongly", d.Cut())
	}
}

// Silence and absence are decided on types and reasons, never on the text:
// a transport failure is silence only when the caller marked it so (the
// node's probe, from the deadline and peers.Pool.Unanswered).
func TestSilentTellsTimeoutsFromRefusals(t *testing.T) {
	handshake := status.Error(codes.Unavailable, `connection error: desc = "transport: authentication handshake failed: context deadline exceeded"`)
	restoring := errs.Status(fmt.Errorf("satellite is restoring: %w", errs.ErrUnavailable))
	for _, tc := range []struct {
		name           string
		err            error
		silent, absent bool
	}{
		{"the caller's deadline", context.DeadlineExceeded, true, false},
		{"a deadline over the wire", status.Error(codes.DeadlineExceeded, "context deadline exceeded"), true, false},
		{"a network timeout", &net.DNSError{Err: "i/o timeout", Name: "sat-7", IsTimeout: true}, true, false},
		{"marked silent by the probe", fmt.Errorf("satellite 7: %w: %w", errs.ErrSilent, handshake), true, false},
		{"silent, from another satnode", errs.Status(fmt.Errorf("satellite 7: %w", errs.ErrSilent)), true, false},
		{"a timeout in the text only", handshake, false, true},
		{"refused", status.Error(codes.Unavailable, errRefused.Error()), false, true},
		{"no address", status.Error(codes.Unavailable, `name resolver error: produced zero addresses`), false, true},
		{"a running satnode that is restoring", restoring, false, false},
		{"no route", errs.Status(fmt.Errorf("x: %w", errs.ErrNoRoute)), false, false},
		{"nil", nil, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Silent(tc.err); got != tc.silent {
				t.Errorf("Silent(%v) = %v, want %v", tc.err, got, tc.silent)
			}
			if got := Absent(tc.err); got != tc.absent {
				t.Errorf("Absent(%v) = %v, want %v", tc.err, got, tc.absent)
			}
		})
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
	d.SetRecheck(20*time.Millisecond, 20*time.Millisecond)
	go d.Run(ctx, 0)
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

// Confirm waits out the misses of a silent satellite until it is marked dead,
// and returns false as soon as a slow but live one answers.
func TestConfirmDecidesWhatSuspectLeavesAsAMiss(t *testing.T) {
	const timeout, recheck = 40 * time.Millisecond, 10 * time.Millisecond
	ctx := context.Background()
	sky := &fakeSky{dead: map[uint32]bool{7: true}}
	d := New(sky.probe, timeout)
	d.SetRecheck(recheck, 4*recheck)
	start := time.Now()
	if !d.Confirm(ctx, 7) {
		t.Fatal("Confirm(7) = false for a satellite that never answers")
	}
	if took, bound := time.Since(start), SilentMisses*timeout+(SilentMisses-1)*recheck; took > 3*bound {
		t.Errorf("confirmed after %v, bound %v", took, bound)
	}
	live := &flakySky{fail: SilentMisses - 1}
	d = New(live.probe, timeout)
	d.SetRecheck(recheck, 4*recheck)
	if d.Confirm(ctx, 5) || d.SatelliteDown(5) {
		t.Error("Confirm(5) = true for a satellite that answers after two timeouts")
	}
	short, cancel := context.WithTimeout(ctx, timeout/2)
	defer cancel()
	if d := New(sky.probe, timeout); d.Confirm(short, 7) {
		t.Error("Confirm returned dead for a caller that gave up before any verdict")
	}
}

// A probe sent before a satellite died may come back answered after it died:
// Confirm, called after the death, must not take that answer for its own
// (a takeover would refuse and the request fail; seen in CI under load).
func TestConfirmDoesNotTakeAProbeSentBeforeItWasCalled(t *testing.T) {
	release := make(chan struct{})
	var calls sync.Mutex
	n := 0
	probe := func(ctx context.Context, i uint32) error {
		calls.Lock()
		n++
		first := n == 1
		calls.Unlock()
		if first {
			<-release // alive when sent; its answer arrives late
			return nil
		}
		return errRefused // dead by now
	}
	d := New(probe, time.Second)
	go d.Suspect(context.Background(), 7)
	for d.Probes() == 0 {
		time.Sleep(time.Millisecond)
	}
	verdict := make(chan bool)
	go func() { verdict <- d.Confirm(context.Background(), 7) }()
	time.Sleep(50 * time.Millisecond) // Confirm waits on the old probe
	close(release)
	if !<-verdict {
		t.Fatal("Confirm(7) = false: it took the answer to a probe sent before it was called")
	}
	if got := d.Probes(); got != 2 {
		t.Errorf("probes: %d, want 2 (the old one and Confirm's own)", got)
	}
}

// Recheck probes a satellite marked dead at once: one that answers is alive
// again, one that still refuses stays dead.
func TestRecheckProbesASatelliteMarkedDeadAtOnce(t *testing.T) {
	sky := &fakeSky{dead: map[uint32]bool{}}
	d := New(sky.probe, 50*time.Millisecond)
	d.MarkDead(4)
	if d.Recheck(context.Background(), 4) || d.SatelliteDown(4) {
		t.Error("satellite 4 answers, but Recheck left it dead")
	}
	refused := New(func(context.Context, uint32) error { return errRefused }, 50*time.Millisecond)
	refused.MarkDead(4)
	if !refused.Recheck(context.Background(), 4) || !refused.SatelliteDown(4) {
		t.Error("satellite 4 refuses, but Recheck reports it alive")
	}
}
