package clustertest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/clustertest"
)

// The engine's counts for sessions, a strategy, R and a failure schedule
// (services/testdata/replay_vectors.json, written by
// services/testdata/make_replay_vectors.py from sim/satpage/replayvectors.py; a
// Python test fails when the file is stale). The cluster replays them the way
// sim/satpage/cluster/replayer.py does and must count the same.

type vectorSession struct {
	Visits   [][2]int64 `json:"visits"`   // satellite, start_ns
	Accesses [][3]int64 `json:"accesses"` // page, time_ns (clamped to its visit), write
	EndNs    int64      `json:"end_ns"`
}

type vectorCase struct {
	Name     string           `json:"name"`
	Strategy string           `json:"strategy"`
	Replicas int              `json:"replicas"`
	Writes   bool             `json:"writes"`
	Failures [][2]int64       `json:"failures"` // satellite, fail_ns
	Want     map[string]int64 `json:"want"`
}

type vectorFile struct {
	Format        string          `json:"format"`
	Constellation string          `json:"constellation"`
	TablePages    uint32          `json:"table_pages"`
	Sessions      []vectorSession `json:"sessions"`
	Cases         []vectorCase    `json:"cases"`
}

// replaySession is one session's replay state (replayer._Session).
type replaySession struct {
	index         int
	id            string
	v             vectorSession
	writes        bool
	cursor        int
	registered    bool
	ended         bool
	tableLost     bool
	seen, lost    map[uint32]bool
	lostWithTable int64
	atKills       []atKill
	stats         *satpagev1.SessionStatsResponse
	deleted       int64
}

type atKill struct {
	victim uint32
	frames int64
	served bool
}

// replayer sends the sessions through the cluster's gateway; readBack is the
// loss check of a replay with failures.
type replayer struct {
	t        *testing.T
	c        *clustertest.Cluster
	strategy satpagev1.Strategy
	pages    uint32
	readBack bool
	sessions []*replaySession
}

func (r *replayer) register(ctx context.Context, s *replaySession) {
	visits := make([]*satpagev1.Visit, len(s.v.Visits))
	for k, v := range s.v.Visits {
		visits[k] = &satpagev1.Visit{Satellite: uint32(v[0]), StartNs: v[1]}
	}
	if _, err := r.c.Control.RegisterSession(ctx, &satpagev1.RegisterSessionRequest{SessionId: s.id, Visits: visits,
		Strategy: r.strategy, TablePages: r.pages}); err != nil {
		r.t.Fatalf("register session %d: %v", s.index, err)
	}
	s.registered = true
}

// tableGone says err is the loss of s's page table; s stops there, and its
// pages lost are the frames its serving satellite held when it was killed.
func (r *replayer) tableGone(s *replaySession, err error) bool {
	if !r.readBack || status.Code(err) != codes.NotFound || !strings.Contains(status.Convert(err).Message(), "has no page table") {
		return false
	}
	s.tableLost = true
	for _, k := range slices.Backward(s.atKills) {
		if k.served {
			s.lostWithTable = k.frames
			break
		}
	}
	return true
}

func (r *replayer) read(ctx context.Context, s *replaySession, pages []uint32, times []int64) {
	var ps []uint32
	var ts []int64
	for k, p := range pages {
		if !s.lost[p] {
			ps, ts = append(ps, p), append(ts, times[k])
		}
	}
	if len(ps) == 0 || s.tableLost {
		return
	}
	_, err := r.c.Gateway.ReadPages(ctx, &satpagev1.ReadPagesRequest{SessionId: s.id, Pages: ps, ScenarioTimeNs: ts, OmitData: true})
	if err == nil {
		for _, p := range ps {
			s.seen[p] = true
		}
		return
	}
	if r.tableGone(s, err) {
		return
	}
	if !r.readBack || status.Code(err) != codes.NotFound {
		r.t.Fatalf("session %d: ReadPages: %v", s.index, err)
	}
	for k, p := range ps { // one access at a time: the ones answered NotFound name the pages lost
		if s.lost[p] {
			continue
		}
		_, err := r.c.Gateway.ReadPages(ctx, &satpagev1.ReadPagesRequest{SessionId: s.id, Pages: []uint32{p},
			ScenarioTimeNs: []int64{ts[k]}, OmitData: true})
		switch {
		case err == nil:
			s.seen[p] = true
		case r.tableGone(s, err):
			return
		case status.Code(err) == codes.NotFound:
			s.lost[p] = true
		default:
			r.t.Fatalf("session %d: ReadPages page %d: %v", s.index, p, err)
		}
	}
}

// send sends accesses lo..hi of s: runs of reads as one ReadPages, each write a WritePage.
func (r *replayer) send(ctx context.Context, s *replaySession, lo, hi int) {
	var pages []uint32
	var times []int64
	flush := func() {
		r.read(ctx, s, pages, times)
		pages, times = nil, nil
	}
	for a := lo; a < hi && !s.tableLost; a++ {
		acc := s.v.Accesses[a]
		if !s.writes || acc[2] == 0 {
			pages, times = append(pages, uint32(acc[0])), append(times, acc[1])
			continue
		}
		flush()
		if s.tableLost {
			return
		}
		_, err := r.c.Gateway.WritePage(ctx, &satpagev1.WritePageRequest{SessionId: s.id, Page: uint32(acc[0]),
			ScenarioTimeNs: acc[1], Data: fmt.Appendf(nil, "%s/%d", s.id, a)})
		if err != nil && !r.tableGone(s, err) {
			r.t.Fatalf("session %d: WritePage: %v", s.index, err)
		}
		s.seen[uint32(acc[0])] = true
	}
	flush()
}

func (r *replayer) advance(ctx context.Context, s *replaySession, t int64) {
	if s.ended || s.tableLost || s.v.Visits[0][1] > t {
		return
	}
	if !s.registered {
		r.register(ctx, s)
	}
	hi := s.cursor
	for hi < len(s.v.Accesses) && s.v.Accesses[hi][1] <= t {
		hi++
	}
	if hi > s.cursor {
		r.send(ctx, s, s.cursor, hi)
		s.cursor = hi
	}
}

func (r *replayer) stats(ctx context.Context, s *replaySession, t int64) *satpagev1.SessionStatsResponse {
	st, err := r.c.Control.SessionStats(ctx, &satpagev1.SessionStatsRequest{SessionId: s.id, ScenarioTimeNs: t})
	if err != nil {
		if r.tableGone(s, err) {
			return nil
		}
		r.t.Fatalf("session %d: SessionStats: %v", s.index, err)
	}
	return st
}

// end reads s's counts, then (readBack) every page it has back, then ends it.
func (r *replayer) end(ctx context.Context, s *replaySession) {
	r.advance(ctx, s, s.v.EndNs)
	if !s.registered || s.ended {
		s.ended = true
		return
	}
	if !s.tableLost {
		s.stats = r.stats(ctx, s, s.v.EndNs)
	}
	if r.readBack && !s.tableLost {
		var back []uint32
		for p := range s.seen {
			if !s.lost[p] {
				back = append(back, p)
			}
		}
		slices.Sort(back)
		times := make([]int64, len(back))
		for k := range times {
			times[k] = s.v.EndNs
		}
		r.read(ctx, s, back, times)
	}
	s.ended = true
	e, err := r.c.Gateway.EndSession(ctx, &satpagev1.EndSessionRequest{SessionId: s.id, ScenarioTimeNs: s.v.EndNs})
	if err != nil {
		if !r.readBack {
			r.t.Fatalf("session %d: EndSession: %v", s.index, err)
		}
		return // a lost page or table: the frames left are swept anyway
	}
	s.deleted = int64(e.PagesDeleted)
}

type event struct {
	t     int64
	kind  int // 0: a session ends, 1: a satellite fails
	index int // session, or satellite
}

// run replays every session through the failures: the sessions in step
// through the events, every session paused at a failure while its handovers due
// are performed (SessionStats) and the satellite is killed and restarted empty.
func (r *replayer) run(ctx context.Context, failures [][2]int64, settle time.Duration) {
	var events []event
	for _, s := range r.sessions {
		events = append(events, event{s.v.EndNs, 0, s.index})
	}
	for _, f := range failures {
		events = append(events, event{f[1], 1, int(f[0])})
	}
	slices.SortStableFunc(events, func(a, b event) int {
		if a.t != b.t {
			return compare(a.t, b.t)
		}
		if a.kind != b.kind {
			return a.kind - b.kind
		}
		return a.index - b.index
	})
	for _, ev := range events {
		for _, s := range r.sessions {
			r.advance(ctx, s, ev.t)
		}
		if ev.kind == 0 {
			r.end(ctx, r.sessions[ev.index])
			continue
		}
		victim := uint32(ev.index)
		for _, s := range r.sessions {
			if !s.registered || s.ended || s.tableLost {
				continue
			}
			st := r.stats(ctx, s, ev.t)
			if st == nil {
				continue
			}
			held := map[uint32]int64{}
			for k, v := range st.Visits {
				if _, ok := held[v.Satellite]; !ok && k < len(st.FramesByVisit) {
					held[v.Satellite] = int64(st.FramesByVisit[k]) // a satellite of two visits: one count
				}
			}
			served := len(st.Visits) > 0 && st.Visits[st.Visit].Satellite == victim
			s.atKills = append(s.atKills, atKill{victim, held[victim], served})
		}
		r.c.Kill(victim)
		r.c.Restart(r.t, victim)
		time.Sleep(settle)
	}
}

func compare(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// counts sums what the sessions that ran to their end counted, and what was lost.
func (r *replayer) counts() map[string]int64 {
	out := map[string]int64{}
	for _, s := range r.sessions {
		lost := int64(len(s.lost)) + s.lostWithTable
		out["pages_lost"] += lost
		if lost > 0 || s.tableLost {
			out["sessions_hit"]++
		}
		if s.tableLost {
			out["page_tables_lost"]++
		}
		st := s.stats
		if st == nil {
			continue
		}
		out["sessions"]++
		out["accesses"] += int64(st.Accesses)
		out["pages_created"] += int64(st.Created)
		out["page_moves"] += int64(st.OndemandMoves + st.ProactiveMoves + st.PushMoves)
		out["page_hops"] += int64(st.OndemandHops + st.ProactiveHops + st.PushHops)
		for _, f := range st.FramesByVisit[:max(len(st.FramesByVisit)-1, 0)] {
			out["pages_left_behind"] += int64(f)
		}
		out["pages_deleted"] += s.deleted
	}
	return out
}

var strategies = map[string]satpagev1.Strategy{
	"on-demand":  satpagev1.Strategy_STRATEGY_ON_DEMAND,
	"proactive":  satpagev1.Strategy_STRATEGY_PROACTIVE,
	"push-ahead": satpagev1.Strategy_STRATEGY_PUSH_AHEAD,
}

func TestReplayVectors(t *testing.T) {
	raw, err := os.ReadFile("../../testdata/replay_vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var f vectorFile
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	if f.Format != "satpage-replay-vectors/1" {
		t.Fatalf("format: got %q, want satpage-replay-vectors/1", f.Format)
	}
	seen := map[string]map[int]bool{}
	for _, tc := range f.Cases {
		if seen[tc.Strategy] == nil {
			seen[tc.Strategy] = map[int]bool{}
		}
		seen[tc.Strategy][tc.Replicas] = true
	}
	for _, name := range []string{"on-demand", "proactive", "push-ahead"} {
		if !seen[name][1] || !seen[name][2] {
			t.Errorf("the vectors lack %s at R = 1 or R = 2: %v", name, seen[name])
		}
	}
	for ci, tc := range f.Cases {
		t.Run(tc.Name, func(t *testing.T) {
			if tc.Replicas > 1 && (raceEnabled || testing.Short()) {
				// A cluster at R = 2 takes seconds to start, tenfold more under the
				// detector (minutes on two cores): the plain run, `make
				// replay-vectors` (part of `make test`), has them.
				t.Skip("R > 1 cases run without -race and -short")
			}
			// A cluster per case (a cluster at R = 2 spends its start waiting on
			// its replicas, not on the CPU: the cases overlap those waits).
			t.Parallel()
			code, ok := strategies[tc.Strategy]
			if !ok {
				t.Fatalf("strategy %q: the service runs on-demand, proactive and push-ahead", tc.Strategy)
			}
			c := clustertest.New(t, f.Constellation, clustertest.Options{Replicas: tc.Replicas, Logger: clustertest.WarningsTo(t)})
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			r := &replayer{t: t, c: c, strategy: code, pages: f.TablePages, readBack: len(tc.Failures) > 0}
			for k, v := range f.Sessions {
				r.sessions = append(r.sessions, &replaySession{index: k, id: fmt.Sprintf("v%d-%d", ci, k), v: v,
					writes: tc.Writes, seen: map[uint32]bool{}, lost: map[uint32]bool{}})
			}
			// at R > 1 the replicas' upkeep (every second) sends a restarted
			// satellite its copies of the others' state before the next request
			settle := time.Duration(0)
			if tc.Replicas > 1 {
				settle = 1100 * time.Millisecond
			}
			r.run(ctx, tc.Failures, settle)
			got := r.counts()
			for k, want := range tc.Want {
				if got[k] != want {
					t.Errorf("%s: got %d, want %d (the engine's)", k, got[k], want)
				}
			}
		})
	}
}
