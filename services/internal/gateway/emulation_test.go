package gateway_test

import (
	"context"
	"math"
	"slices"
	"testing"
	"time"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/clustertest"
	"github.com/satpage/satpage/services/internal/constellation"
	"github.com/satpage/satpage/services/internal/linkemu"
	"github.com/satpage/satpage/services/internal/sky"
)

// emulated is the constellation of the shared vectors with its links emulated
// from their ephemeris (the substrate left at 0: every wait is the whole physics).
func emulated(t *testing.T) (*clustertest.Cluster, *linkemu.Model) {
	t.Helper()
	const spec = "walker-star:150/10/1:500:87"
	s, _ := constellation.ParseSpec(spec)
	links, _, err := linkemu.Open("../../testdata/live_ephemeris.bin", s, linkemu.DefaultCapacityGbps)
	if err != nil {
		t.Fatal(err)
	}
	return clustertest.New(t, spec, clustertest.Options{Links: links}), links
}

// slack is what the machine may add to an emulated round trip here (timer
// lateness, a loaded CI host): the lower bound is exact, the upper one loose.
const slack = 250 * time.Millisecond

func TestARelayedFaultWaitsEveryISLOfItsPathThereAndBack(t *testing.T) {
	c, links := emulated(t)
	ctx := context.Background()
	const tNs = 600 * second // inside the ephemeris' hour, off its knots
	from, to := uint32(0), uint32(33)
	visits := []*satpagev1.Visit{{Satellite: from, StartNs: 0}, {Satellite: to, StartNs: tNs - second}}
	if _, err := c.Control.RegisterSession(ctx, &satpagev1.RegisterSessionRequest{SessionId: "emu", Visits: visits}); err != nil {
		t.Fatal(err)
	}
	// Three pages at satellite 0, so that three faults take the same path: a
	// loaded host delays one now and then, and the bound holds for the fastest.
	pages := []uint32{7, 9, 10}
	for _, page := range pages {
		if _, err := c.Gateway.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: "emu", Page: page, ScenarioTimeNs: second}); err != nil {
			t.Fatal(err)
		}
	}
	// The handover to 33 (its table sent over the ISLs) happens at the next request.
	if _, err := c.Gateway.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: "emu", Page: 8, ScenarioTimeNs: tNs - second/2}); err != nil {
		t.Fatal(err)
	}
	// The page is at satellite 0; at tNs the session is served by 33: the fault
	// travels the routed path 33 -> ... -> 0 and back, each hop at tNs.
	var intended float64
	hops := 0
	for at := to; at != from; hops++ {
		next, err := c.Grid.NextHop(at, from, tNs)
		if err != nil {
			t.Fatal(err)
		}
		there, _ := links.PropagationNs(at, next, tNs)
		back, _ := links.PropagationNs(next, at, tNs)
		intended += there + back
		at = next
	}
	if hops < 3 {
		t.Fatalf("path of %d hops: want a multi-hop fault", hops)
	}
	want := time.Duration(math.Round(intended))
	var took []time.Duration
	for _, page := range pages {
		start := time.Now()
		r, err := c.Gateway.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: "emu", Page: page, ScenarioTimeNs: tNs})
		took = append(took, time.Since(start))
		if err != nil {
			t.Fatal(err)
		}
		if r.Outcome != satpagev1.Outcome_OUTCOME_MOVED || int(r.Hops) != hops {
			t.Fatalf("access of page %d: outcome %v after %d hops, want moved after %d", page, r.Outcome, r.Hops, hops)
		}
		got := took[len(took)-1]
		t.Logf("fault of page %d over %d hops: %v on the wire, %v intended", page, hops, got, want)
		// Early by at most what the timers' smoothed lateness takes off (capped at 2 ms a wait).
		if got < want-2*time.Millisecond {
			t.Errorf("fault of page %d over %d hops took %v, under the %v of distance / c from the ephemeris, there and back", page, hops, got, want)
		}
	}
	if fastest := slices.Min(took); fastest > want+slack {
		t.Errorf("the fastest of %d faults over %d hops took %v, want %v (distance / c from the ephemeris, there and back)", len(pages), hops, fastest, want)
	}
}

func TestASessionsLocalRoundTripIncludesItsGroundLink(t *testing.T) {
	c, links := emulated(t)
	ctx := context.Background()
	const tNs = 900 * second
	oslo, _ := sky.NewPlace(59.9, 10.7)
	const sat = 80 // far from Oslo at that time: a long slant range, so the check is sharp
	up, err := links.GroundNs(oslo.GroundKm(), sat, tNs)
	if err != nil {
		t.Fatal(err)
	}
	visits := []*satpagev1.Visit{{Satellite: sat, StartNs: 0}}
	for _, id := range []string{"placed", "nowhere"} {
		req := &satpagev1.RegisterSessionRequest{SessionId: id, Visits: visits}
		if id == "placed" {
			req.Place = &satpagev1.GroundPlace{LatDeg: 59.9, LonDeg: 10.7}
		}
		if _, err := c.Control.RegisterSession(ctx, req); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Gateway.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: id, Page: 1, ScenarioTimeNs: tNs - second}); err != nil {
			t.Fatal(err)
		}
	}
	roundTrip := func(id string) time.Duration {
		start := time.Now()
		r, err := c.Gateway.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: id, Page: 1, ScenarioTimeNs: tNs})
		if err != nil {
			t.Fatal(err)
		}
		if r.Outcome != satpagev1.Outcome_OUTCOME_LOCAL {
			t.Fatalf("%s: outcome %v, want local", id, r.Outcome)
		}
		return time.Since(start)
	}
	// Up at tNs, down at the reply's time a few ms later: the satellite moves
	// ~7.6 km/s, under 0.03 us of range per ms.
	want := 2 * time.Duration(math.Round(up))
	placed := []time.Duration{roundTrip("placed"), roundTrip("placed"), roundTrip("placed")}
	for _, got := range placed {
		if got < want-time.Microsecond {
			t.Errorf("local access of a session at Oslo via satellite %d: round trip %v, under the %v of slant range / c, up and down", sat, got, want)
		}
	}
	if got := slices.Min(placed); got > want+slack {
		t.Errorf("local access of a session at Oslo via satellite %d: fastest of three round trips %v, want %v (slant range / c, up and down)", sat, got, want)
	}
	// The fastest of three (a loaded machine delays one now and then).
	if got := min(roundTrip("nowhere"), roundTrip("nowhere"), roundTrip("nowhere")); got >= want {
		t.Errorf("a session with no place waited %v, at least the ground link's %v", got, want)
	}
}
