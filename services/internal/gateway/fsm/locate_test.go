package fsm_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/satpage/satpage/services/internal/constellation"
	"github.com/satpage/satpage/services/internal/errs"
	"github.com/satpage/satpage/services/internal/gateway/fsm"
)

// The order in which a gateway asks where a session it does not know is
// (rebuild): newest visit first, within a visit the stand-ins deepest first,
// each satellite once. Plane of 15: satellite 7's stand-ins are 6, 5, 4.
func TestTheSatellitesAskedForARebuiltSessionNewestFirst(t *testing.T) {
	spec, err := constellation.ParseSpec("walker-star:30/2/1:500:87")
	if err != nil {
		t.Fatal(err)
	}
	visits := []fsm.Visit{{Satellite: 7}, {Satellite: 6, StartNs: 100}, {Satellite: 20, StartNs: 200}}
	sats := func(plan []fsm.Probe) []uint32 {
		var out []uint32
		for _, p := range plan {
			out = append(out, p.Sat)
		}
		return out
	}
	// At visit 1 (satellite 6): 3, 4, 5, 6, then visit 0's 7 (its stand-ins 4-6 asked already).
	plane := fsm.PlaneOf(spec, 3)
	plan := fsm.Plan(plane, visits, 1)
	if got, want := sats(plan), []uint32{3, 4, 5, 6, 7}; !slices.Equal(got, want) {
		t.Fatalf("plan at visit 1 asks %v, want %v", got, want)
	}
	if plan[2] != (fsm.Probe{Visit: 1, Sat: 5, StandIn: 1}) || plan[4] != (fsm.Probe{Visit: 0, Sat: 7}) {
		t.Fatalf("plan %+v", plan)
	}
	// Visit 2 is in the other plane (satellite 20: stand-ins 17, 18, 19).
	if got, want := sats(fsm.Plan(plane, visits, 2))[:4], []uint32{17, 18, 19, 20}; !slices.Equal(got, want) {
		t.Fatalf("plan at visit 2 starts %v, want %v", got, want)
	}
}

// What the answers mean: the first satellite in the plan that serves the
// session holds it (a stand-in before the scheduled one: a resumed primary
// that was taken over may still believe it serves); more answers are needed
// until one serves or all answered; none serving and some silent: the silent
// ones, in order, for a takeover; none serving and all answering: unknown.
func TestARebuiltSessionIsWhereTheFirstSatelliteAskedServesIt(t *testing.T) {
	plan := []fsm.Probe{{Visit: 1, Sat: 5, StandIn: 1}, {Visit: 1, Sat: 6}, {Visit: 0, Sat: 7}}
	found, at, _, done, err := fsm.Locate(plan, []fsm.Answer{fsm.NotServing, fsm.Serving})
	if !found || !done || err != nil || at != plan[1] {
		t.Fatalf("serving at the 2nd: found=%v at=%+v done=%v err=%v", found, at, done, err)
	}
	// A stand-in serving is taken over the scheduled satellite that also claims it.
	if found, at, _, _, _ := fsm.Locate(plan, []fsm.Answer{fsm.Serving}); !found || at != plan[0] {
		t.Fatalf("stand-in serving: found=%v at=%+v", found, at)
	}
	if _, _, _, done, _ := fsm.Locate(plan, []fsm.Answer{fsm.Down, fsm.NotServing}); done {
		t.Fatal("done before every satellite answered and none serves")
	}
	found, _, silent, done, err := fsm.Locate(plan, []fsm.Answer{fsm.NotServing, fsm.Down, fsm.Down})
	if found || !done || err != nil || !slices.Equal(silent, plan[1:]) {
		t.Fatalf("none serving, two silent: found=%v silent=%+v done=%v err=%v", found, silent, done, err)
	}
	if _, _, _, done, err := fsm.Locate(plan, []fsm.Answer{fsm.NotServing, fsm.NotServing, fsm.NotServing}); !done || !errors.Is(err, errs.ErrUnknownSession) {
		t.Fatalf("nobody holds it: done=%v err=%v, want ErrUnknownSession", done, err)
	}
}
