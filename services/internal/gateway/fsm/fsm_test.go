package fsm_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/satpage/satpage/services/internal/errs"
	"github.com/satpage/satpage/services/internal/gateway/fsm"
)

// plane: 3 planes of 10; the satellites behind s are s-1, s-2, ... in its plane.
var plane = fsm.Plane{PerPlane: 10, StandIns: 3, Behind: func(s uint32, j int) uint32 {
	return s/10*10 + (s%10+10-uint32(j))%10
}}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Errors as they come over the wire: codes and reasons.
var (
	errDead       = status.Error(codes.Unavailable, "connection refused")
	errUnknown    = errs.Status(fmt.Errorf("no table: %w", errs.ErrUnknownSession))
	errFenced     = errs.Status(fmt.Errorf("fenced: %w", errs.ErrStaleEpoch))
	errNoFailover = errs.Status(fmt.Errorf("alive: %w", errs.ErrNoFailover))
	errStaleTable = errs.Status(fmt.Errorf("older: %w", errs.ErrStaleTable))
)

func newMachine(t *testing.T, cfg fsm.Config) *fsm.Machine {
	t.Helper()
	if cfg.Plane.Behind == nil {
		cfg.Plane = plane
	}
	if cfg.Visits == nil {
		cfg.Visits = []fsm.Visit{{Satellite: 1, StartNs: 0}, {Satellite: 5, StartNs: 10}, {Satellite: 8, StartNs: 20}}
	}
	cfg.ID, cfg.Now = "s", t0
	m, err := fsm.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// script steps m through events and checks the actions each returns.
type step struct {
	ev   fsm.Event
	want []fsm.Action
}

func run(t *testing.T, m *fsm.Machine, now time.Time, steps []step) {
	t.Helper()
	for i, s := range steps {
		got := m.Step(now, s.ev)
		// A Reply's error is checked by its presence only.
		for k := range got {
			if r, ok := got[k].(fsm.Reply); ok && r.Err != nil {
				r.Err = errMarker
				got[k] = r
			}
		}
		if !reflect.DeepEqual(got, s.want) {
			t.Fatalf("step %d (%#v): got %#v, want %#v", i, s.ev, got, s.want)
		}
	}
}

var errMarker = fmt.Errorf("an error")

func TestHandoversDueAreMadeInOrderThenTheRequestIsForwarded(t *testing.T) {
	m := newMachine(t, fsm.Config{})
	run(t, m, t0, []step{
		{fsm.Request{TNs: 25}, []fsm.Action{fsm.CallHandOver{From: 1, To: 5, AtNs: 10, Visit: 1}}},
		{fsm.Result{TablePages: 3}, []fsm.Action{fsm.CallHandOver{From: 5, To: 8, AtNs: 20, Visit: 2}}},
		{fsm.Result{TablePages: 4}, []fsm.Action{fsm.Forward{Satellite: 8}}},
		{fsm.Result{}, []fsm.Action{fsm.Reply{Satellite: 8}}},
		{fsm.Request{TNs: 15}, []fsm.Action{fsm.Reply{Satellite: 8, Err: errMarker}}}, // before the visit serving
	})
	if m.Epoch() != 2 || !reflect.DeepEqual(m.Tables(), []uint32{3, 4}) || m.Busy() {
		t.Errorf("epoch %d, tables %v, busy %v; want 2, [3 4], false", m.Epoch(), m.Tables(), m.Busy())
	}
}

func TestAHandoverWhoseReplyWasLostIsDoneWhenTheNextSatelliteServes(t *testing.T) {
	m := newMachine(t, fsm.Config{})
	run(t, m, t0, []step{
		{fsm.Request{TNs: 12}, []fsm.Action{fsm.CallHandOver{From: 1, To: 5, AtNs: 10, Visit: 1}}},
		{fsm.Result{Err: errUnknown}, []fsm.Action{fsm.AskServing{Satellite: 5}}},
		{fsm.Result{}, []fsm.Action{fsm.Forward{Satellite: 5}}},
	})
}

// A next satellite that does not take the table is replaced by a stand-in
// only once the failure detector holds it dead; a slow one never is.
func TestANextSatelliteIsReplacedOnlyAfterTheDetectorsVerdict(t *testing.T) {
	slow := newMachine(t, fsm.Config{})
	run(t, slow, t0, []step{
		{fsm.Request{TNs: 12}, []fsm.Action{fsm.CallHandOver{From: 1, To: 5, AtNs: 10, Visit: 1}}},
		// The serving satellite is asked to be taken over first; it is alive.
		{fsm.Result{Err: errDead}, []fsm.Action{fsm.CallTakeOver{Failed: 1, At: 0}}},
		{fsm.Result{Err: errNoFailover}, []fsm.Action{fsm.CheckAlive{Satellite: 5}}},
		{fsm.Result{}, nil}, // not what it waits for
		{fsm.Verdict{Satellite: 5, Dead: false}, []fsm.Action{fsm.Reply{Satellite: 1, Err: errMarker}}},
	})
	if v := slow.Visits(); v[1].Satellite != 5 {
		t.Errorf("a slow next satellite was replaced: visits %v", v)
	}
	dead := newMachine(t, fsm.Config{})
	run(t, dead, t0, []step{
		{fsm.Request{TNs: 12}, []fsm.Action{fsm.CallHandOver{From: 1, To: 5, AtNs: 10, Visit: 1}}},
		{fsm.Result{Err: errDead}, []fsm.Action{fsm.CallTakeOver{Failed: 1, At: 0}}},
		{fsm.Result{Err: errNoFailover}, []fsm.Action{fsm.CheckAlive{Satellite: 5}}},
		{fsm.Verdict{Satellite: 5, Dead: true}, []fsm.Action{fsm.CheckAlive{Satellite: 4}}},
		{fsm.Verdict{Satellite: 4, Dead: true}, []fsm.Action{fsm.CheckAlive{Satellite: 3}}},
		{fsm.Verdict{Satellite: 3, Dead: false}, []fsm.Action{fsm.CallHandOver{From: 1, To: 3, AtNs: 10, Visit: 1}}},
		{fsm.Result{}, []fsm.Action{fsm.Forward{Satellite: 3}}},
		{fsm.Result{}, []fsm.Action{fsm.Reply{Satellite: 3}}},
	})
	if s, v := dead.Serving(); s != 3 || v != 1 || dead.Epoch() != 1 {
		t.Errorf("serving %d (visit %d, epoch %d), want the stand-in 3 at visit 1, epoch 1", s, v, dead.Epoch())
	}
}

// A handover the serving satellite refused as to a dead next satellite that
// the gateway's detector holds alive is sent again after waits, at most
// HandOverRetries times; then the refusal is the request's error.
func TestAHandoverToANextSatelliteOnlyTheServingOneHoldsDeadIsSentAgain(t *testing.T) {
	cfg := fsm.Config{FencedRetry: 250 * time.Millisecond, HandOverRetries: 2}
	refused := []step{
		{fsm.Result{Err: errDead}, []fsm.Action{fsm.CallTakeOver{Failed: 1, At: 0}}},
		{fsm.Result{Err: errNoFailover}, []fsm.Action{fsm.CheckAlive{Satellite: 5}}},
	}
	handOver := fsm.CallHandOver{From: 1, To: 5, AtNs: 10, Visit: 1}
	caught := newMachine(t, cfg)
	run(t, caught, t0, append(append([]step{{fsm.Request{TNs: 12}, []fsm.Action{handOver}}}, refused...),
		step{fsm.Verdict{Satellite: 5, Dead: false}, []fsm.Action{fsm.Wait{D: 250 * time.Millisecond}}},
		step{fsm.Result{}, []fsm.Action{handOver}},
		step{fsm.Result{TablePages: 2}, []fsm.Action{fsm.Forward{Satellite: 5}}},
		step{fsm.Result{}, []fsm.Action{fsm.Reply{Satellite: 5}}}))
	if s, v := caught.Serving(); s != 5 || v != 1 || caught.Epoch() != 1 {
		t.Errorf("serving %d (visit %d, epoch %d), want 5 at visit 1, epoch 1", s, v, caught.Epoch())
	}
	never := newMachine(t, cfg)
	steps := []step{{fsm.Request{TNs: 12}, []fsm.Action{handOver}}}
	for _, d := range []time.Duration{250 * time.Millisecond, 500 * time.Millisecond} {
		steps = append(append(steps, refused...),
			step{fsm.Verdict{Satellite: 5, Dead: false}, []fsm.Action{fsm.Wait{D: d}}},
			step{fsm.Result{}, []fsm.Action{handOver}})
	}
	steps = append(append(steps, refused...),
		step{fsm.Verdict{Satellite: 5, Dead: false}, []fsm.Action{fsm.Reply{Satellite: 1, Err: errMarker}}})
	run(t, never, t0, steps)
	if v := never.Visits(); v[1].Satellite != 5 || never.Busy() {
		t.Errorf("visits %v, busy %v: want 5 kept and the request answered", v, never.Busy())
	}
}

// The stand-in of a dead next satellite may be the serving one: it keeps the session.
func TestTheServingSatelliteStandsInForTheDeadNextOneBehindIt(t *testing.T) {
	m := newMachine(t, fsm.Config{Visits: []fsm.Visit{{Satellite: 4, StartNs: 0}, {Satellite: 5, StartNs: 10}}})
	run(t, m, t0, []step{
		{fsm.Request{TNs: 12}, []fsm.Action{fsm.CallHandOver{From: 4, To: 5, AtNs: 10, Visit: 1}}},
		{fsm.Result{Err: errDead}, []fsm.Action{fsm.CallTakeOver{Failed: 4, At: 3}}},
		{fsm.Result{Err: errNoFailover}, []fsm.Action{fsm.CheckAlive{Satellite: 5}}},
		{fsm.Verdict{Satellite: 5, Dead: true}, []fsm.Action{fsm.CallHandOver{From: 4, To: 4, AtNs: 10, Visit: 1}}},
	})
}

func TestADeadServingSatelliteIsTakenOverAndTheRequestSentAgain(t *testing.T) {
	m := newMachine(t, fsm.Config{})
	run(t, m, t0, []step{
		{fsm.Request{TNs: 5}, []fsm.Action{fsm.Forward{Satellite: 1}}},
		{fsm.Result{Err: errDead}, []fsm.Action{fsm.CallTakeOver{Failed: 1, At: 0}}},
		{fsm.Result{Err: errDead}, []fsm.Action{fsm.CallTakeOver{Failed: 1, At: 9}}}, // the nearest is down too
		{fsm.Result{}, []fsm.Action{fsm.Forward{Satellite: 9}}},
		{fsm.Result{}, []fsm.Action{fsm.Reply{Satellite: 9}}},
	})
	if !reflect.DeepEqual(m.Left(), []uint32{1}) || m.Epoch() != 1 {
		t.Errorf("left %v, epoch %d; want [1], 1", m.Left(), m.Epoch())
	}
	// The next handover starts from the stand-in.
	run(t, m, t0, []step{{fsm.Request{TNs: 11}, []fsm.Action{fsm.CallHandOver{From: 9, To: 5, AtNs: 10, Visit: 1}}}})
}

func TestAFencedSatelliteNobodyTookOverIsAskedAgainAfterAWait(t *testing.T) {
	m := newMachine(t, fsm.Config{FencedRetry: 250 * time.Millisecond})
	run(t, m, t0, []step{
		{fsm.Request{TNs: 5}, []fsm.Action{fsm.Forward{Satellite: 1}}},
		{fsm.Result{Err: errFenced}, []fsm.Action{fsm.CallTakeOver{Failed: 1, At: 0}}},
		{fsm.Result{Err: errNoFailover}, []fsm.Action{fsm.Wait{D: 250 * time.Millisecond}}},
		{fsm.Result{}, []fsm.Action{fsm.Forward{Satellite: 1}}},
		{fsm.Result{Err: errFenced}, []fsm.Action{fsm.Reply{Satellite: 1, Err: errMarker}}}, // once
	})
}

// A serving satellite that failed the forward as a dead one does, but that
// no satellite behind takes over (theirs hold it alive: it came back at a new
// address), is asked again after doubling waits, a takeover asked before each;
// the request fails only once the waits are spent.
func TestAServingSatelliteNobodyTakesOverIsAskedAgainWithinTheRetries(t *testing.T) {
	m := newMachine(t, fsm.Config{FencedRetry: 100 * time.Millisecond, ForwardRetries: 2})
	// tries: a request at tNs whose forward satellite 1 fails as a dead one
	// does, nobody taking it over, once a wait (doubling from 100 ms), then
	// sent again.
	tries := func(tNs int64, waits int) []step {
		steps := []step{{fsm.Request{TNs: tNs}, []fsm.Action{fsm.Forward{Satellite: 1}}}}
		for w := range waits {
			steps = append(steps,
				step{fsm.Result{Err: errDead}, []fsm.Action{fsm.CallTakeOver{Failed: 1, At: 0}}},
				step{fsm.Result{Err: errNoFailover}, []fsm.Action{fsm.Wait{D: 100 * time.Millisecond << w}}},
				step{fsm.Result{}, []fsm.Action{fsm.Forward{Satellite: 1}}})
		}
		return steps
	}
	run(t, m, t0, append(tries(5, 2), step{fsm.Result{}, []fsm.Action{fsm.Reply{Satellite: 1}}})) // back: answered there
	if m.Epoch() != 0 || len(m.Left()) != 0 {
		t.Errorf("epoch %d, left %v: nothing was taken over", m.Epoch(), m.Left())
	}
	run(t, m, t0, append(tries(6, 2), // the waits spent: the request fails
		step{fsm.Result{Err: errDead}, []fsm.Action{fsm.CallTakeOver{Failed: 1, At: 0}}},
		step{fsm.Result{Err: errNoFailover}, []fsm.Action{fsm.Reply{Satellite: 1, Err: errMarker}}}))
}

// A session rebuilt at a second gateway from its ticket: where it is comes
// from the satellites, newest visit first, its stand-ins deepest first.
func TestASessionRebuiltFromItsTicketIsFoundWhereASatelliteServesIt(t *testing.T) {
	m := newMachine(t, fsm.Config{Unlocated: true, Relocatable: true})
	run(t, m, t0, []step{
		{fsm.Request{TNs: 15}, []fsm.Action{fsm.AskServing{Satellite: 2}}}, // visit 1 (5): 2, 3, 4, then 5
		{fsm.Result{Err: errUnknown}, []fsm.Action{fsm.AskServing{Satellite: 3}}},
		{fsm.Result{Err: errDead}, []fsm.Action{fsm.AskServing{Satellite: 4}}},
		{fsm.Result{}, []fsm.Action{fsm.Forward{Satellite: 4}}},
		{fsm.Result{}, []fsm.Action{fsm.Reply{Satellite: 4}}},
	})
	if !reflect.DeepEqual(m.Left(), []uint32{5}) {
		t.Errorf("left %v, want [5] (visit 1 is served by its stand-in)", m.Left())
	}
	// None serving, one silent: the satellite behind the silent one takes it over.
	r := newMachine(t, fsm.Config{Unlocated: true, Relocatable: true, Visits: []fsm.Visit{{Satellite: 1, StartNs: 0}}})
	run(t, r, t0, []step{
		{fsm.Request{TNs: 3}, []fsm.Action{fsm.AskServing{Satellite: 8}}},
		{fsm.Result{Err: errUnknown}, []fsm.Action{fsm.AskServing{Satellite: 9}}},
		{fsm.Result{Err: errUnknown}, []fsm.Action{fsm.AskServing{Satellite: 0}}},
		{fsm.Result{Err: errUnknown}, []fsm.Action{fsm.AskServing{Satellite: 1}}},
		{fsm.Result{Err: errDead}, []fsm.Action{fsm.CallTakeOver{Failed: 1, At: 0}}},
		{fsm.Result{}, []fsm.Action{fsm.Forward{Satellite: 0}}},
	})
	// Nowhere: the session ended; it stays unlocated.
	u := newMachine(t, fsm.Config{Unlocated: true, Visits: []fsm.Visit{{Satellite: 1, StartNs: 0}}})
	steps := []step{{fsm.Request{TNs: 3}, []fsm.Action{fsm.AskServing{Satellite: 8}}}}
	for _, next := range []uint32{9, 0, 1} {
		steps = append(steps, step{fsm.Result{Err: errUnknown}, []fsm.Action{fsm.AskServing{Satellite: next}}})
	}
	steps = append(steps, step{fsm.Result{Err: errUnknown}, []fsm.Action{fsm.Reply{Satellite: 1, Err: errMarker}}},
		step{fsm.Request{TNs: 3}, []fsm.Action{fsm.AskServing{Satellite: 8}}})
	run(t, u, t0, steps)
}

// A satellite that no longer knows the session (another gateway moved it on)
// or refuses a handover's older table has the session looked up again.
func TestASessionMovedOnByAnotherGatewayIsLookedUpAgain(t *testing.T) {
	m := newMachine(t, fsm.Config{Relocatable: true})
	run(t, m, t0, []step{
		{fsm.Request{TNs: 12}, []fsm.Action{fsm.CallHandOver{From: 1, To: 5, AtNs: 10, Visit: 1}}},
		{fsm.Result{Err: errStaleTable}, []fsm.Action{fsm.AskServing{Satellite: 2}}},
		{fsm.Result{Err: errUnknown}, []fsm.Action{fsm.AskServing{Satellite: 3}}},
		{fsm.Result{Err: errUnknown}, []fsm.Action{fsm.AskServing{Satellite: 4}}},
		{fsm.Result{Err: errUnknown}, []fsm.Action{fsm.AskServing{Satellite: 5}}},
		{fsm.Result{}, []fsm.Action{fsm.Forward{Satellite: 5}}},
		{fsm.Result{Err: errUnknown}, []fsm.Action{fsm.Reply{Satellite: 5, Err: errMarker}}}, // once per request
	})
	// A live session is not relocated.
	l := newMachine(t, fsm.Config{})
	run(t, l, t0, []step{
		{fsm.Request{TNs: 5}, []fsm.Action{fsm.Forward{Satellite: 1}}},
		{fsm.Result{Err: errUnknown}, []fsm.Action{fsm.Reply{Satellite: 1, Err: errMarker}}},
	})
}

func TestAnIdleSessionExpiresAndNothingComesAfter(t *testing.T) {
	m := newMachine(t, fsm.Config{Idle: time.Hour})
	run(t, m, t0.Add(10*time.Minute), []step{
		{fsm.Request{TNs: 5}, []fsm.Action{fsm.Forward{Satellite: 1}}},
		{fsm.Tick{}, nil},
	})
	run(t, m, t0.Add(80*time.Minute), []step{{fsm.Tick{}, nil}}) // busy: a request is in progress
	run(t, m, t0.Add(80*time.Minute), []step{{fsm.Result{}, []fsm.Action{fsm.Reply{Satellite: 1}}}})
	run(t, m, t0.Add(69*time.Minute), []step{{fsm.Tick{}, nil}}) // idle since the request, at 10 min
	run(t, m, t0.Add(70*time.Minute), []step{
		{fsm.Tick{}, []fsm.Action{fsm.Expire{Satellite: 1, AtNs: 0}}},
		{fsm.Request{TNs: 6}, nil},
		{fsm.Tick{}, nil},
		{fsm.Result{}, nil},
	})
	if !m.Ended() {
		t.Error("not ended")
	}
	never := newMachine(t, fsm.Config{})
	run(t, never, t0.Add(1000*time.Hour), []step{{fsm.Tick{}, nil}})
}

func TestProactiveAndPushAheadFollowTheirHandovers(t *testing.T) {
	p := newMachine(t, fsm.Config{Strategy: fsm.Proactive})
	run(t, p, t0, []step{
		{fsm.Request{TNs: 12}, []fsm.Action{fsm.CallHandOver{From: 1, To: 5, AtNs: 10, Visit: 1}}},
		{fsm.Result{}, []fsm.Action{fsm.CallMove{To: 5, AtNs: 10, Visit: 1}}},
		{fsm.Result{Err: errFenced}, []fsm.Action{fsm.CallTakeOver{Failed: 5, At: 4}}},
		{fsm.Result{}, []fsm.Action{fsm.CallMove{To: 4, AtNs: 10, Visit: 1}}},
		{fsm.Result{Err: status.Error(codes.Internal, "x")}, []fsm.Action{fsm.Reply{Satellite: 4, Err: errMarker}}},
		{fsm.Request{TNs: 13}, []fsm.Action{fsm.CallMove{To: 4, AtNs: 10, Visit: 1}}}, // sent again
		{fsm.Result{}, []fsm.Action{fsm.Forward{Satellite: 4}}},
	})
	a := newMachine(t, fsm.Config{Strategy: fsm.PushAhead})
	run(t, a, t0, []step{
		{fsm.Request{TNs: 2, Pages: []uint32{7, 3}}, []fsm.Action{fsm.Forward{Satellite: 1}}},
		{fsm.Result{}, []fsm.Action{fsm.Reply{Satellite: 1}}},
		{fsm.Request{TNs: 12, Pages: []uint32{9}}, []fsm.Action{fsm.CallHandOver{From: 1, To: 5, AtNs: 10, Visit: 1}}},
		{fsm.Result{}, []fsm.Action{fsm.CallPush{To: 5, AtNs: 10, Pages: []uint32{3, 7}}}},
		{fsm.Result{}, []fsm.Action{fsm.Forward{Satellite: 5}}},
	})
}

// A seeded random world: any event, any answer, in any order. Invariants: one
// serving satellite, which every handover starts from and every forward goes
// to; epochs only rise; no action after Expire; every request ends with one
// Reply within a bounded number of steps.
func TestInvariantsHoldUnderRandomEvents(t *testing.T) {
	answers := []error{nil, nil, nil, errDead, errUnknown, errFenced, errNoFailover, errStaleTable,
		status.Error(codes.NotFound, "page"), status.Error(codes.Internal, "x")}
	for seed := uint64(1); seed <= 200; seed++ {
		rng := rand.New(rand.NewPCG(seed, 31))
		var visits []fsm.Visit
		for v, start := 0, int64(0); v < 1+rng.IntN(6); v++ {
			visits = append(visits, fsm.Visit{Satellite: uint32(rng.IntN(30)), StartNs: start})
			start += int64(rng.IntN(3)) * 10 // equal starts too
		}
		strategy := fsm.Strategy(rng.IntN(3))
		m, err := fsm.New(fsm.Config{ID: "r", Visits: visits, Strategy: strategy, Plane: plane, Idle: time.Minute,
			FencedRetry: time.Millisecond, ForwardRetries: rng.IntN(3), HandOverRetries: rng.IntN(3), Unlocated: rng.IntN(2) == 0, Relocatable: rng.IntN(2) == 0, Now: t0})
		if err != nil {
			t.Fatal(err)
		}
		now, tNs := t0, int64(0)
		var last fsm.Action // what the machine waits for
		epoch, steps := m.Epoch(), 0
		for range 400 {
			now = now.Add(time.Duration(rng.IntN(20)) * time.Second)
			var ev fsm.Event
			switch k := rng.IntN(10); {
			case k == 0:
				ev = fsm.Tick{}
			case last == nil || k == 1:
				tNs += int64(rng.IntN(8))
				ev = fsm.Request{TNs: tNs, Pages: []uint32{uint32(rng.IntN(5))}}
			default:
				if c, ok := last.(fsm.CheckAlive); ok && k < 7 {
					ev = fsm.Verdict{Satellite: c.Satellite, Dead: rng.IntN(2) == 0}
				} else {
					ev = fsm.Result{Err: answers[rng.IntN(len(answers))]}
				}
			}
			sat, _ := m.Serving()
			wasEnded, wasBusy := m.Ended(), m.Busy()
			acts := m.Step(now, ev)
			if wasEnded && len(acts) > 0 {
				t.Fatalf("seed %d: actions %v after the session expired", seed, acts)
			}
			if m.Epoch() < epoch {
				t.Fatalf("seed %d: epoch fell from %d to %d", seed, epoch, m.Epoch())
			}
			epoch = m.Epoch()
			now2, _ := m.Serving()
			for _, a := range acts {
				switch a := a.(type) {
				case fsm.CallHandOver:
					if a.From != now2 {
						t.Fatalf("seed %d: handover from %d, but %d serves", seed, a.From, now2)
					}
				case fsm.Forward:
					if a.Satellite != now2 {
						t.Fatalf("seed %d: forward to %d, but %d serves", seed, a.Satellite, now2)
					}
				case fsm.Expire:
					if wasBusy || a.Satellite != sat {
						t.Fatalf("seed %d: expire at %d (busy %v), serving %d", seed, a.Satellite, wasBusy, sat)
					}
				}
			}
			_, isReq := ev.(fsm.Request)
			switch {
			case len(acts) == 0:
			case isReq && wasBusy:
				// Refused: the driver runs a session's requests one at a time.
				if r, ok := acts[0].(fsm.Reply); len(acts) != 1 || !ok || r.Err == nil || !m.Busy() {
					t.Fatalf("seed %d: a request during another got %v", seed, acts)
				}
			case isEnd(acts[len(acts)-1]):
				last, steps = nil, 0
				if m.Busy() {
					t.Fatalf("seed %d: busy after %v", seed, acts)
				}
			default:
				last = acts[len(acts)-1]
				if steps++; steps > 200 {
					t.Fatalf("seed %d: a request without a reply after 200 steps", seed)
				}
			}
			if isReq && !wasBusy && !wasEnded && len(acts) == 0 {
				t.Fatalf("seed %d: a request got no action", seed)
			}
		}
	}
}

func isEnd(a fsm.Action) bool {
	switch a.(type) {
	case fsm.Reply, fsm.Expire:
		return true
	}
	return false
}

// A driver keeps the state between requests: a machine resumed from it goes
// on where the last one stopped, and its visits are the driver's own until a
// stand-in changes them.
func TestAResumedMachineGoesOnFromItsState(t *testing.T) {
	sched := []fsm.Visit{{Satellite: 1, StartNs: 0}, {Satellite: 5, StartNs: 10}, {Satellite: 8, StartNs: 20}}
	served := []fsm.Visit{{Satellite: 1, StartNs: 0}, {Satellite: 4, StartNs: 10}, {Satellite: 8, StartNs: 20}}
	m, err := fsm.Resume(fsm.Config{ID: "s", Visits: sched, Plane: plane},
		fsm.State{Visits: served, Cur: 1, Epoch: 7, Left: []uint32{5}, Used: t0, Located: true})
	if err != nil {
		t.Fatal(err)
	}
	run(t, m, t0, []step{
		{fsm.Request{TNs: 22}, []fsm.Action{fsm.CallHandOver{From: 4, To: 8, AtNs: 20, Visit: 2}}},
		{fsm.Result{TablePages: 2}, []fsm.Action{fsm.Forward{Satellite: 8}}},
		{fsm.Result{}, []fsm.Action{fsm.Reply{Satellite: 8}}},
	})
	if st := m.State(); st.Cur != 2 || st.Epoch != 8 || m.Changed() || &st.Visits[0] != &served[0] {
		t.Errorf("state %+v (changed %v), want visit 2 at epoch 8 on the driver's visits", st, m.Changed())
	}
	if _, err := fsm.Resume(fsm.Config{ID: "s", Visits: sched, Plane: plane}, fsm.State{Visits: served, Cur: 3}); err == nil {
		t.Error("a state at visit 3 of 3 was resumed")
	}
}
