package gateway

import (
	"errors"
	"slices"
	"testing"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/constellation"
	"github.com/satpage/satpage/services/internal/errs"
)

// The order in which a gateway asks where a session it does not know is
// (rebuild): newest visit first, within a visit the stand-ins deepest first,
// each satellite once. Plane of 15: satellite 7's stand-ins are 6, 5, 4.
func TestTheSatellitesAskedForARebuiltSessionNewestFirst(t *testing.T) {
	spec, err := constellation.ParseSpec("walker-star:30/2/1:500:87")
	if err != nil {
		t.Fatal(err)
	}
	visits := []*satpagev1.Visit{{Satellite: 7}, {Satellite: 6, StartNs: 100}, {Satellite: 20, StartNs: 200}}
	sats := func(plan []probe) []uint32 {
		var out []uint32
		for _, p := range plan {
			out = append(out, p.sat)
		}
		return out
	}
	// At visit 1 (satellite 6): 3, 4, 5, 6, then visit 0's 7 (its stand-ins 4-6 asked already).
	plan := locatePlan(spec, visits, 1)
	if got, want := sats(plan), []uint32{3, 4, 5, 6, 7}; !slices.Equal(got, want) {
		t.Fatalf("plan at visit 1 asks %v, want %v", got, want)
	}
	if plan[2] != (probe{visit: 1, sat: 5, standIn: 1}) || plan[4] != (probe{visit: 0, sat: 7}) {
		t.Fatalf("plan %+v", plan)
	}
	// Visit 2 is in the other plane (satellite 20: stand-ins 17, 18, 19).
	if got, want := sats(locatePlan(spec, visits, 2))[:4], []uint32{17, 18, 19, 20}; !slices.Equal(got, want) {
		t.Fatalf("plan at visit 2 starts %v, want %v", got, want)
	}
}

// What the answers mean: the first satellite in the plan that serves the
// session holds it (a stand-in before the scheduled one: a resumed primary
// that was taken over may still believe it serves); more answers are needed
// until one serves or all answered; none serving and some silent: the silent
// ones, in order, for a takeover; none serving and all answering: unknown.
func TestARebuiltSessionIsWhereTheFirstSatelliteAskedServesIt(t *testing.T) {
	plan := []probe{{visit: 1, sat: 5, standIn: 1}, {visit: 1, sat: 6}, {visit: 0, sat: 7}}
	found, at, _, done, err := locate(plan, []answer{notServing, serving})
	if !found || !done || err != nil || at != plan[1] {
		t.Fatalf("serving at the 2nd: found=%v at=%+v done=%v err=%v", found, at, done, err)
	}
	// A stand-in serving is taken over the scheduled satellite that also claims it.
	if found, at, _, _, _ := locate(plan, []answer{serving}); !found || at != plan[0] {
		t.Fatalf("stand-in serving: found=%v at=%+v", found, at)
	}
	if _, _, _, done, _ := locate(plan, []answer{down, notServing}); done {
		t.Fatal("done before every satellite answered and none serves")
	}
	found, _, silent, done, err := locate(plan, []answer{notServing, down, down})
	if found || !done || err != nil || !slices.Equal(silent, plan[1:]) {
		t.Fatalf("none serving, two silent: found=%v silent=%+v done=%v err=%v", found, silent, done, err)
	}
	if _, _, _, done, err := locate(plan, []answer{notServing, notServing, notServing}); !done || !errors.Is(err, errs.ErrUnknownSession) {
		t.Fatalf("nobody holds it: done=%v err=%v, want ErrUnknownSession", done, err)
	}
}
