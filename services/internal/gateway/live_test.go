package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/clustertest"
	"github.com/satpage/satpage/services/internal/constellation"
	"github.com/satpage/satpage/services/internal/gateway"
	"github.com/satpage/satpage/services/internal/sky"
)

// fakeWall is a wall clock the test moves by hand.
type fakeWall struct{ t time.Time }

func (w *fakeWall) now() time.Time { return w.t }

// liveCluster is the 150-satellite constellation of the shared vectors with a
// live gateway whose clock runs at speed 60 on a fake wall clock.
func liveCluster(t *testing.T) (*clustertest.Cluster, *gateway.LiveOptions, *fakeWall) {
	t.Helper()
	return liveClusterWith(t, "highest")
}

// liveClusterWith is liveCluster with the ephemeris' handover policy set to policy.
func liveClusterWith(t *testing.T, policy string) (*clustertest.Cluster, *gateway.LiveOptions, *fakeWall) {
	t.Helper()
	const spec = "walker-star:150/10/1:500:87"
	s, _ := constellation.ParseSpec(spec)
	eph, err := sky.ReadEphemeris("../../testdata/live_ephemeris.bin", s)
	if err != nil {
		t.Fatal(err)
	}
	eph.Policy = policy
	clock, err := sky.NewClock(eph.EpochTime, time.Time{}, 60)
	if err != nil {
		t.Fatal(err)
	}
	wall := &fakeWall{t: eph.EpochTime}
	clock.SetNow(wall.now)
	live := &gateway.LiveOptions{Clock: clock, Ephemeris: eph, Spec: s}
	return clustertest.New(t, spec, clustertest.Options{Live: live}), live, wall
}

// osloSchedule is orbit_model's schedule for Oslo (highest, sticky, 10 deg) from the vectors.
func osloSchedule(t *testing.T) [][2]int64 {
	t.Helper()
	return osloScheduleOf(t, "highest")
}

// osloScheduleOf is orbit_model's schedule for Oslo (sticky, 10 deg) under policy.
func osloScheduleOf(t *testing.T, policy string) [][2]int64 {
	raw, err := os.ReadFile("../../testdata/live_vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Cases []struct {
			LatDeg   float64    `json:"lat_deg"`
			Policy   string     `json:"policy"`
			Sticky   bool       `json:"sticky"`
			MinEl    float64    `json:"min_elevation_deg"`
			Schedule [][2]int64 `json:"schedule"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	for _, c := range v.Cases {
		if c.LatDeg == 59.9 && c.Policy == policy && c.Sticky && c.MinEl == 10 {
			return c.Schedule
		}
	}
	t.Fatal("no Oslo case in the vectors")
	return nil
}

func TestALiveSessionIsHandedOverOnTheClockAndKeepsItsPages(t *testing.T) {
	for _, strategy := range []satpagev1.Strategy{satpagev1.Strategy_STRATEGY_ON_DEMAND,
		satpagev1.Strategy_STRATEGY_PROACTIVE, satpagev1.Strategy_STRATEGY_PUSH_AHEAD} {
		t.Run(strategy.String(), func(t *testing.T) {
			c, _, wall := liveCluster(t)
			ctx := context.Background()
			open, err := c.Control.OpenLiveSession(ctx, &satpagev1.OpenLiveSessionRequest{LatDeg: 59.9, LonDeg: 10.7, Strategy: strategy})
			if err != nil {
				t.Fatal(err)
			}
			want := osloSchedule(t)
			if open.Satellite != uint32(want[0][1]) {
				t.Fatalf("serving at open: got %d, want %d", open.Satellite, want[0][1])
			}
			// 50 minutes of constellation time in 10 s wall steps (10 min each at speed 60).
			for step := 0; step < 5; step++ {
				for p := uint32(0); p < 4; p++ {
					page := uint32(step)*4 + p
					if _, err := c.Gateway.WritePage(ctx, &satpagev1.WritePageRequest{SessionId: open.SessionId, Page: page, Data: []byte{byte(page), 7}}); err != nil {
						t.Fatal(err)
					}
				}
				if _, err := c.Gateway.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: open.SessionId, Page: 0}); err != nil {
					t.Fatal(err)
				}
				wall.t = wall.t.Add(10 * time.Second)
				c.GatewayImpl.LiveTick(ctx)
			}
			for page := uint32(0); page < 20; page++ {
				r, err := c.Gateway.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: open.SessionId, Page: page})
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(r.Data, []byte{byte(page), 7}) {
					t.Fatalf("page %d: got %v", page, r.Data)
				}
				if r.ScenarioTimeNs != int64(50*time.Minute) {
					t.Fatalf("page %d read at %d ns, want the clock's %d", page, r.ScenarioTimeNs, int64(50*time.Minute))
				}
			}
			st, err := c.Control.SessionStats(ctx, &satpagev1.SessionStatsRequest{SessionId: open.SessionId})
			if err != nil {
				t.Fatal(err)
			}
			checkVisitsUpTo50Min(t, st.Visits, want)
			switch strategy {
			case satpagev1.Strategy_STRATEGY_PROACTIVE:
				if st.ProactiveMoves == 0 || st.PushMoves != 0 {
					t.Fatalf("proactive: %d proactive and %d pushed moves", st.ProactiveMoves, st.PushMoves)
				}
			case satpagev1.Strategy_STRATEGY_PUSH_AHEAD:
				if st.PushMoves == 0 || st.ProactiveMoves != 0 {
					t.Fatalf("push-ahead: %d proactive and %d pushed moves", st.ProactiveMoves, st.PushMoves)
				}
			default:
				if st.OndemandMoves == 0 || st.ProactiveMoves+st.PushMoves != 0 {
					t.Fatalf("on-demand: %+v", st)
				}
			}
		})
	}
}

func TestAnotherGatewayRebuildsALiveSessionFromItsID(t *testing.T) {
	c, live, wall := liveCluster(t)
	ctx := context.Background()
	open, err := c.Control.OpenLiveSession(ctx, &satpagev1.OpenLiveSessionRequest{LatDeg: -6.2, LonDeg: 106.8})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Gateway.WritePage(ctx, &satpagev1.WritePageRequest{SessionId: open.SessionId, Page: 3, Data: []byte("kept")}); err != nil {
		t.Fatal(err)
	}
	wall.t = wall.t.Add(15 * time.Second) // 15 minutes: handovers the first gateway performs
	c.GatewayImpl.LiveTick(ctx)
	before, err := c.Control.SessionStats(ctx, &satpagev1.SessionStatsRequest{SessionId: open.SessionId})
	if err != nil {
		t.Fatal(err)
	}
	wall.t = wall.t.Add(5 * time.Second) // and more, which the replica must perform
	_, conn := c.AddGateway(t, "replica", live)
	replica := satpagev1.NewPageServiceClient(conn)
	r, err := replica.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: open.SessionId, Page: 3})
	if err != nil {
		t.Fatal(err)
	}
	if string(r.Data) != "kept" {
		t.Fatalf("page 3 through the replica: got %q", r.Data)
	}
	st, err := satpagev1.NewGatewayServiceClient(conn).SessionStats(ctx, &satpagev1.SessionStatsRequest{SessionId: open.SessionId})
	if err != nil {
		t.Fatal(err)
	}
	if len(before.Visits) < 2 || st.Visits[0].Satellite != before.Visits[len(before.Visits)-1].Satellite {
		t.Fatalf("the replica picked the session up at %v, the first gateway left it at %v", st.Visits, before.Visits)
	}
	if r.Satellite != st.Visits[len(st.Visits)-1].Satellite {
		t.Fatalf("read served by %d, the replica's serving satellite is %d", r.Satellite, st.Visits[len(st.Visits)-1].Satellite)
	}
}

// truncated is the shared test ephemeris cut to its first knots (a shorter horizon).
func truncated(t *testing.T, knots int) []byte {
	raw, err := os.ReadFile("../../testdata/live_ephemeris.bin")
	if err != nil {
		t.Fatal(err)
	}
	nl := bytes.IndexByte(raw, '\n')
	var h map[string]any
	if err := json.Unmarshal(raw[:nl], &h); err != nil {
		t.Fatal(err)
	}
	sats := int(h["satellites"].(float64))
	h["knots"] = knots
	head, _ := json.Marshal(h)
	return append(append(head, '\n'), raw[nl+1:nl+1+knots*sats*12]...)
}

func TestPastTheHorizonIsUnavailableUntilTheRefreshedEphemerisIsRead(t *testing.T) {
	const spec = "walker-star:150/10/1:500:87"
	s, _ := constellation.ParseSpec(spec)
	path := filepath.Join(t.TempDir(), "ephemeris.bin")
	if err := os.WriteFile(path, truncated(t, 21), 0o644); err != nil { // 20 minutes
		t.Fatal(err)
	}
	eph, err := sky.ReadEphemeris(path, s)
	if err != nil {
		t.Fatal(err)
	}
	clock, err := sky.NewClock(eph.EpochTime, time.Time{}, 60)
	if err != nil {
		t.Fatal(err)
	}
	wall := &fakeWall{t: eph.EpochTime}
	clock.SetNow(wall.now)
	c := clustertest.New(t, spec, clustertest.Options{Live: &gateway.LiveOptions{Clock: clock, Ephemeris: eph, EphemerisPath: path, Spec: s}})
	ctx := context.Background()
	open, err := c.Control.OpenLiveSession(ctx, &satpagev1.OpenLiveSessionRequest{LatDeg: 59.9, LonDeg: 10.7})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Gateway.WritePage(ctx, &satpagev1.WritePageRequest{SessionId: open.SessionId, Page: 1, Data: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	wall.t = wall.t.Add(25 * time.Second) // 25 constellation minutes: past the horizon
	_, err = c.Gateway.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: open.SessionId, Page: 1})
	if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "horizon") {
		t.Fatalf("past the horizon: got %v, want Unavailable naming the horizon", err)
	}
	// the refresh: the same epoch and knots, a longer horizon, written by rename
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, truncated(t, 61), 0o644); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Second)
	_ = os.Chtimes(tmp, later, later)
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	if ok, err := c.GatewayImpl.ReloadEphemeris(ctx); !ok || err != nil {
		t.Fatalf("reload: got %v, %v", ok, err)
	}
	r, err := c.Gateway.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: open.SessionId, Page: 1})
	if err != nil || string(r.Data) != "x" {
		t.Fatalf("after the refresh: got %v, %v", r, err)
	}
	// a file for another epoch is refused and the loaded one kept
	other := truncated(t, 61)
	other = bytes.Replace(other, []byte(eph.Epoch), []byte("2027-01-01T00:00:00.000000Z"), 1)
	later = later.Add(time.Second)
	if err := os.WriteFile(tmp, other, 0o644); err != nil {
		t.Fatal(err)
	}
	_ = os.Chtimes(tmp, later, later)
	_ = os.Rename(tmp, path)
	if ok, err := c.GatewayImpl.ReloadEphemeris(ctx); ok || err == nil || !strings.Contains(err.Error(), "epoch") {
		t.Fatalf("a file for another epoch: got %v, %v, want it refused naming the epoch", ok, err)
	}
	if _, err := c.Gateway.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: open.SessionId, Page: 1}); err != nil {
		t.Fatal(err)
	}
}

// RunLive's ticker hands sessions over while their requests run (go test -race).
func TestTheTickerHandsOverWhileRequestsRun(t *testing.T) {
	const spec = "walker-star:150/10/1:500:87"
	s, _ := constellation.ParseSpec(spec)
	eph, err := sky.ReadEphemeris("../../testdata/live_ephemeris.bin", s)
	if err != nil {
		t.Fatal(err)
	}
	clock, err := sky.NewClock(eph.EpochTime, time.Time{}, 600) // 10 constellation minutes a second
	if err != nil {
		t.Fatal(err)
	}
	// The constellation clock starts at the epoch once the cluster is up: 150
	// satellites take seconds to start under -race, which ate the test's window.
	var beganNs atomic.Int64
	beganNs.Store(time.Now().UnixNano())
	clock.SetNow(func() time.Time { return eph.EpochTime.Add(time.Duration(time.Now().UnixNano() - beganNs.Load())) })
	c := clustertest.New(t, spec, clustertest.Options{Live: &gateway.LiveOptions{Clock: clock, Ephemeris: eph, Spec: s}})
	began := time.Now()
	beganNs.Store(began.UnixNano())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go c.GatewayImpl.RunLive(ctx)
	var wg sync.WaitGroup
	errc := make(chan error, 2)
	for k, place := range [][2]float64{{59.9, 10.7}, {-6.2, 106.8}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			open, err := c.Control.OpenLiveSession(ctx, &satpagev1.OpenLiveSessionRequest{LatDeg: place[0], LonDeg: place[1],
				Strategy: satpagev1.Strategy(1 + k)})
			if err != nil {
				errc <- err
				return
			}
			for i := 0; time.Since(began) < 2500*time.Millisecond; i++ {
				page := uint32(i % 8)
				if _, err := c.Gateway.WritePage(ctx, &satpagev1.WritePageRequest{SessionId: open.SessionId, Page: page, Data: []byte{byte(i)}}); err != nil {
					errc <- err
					return
				}
				time.Sleep(5 * time.Millisecond)
			}
			st, err := c.Control.SessionStats(ctx, &satpagev1.SessionStatsRequest{SessionId: open.SessionId})
			if err != nil {
				errc <- err
				return
			}
			if len(st.Visits) < 2 {
				errc <- fmt.Errorf("%v: %d visits in 25 constellation minutes", place, len(st.Visits))
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
}

// Under "longest" the gateway hands a session over as orbit_model's longest-pass
// schedule does (the vectors differ from highest's for Oslo).
func TestALiveSessionFollowsTheLongestPolicy(t *testing.T) {
	c, _, wall := liveClusterWith(t, "longest")
	ctx := context.Background()
	want := osloScheduleOf(t, "longest")
	open, err := c.Control.OpenLiveSession(ctx, &satpagev1.OpenLiveSessionRequest{LatDeg: 59.9, LonDeg: 10.7})
	if err != nil {
		t.Fatal(err)
	}
	if open.Satellite != uint32(want[0][1]) {
		t.Fatalf("serving at open: got %d, want %d", open.Satellite, want[0][1])
	}
	for step := 0; step < 5; step++ {
		if _, err := c.Gateway.WritePage(ctx, &satpagev1.WritePageRequest{SessionId: open.SessionId, Page: uint32(step), Data: []byte{byte(step)}}); err != nil {
			t.Fatal(err)
		}
		wall.t = wall.t.Add(10 * time.Second)
		c.GatewayImpl.LiveTick(ctx)
	}
	st, err := c.Control.SessionStats(ctx, &satpagev1.SessionStatsRequest{SessionId: open.SessionId})
	if err != nil {
		t.Fatal(err)
	}
	checkVisitsUpTo50Min(t, st.Visits, want)
	for page := uint32(0); page < 5; page++ {
		r, err := c.Gateway.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: open.SessionId, Page: page})
		if err != nil || !bytes.Equal(r.Data, []byte{byte(page)}) {
			t.Fatalf("page %d: %v %v", page, r, err)
		}
	}
}

// checkVisitsUpTo50Min: the session's visits are want's handovers (time_ns,
// satellite) up to 50 constellation minutes, at least three of them.
func checkVisitsUpTo50Min(t *testing.T, got []*satpagev1.Visit, want [][2]int64) {
	t.Helper()
	var wantVisits [][2]int64
	for _, h := range want {
		if h[0] <= int64(50*time.Minute) {
			wantVisits = append(wantVisits, h)
		}
	}
	if len(got) != len(wantVisits) || len(got) < 3 {
		t.Fatalf("visits: got %v, want %v", got, wantVisits)
	}
	for i, v := range got {
		if v.Satellite != uint32(wantVisits[i][1]) || v.StartNs != wantVisits[i][0] {
			t.Fatalf("visit %d: got %d from %d ns, want %d from %d ns", i, v.Satellite, v.StartNs, wantVisits[i][1], wantVisits[i][0])
		}
	}
}
