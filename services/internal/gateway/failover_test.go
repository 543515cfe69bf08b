package gateway_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/clustertest"
	"github.com/satpage/satpage/services/internal/errs"
)

const failSpec = "walker-star:30/2/1:500:87" // 2 planes of 15: satellite p*15 + k

func register(t *testing.T, c *clustertest.Cluster, id string, visits ...*satpagev1.Visit) {
	t.Helper()
	if _, err := c.Control.RegisterSession(context.Background(), &satpagev1.RegisterSessionRequest{SessionId: id, Visits: visits}); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, c *clustertest.Cluster, id string, page uint32, tNs int64, data, rid string) *satpagev1.WritePageResponse {
	t.Helper()
	r, err := c.Gateway.WritePage(context.Background(), &satpagev1.WritePageRequest{SessionId: id, Page: page,
		Data: []byte(data), ScenarioTimeNs: tNs, RequestId: rid})
	if err != nil {
		t.Fatalf("write page %d at %d ns: %v", page, tNs, err)
	}
	return r
}

func readBack(t *testing.T, c *clustertest.Cluster, id string, tNs int64, want map[uint32]string) {
	t.Helper()
	for p, v := range want {
		r, err := c.Gateway.ReadPage(context.Background(), &satpagev1.ReadPageRequest{SessionId: id, Page: p, ScenarioTimeNs: tNs})
		if err != nil || string(r.Data) != v {
			t.Fatalf("page %d at %d ns: got %q, %v, want %q", p, tNs, r.GetData(), err, v)
		}
	}
}

// A write in flight when the serving satellite dies (stored and copied, its
// reply lost with the satellite) succeeds: the satellite behind takes the
// session over and answers the retry with the first answer, once; the
// session goes on through its handovers and every page reads back.
func TestARequestInFlightWhenTheServingSatelliteDiesSucceedsAtItsReplica(t *testing.T) {
	var c *clustertest.Cluster
	var dying atomic.Bool
	c = clustertest.New(t, failSpec, clustertest.Options{Replicas: 2, Interceptor: func(i int) grpc.UnaryServerInterceptor {
		if i != 7 {
			return nil
		}
		return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			resp, err := h(ctx, req)
			if strings.HasSuffix(info.FullMethod, "/WritePage") && dying.Load() {
				c.Kill(7) // before the reply: a takeover must find it dead
				return nil, status.Error(codes.Unavailable, "connection reset (the satellite died)")
			}
			return resp, err
		}
	}})
	register(t, c, "s", &satpagev1.Visit{Satellite: 7, StartNs: 0}, &satpagev1.Visit{Satellite: 6, StartNs: 100},
		&satpagev1.Visit{Satellite: 20, StartNs: 200})
	want := map[uint32]string{}
	for p := range uint32(8) {
		want[p] = fmt.Sprintf("v1-%d", p)
		write(t, c, "s", p, 10, want[p], "")
	}
	dying.Store(true)
	start := time.Now()
	r := write(t, c, "s", 3, 20, "v2-3", "w-last")
	want[3] = "v2-3"
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the write that outlived its satellite took %v", took)
	}
	if r.Outcome != satpagev1.Outcome_OUTCOME_LOCAL || r.Satellite != 7 {
		t.Errorf("answer: got %v, want the first attempt's (local at 7)", r)
	}
	if got := testutil.ToFloat64(c.Metrics[6].Accesses.WithLabelValues("deduplicated")); got != 1 {
		t.Errorf("retries answered from the kept answer at 6: %v, want 1", got)
	}
	readBack(t, c, "s", 30, want)
	// A dead serving satellite found by SessionStats is taken over too.
	register(t, c, "q", &satpagev1.Visit{Satellite: 10, StartNs: 0})
	write(t, c, "q", 0, 10, "q0", "")
	c.Kill(10)
	if st, err := c.Control.SessionStats(context.Background(), &satpagev1.SessionStatsRequest{SessionId: "q", ScenarioTimeNs: 20}); err != nil ||
		st.Visits[0].Satellite != 9 || st.TablePages[len(st.TablePages)-1] != 1 {
		t.Errorf("SessionStats with the serving satellite dead: got %v, %v, want it served by 9 with its 1 page", st, err)
	}
	readBack(t, c, "s", 150, want) // visit 1: scheduled at 6, which serves it already
	readBack(t, c, "s", 250, want) // visit 2: a handover from 6 to 20
	st, err := c.Control.SessionStats(context.Background(), &satpagev1.SessionStatsRequest{SessionId: "s", ScenarioTimeNs: 250})
	if err != nil {
		t.Fatal(err)
	}
	if st.Accesses != 8+1+3*8 || st.Created != 8 || st.OndemandMoves != 8 {
		t.Errorf("counts: %d accesses, %d created, %d moved; want 33, 8, 8 (each page moved once, to 20)", st.Accesses, st.Created, st.OndemandMoves)
	}
	if st.Visits[0].Satellite != 6 {
		t.Errorf("visit 0 served by %d, want 6 (the stand-in)", st.Visits[0].Satellite)
	}
	// The dead satellite comes back (from its copy, without the session) and
	// the session ends cleanly everywhere.
	c.Restart(t, 7)
	if _, err := c.Gateway.EndSession(context.Background(), &satpagev1.EndSessionRequest{SessionId: "s", ScenarioTimeNs: 260}); err != nil {
		t.Fatal(err)
	}
	for _, i := range []uint32{6, 7, 20} {
		if n, _ := c.Stores[i].CountFrames(context.Background(), "s"); n != 0 {
			t.Errorf("frames of the ended session at %d: %d, want 0", i, n)
		}
		if _, err := c.Stores[i].TableSize(context.Background(), "s"); err == nil {
			t.Errorf("a page table of the ended session is left at %d", i)
		}
	}
}

// A handover to a dead satellite goes to the live one behind it, and the
// session loses nothing.
func TestAHandoverToADeadSatelliteGoesToTheOneBehindIt(t *testing.T) {
	c := clustertest.New(t, failSpec, clustertest.Options{Replicas: 2})
	register(t, c, "s", &satpagev1.Visit{Satellite: 0, StartNs: 0}, &satpagev1.Visit{Satellite: 3, StartNs: 100})
	want := map[uint32]string{0: "a", 1: "b"}
	for p, v := range want {
		write(t, c, "s", p, 10, v, "")
	}
	c.Kill(3)
	readBack(t, c, "s", 150, want)
	st, err := c.Control.SessionStats(context.Background(), &satpagev1.SessionStatsRequest{SessionId: "s", ScenarioTimeNs: 150})
	if err != nil {
		t.Fatal(err)
	}
	if st.Visits[1].Satellite != 2 {
		t.Errorf("visit 1 served by %d, want 2 (the satellite behind the dead 3)", st.Visits[1].Satellite)
	}
}

// With R = 1 there is no copy to take over from: the request fails at once
// with Unavailable, as without failover, and nothing is served stale.
func TestWithOneReplicaADeadServingSatelliteFailsItsRequests(t *testing.T) {
	c := clustertest.New(t, failSpec, clustertest.Options{Replicas: 1})
	register(t, c, "s", &satpagev1.Visit{Satellite: 7, StartNs: 0})
	write(t, c, "s", 0, 10, "a", "")
	c.Kill(7)
	start := time.Now()
	_, err := c.Gateway.ReadPage(context.Background(), &satpagev1.ReadPageRequest{SessionId: "s", Page: 0, ScenarioTimeNs: 20})
	if status.Code(err) != codes.Unavailable || time.Since(start) > 5*time.Second {
		t.Fatalf("read with the only copy dead: got %v after %v, want Unavailable at once", err, time.Since(start))
	}
}

// A session registered while its first satellite is dead opens at the live
// satellite behind it, which serves the first visit; the handover after it
// goes on as scheduled and every page reads back.
func TestASessionWhoseFirstSatelliteIsDeadOpensBehindIt(t *testing.T) {
	c := clustertest.New(t, failSpec, clustertest.Options{Replicas: 2})
	c.Kill(3)
	register(t, c, "s", &satpagev1.Visit{Satellite: 3, StartNs: 0}, &satpagev1.Visit{Satellite: 5, StartNs: 100})
	want := map[uint32]string{0: "a", 1: "b"}
	for p, v := range want {
		write(t, c, "s", p, 10, v, "")
	}
	st, err := c.Control.SessionStats(context.Background(), &satpagev1.SessionStatsRequest{SessionId: "s", ScenarioTimeNs: 10})
	if err != nil {
		t.Fatal(err)
	}
	if st.Visits[0].Satellite != 2 {
		t.Errorf("visit 0 served by %d, want 2 (the satellite behind the dead 3)", st.Visits[0].Satellite)
	}
	readBack(t, c, "s", 150, want)
	if st, err = c.Control.SessionStats(context.Background(), &satpagev1.SessionStatsRequest{SessionId: "s", ScenarioTimeNs: 150}); err != nil {
		t.Fatal(err)
	}
	if st.Visits[1].Satellite != 5 {
		t.Errorf("visit 1 served by %d, want 5 as scheduled", st.Visits[1].Satellite)
	}
}

// A serving satellite that died silently (dials to it time out, as a dead
// task's name in Docker Swarm) is taken over too, once the detector's misses
// make it dead: the read waits for that instead of failing.
func TestASessionWhoseServingSatelliteDiedSilentlyIsTakenOver(t *testing.T) {
	c := clustertest.New(t, failSpec, clustertest.Options{Replicas: 2})
	register(t, c, "s", &satpagev1.Visit{Satellite: 7, StartNs: 0})
	want := map[uint32]string{0: "a", 1: "b"}
	for p, v := range want {
		write(t, c, "s", p, 10, v, "")
	}
	c.Silence(7)
	start := time.Now()
	readBack(t, c, "s", 20, want)
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("reads after the silent death took %v", took)
	}
	st, err := c.Control.SessionStats(context.Background(), &satpagev1.SessionStatsRequest{SessionId: "s", ScenarioTimeNs: 20})
	if err != nil {
		t.Fatal(err)
	}
	if st.Visits[0].Satellite != 6 {
		t.Errorf("visit 0 served by %d, want 6 (the satellite behind the dead 7)", st.Visits[0].Satellite)
	}
}

// SessionStats with a past satellite of the trail dead (killed, or silent as a
// dead Swarm task's name) counts the frames it held in its copy, behind it in
// its plane: the same counts as before it died, instead of Unavailable.
func TestSessionStatsCountsADeadPastSatellitesFramesInItsCopy(t *testing.T) {
	for _, how := range []string{"killed", "silent"} {
		t.Run(how, func(t *testing.T) {
			c := clustertest.New(t, failSpec, clustertest.Options{Replicas: 2})
			register(t, c, "s", &satpagev1.Visit{Satellite: 7, StartNs: 0}, &satpagev1.Visit{Satellite: 20, StartNs: 100})
			want := map[uint32]string{}
			for p := range uint32(5) {
				want[p] = fmt.Sprintf("v%d", p)
				write(t, c, "s", p, 10, want[p], "")
			}
			readBack(t, c, "s", 150, map[uint32]string{0: want[0], 1: want[1]}) // moved to 20 on demand
			stats := func() (*satpagev1.SessionStatsResponse, error) {
				return c.Control.SessionStats(context.Background(), &satpagev1.SessionStatsRequest{SessionId: "s", ScenarioTimeNs: 150})
			}
			before, err := stats()
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(before.FramesByVisit) != "[3 2]" {
				t.Fatalf("frames by visit with every satellite up: %v, want [3 2]", before.FramesByVisit)
			}
			if how == "killed" {
				c.Kill(7)
			} else {
				c.Silence(7)
			}
			after, err := stats()
			if err != nil {
				t.Fatalf("SessionStats with past satellite 7 %s: %v", how, err)
			}
			if fmt.Sprint(after.FramesByVisit) != fmt.Sprint(before.FramesByVisit) {
				t.Errorf("frames by visit with 7 %s: %v, want %v (its copy at 6)", how, after.FramesByVisit, before.FramesByVisit)
			}
			readBack(t, c, "s", 160, want) // the rest still comes from 7's copy
		})
	}
}

// A satellite whose replica died silently (the Swarm kill step: the replica's
// name stops resolving) goes on storing changes: the first change waits for
// the detector to find the replica dead, and the next satellite behind takes
// its place, instead of every change failing with Unavailable meanwhile.
func TestChangesGoOnWhenTheReplicaDiesSilently(t *testing.T) {
	c := clustertest.New(t, failSpec, clustertest.Options{Replicas: 2})
	register(t, c, "a", &satpagev1.Visit{Satellite: 8, StartNs: 0})
	write(t, c, "a", 0, 10, "a0", "")
	c.Silence(7) // 8's replica
	start := time.Now()
	register(t, c, "b", &satpagev1.Visit{Satellite: 8, StartNs: 0}) // opens at 8: a replicated change
	write(t, c, "b", 0, 10, "b0", "")
	write(t, c, "a", 1, 20, "a1", "")
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("changes at 8 after its replica 7 died silently took %v", took)
	}
	readBack(t, c, "a", 30, map[uint32]string{0: "a0", 1: "a1"})
	readBack(t, c, "b", 30, map[uint32]string{0: "b0"})
}

// A satellite that came back a moment ago (a new pod) answers the gateway while
// a relay still has it marked dead: a request for it reaching that relay is not
// refused with "no ISL route" (seen in make e2e-k8s); the relay probes it again
// and forwards it. Both a handover (AcceptTable) and a page fault (FetchPages).
func TestARelayWithAStaleDeadMarkProbesTheDestinationAgain(t *testing.T) {
	c := clustertest.New(t, failSpec, clustertest.Options{})
	register(t, c, "s", &satpagev1.Visit{Satellite: 0, StartNs: 0}, &satpagev1.Visit{Satellite: 2, StartNs: 100},
		&satpagev1.Visit{Satellite: 0, StartNs: 200})
	write(t, c, "s", 0, 10, "a", "")
	c.Nodes[1].Faults().MarkDead(2) // 0 -> 1 -> 2: the relay's view is stale
	start := time.Now()
	readBack(t, c, "s", 150, map[uint32]string{0: "a"}) // the handover to 2, relayed by 1
	write(t, c, "s", 1, 160, "b", "")                   // page 1 owned by 2
	c.Nodes[1].Faults().MarkDead(2)
	readBack(t, c, "s", 250, map[uint32]string{0: "a", 1: "b"}) // back at 0: page 1 fetched from 2 via 1
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the requests through the stale relay took %v", took)
	}
	st, err := c.Control.SessionStats(context.Background(), &satpagev1.SessionStatsRequest{SessionId: "s", ScenarioTimeNs: 250})
	if err != nil {
		t.Fatal(err)
	}
	if st.Visits[1].Satellite != 2 || st.OndemandMoves != 3 {
		t.Errorf("visit 1 served by %d, %d on-demand moves; want 2 (no stand-in for a live satellite) and 3 (page 0 to 2 and back, page 1 to 0)",
			st.Visits[1].Satellite, st.OndemandMoves)
	}
}

// Fencing (docs/faults.md): a serving satellite paused through its own
// takeover (it only looked dead) holds a write it received before the pause.
// When it resumes it must not acknowledge that write: the new server may
// already have acknowledged a later one, and the stale write would be lost
// or read back out of order. The takeover fenced the copies of its state, so
// its replica refuses the change (STALE_EPOCH); the satellite then restores
// from its copies, without the session, and the new server's value stands.
func TestAPrimaryPausedThroughItsTakeoverCannotAcknowledgeAWrite(t *testing.T) {
	var c *clustertest.Cluster
	paused, resume := make(chan struct{}), make(chan struct{})
	c = clustertest.New(t, failSpec, clustertest.Options{Replicas: 2, Interceptor: func(i int) grpc.UnaryServerInterceptor {
		if i != 7 {
			return nil
		}
		return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if w, ok := req.(*satpagev1.WritePageRequest); ok && w.RequestId == "stale" {
				close(paused)
				<-resume // SIGSTOP: the request sits in the paused process
			}
			return h(ctx, req)
		}
	}})
	register(t, c, "s", &satpagev1.Visit{Satellite: 7, StartNs: 0})
	write(t, c, "s", 1, 10, "v1", "")
	sat7, _ := c.Satellite(t, 7)
	staleErr := make(chan error, 1)
	go func() {
		_, err := sat7.WritePage(context.Background(), &satpagev1.WritePageRequest{SessionId: "s", Page: 1,
			Data: []byte("stale"), ScenarioTimeNs: 20, RequestId: "stale"})
		staleErr <- err
	}()
	<-paused
	c.Freeze(7, true)
	r := write(t, c, "s", 1, 30, "new", "new")
	if r.Satellite != 6 {
		t.Fatalf("the write during the pause was served by %d, want 6 (the stand-in that took the session over)", r.Satellite)
	}
	close(resume)
	c.Freeze(7, false)
	select {
	case err := <-staleErr:
		if err == nil {
			t.Fatal("the paused satellite acknowledged a write after its session was taken over")
		}
		if !errs.Has(err, errs.ErrStaleEpoch) {
			t.Errorf("the stale write failed with %v, want reason %s", err, errs.ReasonStaleEpoch)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the paused satellite's write hangs after it resumed")
	}
	readBack(t, c, "s", 40, map[uint32]string{1: "new"})
	// Restored from its copies, the satellite no longer holds the session.
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := sat7.WritePage(context.Background(), &satpagev1.WritePageRequest{SessionId: "s", Page: 1,
			Data: []byte("late"), ScenarioTimeNs: 50, RequestId: "late"})
		if errs.Has(err, errs.ErrUnknownSession) {
			break
		}
		if err == nil || time.Now().After(deadline) {
			t.Fatalf("a write sent to the fenced satellite after it resumed: got %v, want %s", err, errs.ReasonUnknownSession)
		}
		time.Sleep(20 * time.Millisecond)
	}
	readBack(t, c, "s", 60, map[uint32]string{1: "new"})
}

// A handover that fails as if its next satellite were dead, when that one only
// answers slower than one probe timeout (a loaded machine), goes to it all the
// same: the gateway holds a satellite dead only when it refuses or stays
// silent through several probes, never on one late answer. The request fails
// Unavailable (the client sends it again); nothing is served by a stand-in.
func TestAHandoverNeverGoesToAStandInOfASlowNextSatellite(t *testing.T) {
	var handOvers, probes atomic.Int32
	failFirstHandOver := clustertest.Inject(0, "HandOver", func(context.Context) error {
		if handOvers.Add(1) == 1 {
			return status.Error(codes.Unavailable, "satellite 3 did not answer in time")
		}
		return nil
	})
	slowFirstProbe := clustertest.Inject(3, "SessionFrames", func(ctx context.Context) error {
		if probes.Add(1) == 1 {
			select { // longer than one probe's timeout, far shorter than a death
			case <-time.After(1500 * time.Millisecond):
			case <-ctx.Done():
			}
		}
		return nil
	})
	c := clustertest.New(t, failSpec, clustertest.Options{Replicas: 1, Interceptor: func(i int) grpc.UnaryServerInterceptor {
		if i == 0 {
			return failFirstHandOver(i)
		}
		return slowFirstProbe(i)
	}})
	register(t, c, "s", &satpagev1.Visit{Satellite: 0, StartNs: 0}, &satpagev1.Visit{Satellite: 3, StartNs: 100})
	write(t, c, "s", 0, 10, "a", "")
	_, err := c.Gateway.ReadPage(context.Background(), &satpagev1.ReadPageRequest{SessionId: "s", Page: 0, ScenarioTimeNs: 150})
	if err != nil && status.Code(err) != codes.Unavailable {
		t.Fatalf("read across the failed handover: %v, want success or Unavailable", err)
	}
	readBack(t, c, "s", 150, map[uint32]string{0: "a"})
	st, err := c.Control.SessionStats(context.Background(), &satpagev1.SessionStatsRequest{SessionId: "s", ScenarioTimeNs: 150})
	if err != nil {
		t.Fatal(err)
	}
	if st.Visits[1].Satellite != 3 || probes.Load() < 2 {
		t.Errorf("visit 1 served by %d after %d probe(s) of satellite 3, want 3 (slow, not dead) after at least 2",
			st.Visits[1].Satellite, probes.Load())
	}
}

// The Swarm kill step on the node's wiring: 8's replica 7 cannot be reached
// over ISLs (its links cut at every satellite) while it answers its health
// checks directly (the detector holds it alive), then is killed with its
// memory and restarted, still cut off: it calls 8 for its copy, which cannot
// reach it (a Swarm task is reached by name only once healthy, 36 s in make
// e2e-swarm). 8's writes go on, each within asideAfter (3.5 s), the failed
// attempts and the hop, held by 8 and 6 (the satellite behind 7); once 7 can
// be reached it takes a snapshot and holds every write. Before, the writes
// failed while 7 was cut off ("change ... stored at 0 replica(s) of 1, not at
// [7]"), or were acknowledged by a retry from 8's own state alone.
func TestWritesGoOnWhileTheReplicaCannotTakeItsCopies(t *testing.T) {
	c := clustertest.New(t, failSpec, clustertest.Options{Replicas: 2})
	register(t, c, "a", &satpagev1.Visit{Satellite: 8, StartNs: 0})
	write(t, c, "a", 0, 10, "w0", "")
	want := map[uint32]string{0: "w0"}
	var worst time.Duration
	writes := func(from int, span time.Duration) {
		t.Helper()
		for n, end := from, time.Now().Add(span); time.Now().Before(end); n++ {
			start := time.Now()
			v := fmt.Sprintf("w%d", n)
			write(t, c, "a", uint32(n%4), int64(10+n), v, fmt.Sprintf("a/%d", n))
			want[uint32(n%4)] = v
			worst = max(worst, time.Since(start))
			time.Sleep(50 * time.Millisecond)
		}
	}
	cut := func(on bool) {
		var links [][2]uint32
		for _, nb := range c.Grid.Neighbors(7, 0) {
			if on {
				links = append(links, [2]uint32{7, nb})
			}
		}
		for _, n := range c.Nodes {
			n.Faults().SetCut(links)
		}
	}
	cut(true)
	writes(1, 5*time.Second)
	c.Kill(7)
	c.Restart(t, 7) // empty; it asks 8 for its copy, and 8 cannot send it
	cut(true)
	writes(1000, 5*time.Second)
	cut(false)
	_, sat7 := c.Satellite(t, 7)
	deadline := time.Now().Add(15 * time.Second)
	for {
		r, err := sat7.ReplicaState(context.Background(), &satpagev1.ReplicaStateRequest{Namespace: 8})
		if err == nil && r.Synced {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("7 holds no copy of 8 15 s after it can be reached: %v, %v", r, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	writes(2000, time.Second)
	t.Logf("the slowest write took %v", worst)
	if worst > 3500*time.Millisecond+3*time.Second {
		t.Errorf("a write took %v, want at most 3.5 s, the failed attempts and the hop", worst)
	}
	readBack(t, c, "a", 5000, want)
}
