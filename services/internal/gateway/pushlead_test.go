package gateway_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/clustertest"
	"github.com/satpage/satpage/services/internal/constellation"
	"github.com/satpage/satpage/services/internal/gateway"
	"github.com/satpage/satpage/services/internal/sky"
)

// Push-ahead with a 30 s lead, Oslo, on a fake clock at speed 60: nothing moves
// before T - lead; within the lead the four pages used are copied to the next
// satellite of orbit_model's schedule (the stats name that handover) while
// the old one keeps serving them; one is written then. At the handover the
// three clean copies are claimed (no movement) and the written page moves: 5
// push movements in all, every page at the new satellite with its newest bytes.
func TestPushAheadWithALeadCopiesBeforeTheHandoverAndClaimsTheCleanCopies(t *testing.T) {
	const spec = "walker-star:150/10/1:500:87"
	const lead = int64(30 * time.Second)
	s, _ := constellation.ParseSpec(spec)
	eph, err := sky.ReadEphemeris("../../testdata/live_ephemeris.bin", s)
	if err != nil {
		t.Fatal(err)
	}
	clock, err := sky.NewClock(eph.EpochTime, time.Time{}, 60)
	if err != nil {
		t.Fatal(err)
	}
	wall := &fakeWall{t: eph.EpochTime}
	clock.SetNow(wall.now)
	c := clustertest.New(t, spec, clustertest.Options{Live: &gateway.LiveOptions{Clock: clock, Ephemeris: eph, Spec: s, PushLeadNs: lead}})
	at := func(tNs int64) { // the clock to scenario time tNs (speed 60), and the ticker's round
		wall.t = eph.EpochTime.Add(time.Duration(tNs / 60))
		c.GatewayImpl.LiveTick(context.Background())
	}
	ctx := context.Background()
	want := osloSchedule(t)
	t1, next := want[1][0], uint32(want[1][1])
	open, err := c.Control.OpenLiveSession(ctx, &satpagev1.OpenLiveSessionRequest{LatDeg: 59.9, LonDeg: 10.7,
		Strategy: satpagev1.Strategy_STRATEGY_PUSH_AHEAD})
	if err != nil {
		t.Fatal(err)
	}
	id := open.SessionId
	write := func(page uint32, v byte) {
		t.Helper()
		if _, err := c.Gateway.WritePage(ctx, &satpagev1.WritePageRequest{SessionId: id, Page: page, Data: []byte{byte(page), v}}); err != nil {
			t.Fatal(err)
		}
	}
	stats := func() *satpagev1.SessionStatsResponse {
		t.Helper()
		st, err := c.Control.SessionStats(ctx, &satpagev1.SessionStatsRequest{SessionId: id})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	for p := range uint32(4) {
		write(p, 1)
	}
	at(t1 - lead - int64(time.Second))
	if st := stats(); st.PushMoves != 0 || st.CopiedAheadFor != nil {
		t.Fatalf("before the lead: %d push moves, copy for %v, want none", st.PushMoves, st.CopiedAheadFor)
	}
	at(t1 - lead + int64(5*time.Second))
	st := stats()
	if st.PushMoves != 4 || st.PushHops == 0 || st.CopiedAheadFor.GetSatellite() != next || st.CopiedAheadFor.GetStartNs() != t1 {
		t.Fatalf("within the lead: %d push moves (%d hops), copy for %v, want 4 copied for satellite %d at %d ns",
			st.PushMoves, st.PushHops, st.CopiedAheadFor, next, t1)
	}
	hopsPerPage := st.PushHops / 4
	r, err := c.Gateway.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: id, Page: 0})
	if err != nil || r.Outcome != satpagev1.Outcome_OUTCOME_LOCAL || r.Satellite != open.Satellite {
		t.Fatalf("read within the lead: got %v, %v, want a hit at satellite %d", r, err, open.Satellite)
	}
	write(1, 2) // after the copy: its copy is not claimed
	at(t1 + int64(time.Second))
	st = stats()
	if len(st.Visits) != 2 || st.Visits[1].Satellite != next {
		t.Fatalf("visits %v, want the handover to %d", st.Visits, next)
	}
	if st.PushMoves != 5 || st.PushHops != 5*hopsPerPage || st.OndemandMoves != 0 {
		t.Fatalf("after the handover: %d push moves (%d hops), %d on demand, want 5 (%d hops) and none",
			st.PushMoves, st.PushHops, st.OndemandMoves, 5*hopsPerPage)
	}
	if st.FramesByVisit[0] != 0 || st.FramesByVisit[1] != 4 {
		t.Fatalf("frames by visit %v, want [0 4]: the old satellite released every page", st.FramesByVisit)
	}
	for p := range uint32(4) {
		want := []byte{byte(p), 1}
		if p == 1 {
			want = []byte{1, 2}
		}
		r, err := c.Gateway.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: id, Page: p})
		if err != nil || r.Outcome != satpagev1.Outcome_OUTCOME_LOCAL || !bytes.Equal(r.Data, want) {
			t.Fatalf("page %d after the handover: got %v, %v, want a hit with %v", p, r, err, want)
		}
	}
}
