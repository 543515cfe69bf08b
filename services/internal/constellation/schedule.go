package constellation

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sync"

	"github.com/satpage/satpage/services/internal/errs"
)

// ScheduleFormat names the ISL schedule file format.
const ScheduleFormat = "satpage-isl-schedule/1"

// Limits on a schedule file, so that a wrong file fails fast instead of
// exhausting memory.
const (
	MaxScheduleBytes     = 256 << 20
	MaxScheduleSnapshots = 10_000_000
)

// Schedule makes the +Grid time-varying: a cross-plane ISL is down while either
// end is above a latitude cut-off (orbit_model's rule, docs/orbit-model.md).
// Positions come from orbit_model, which writes the file (satpage.network
// .high_latitude_intervals), so the Go side needs no propagator and routes on
// exactly the snapshots the engine routes on.
//
// File (JSON):
//
//	{"format": "satpage-isl-schedule/1", "constellation": SPEC,
//	 "latitude_cutoff_deg": 60, "step_ns": 60000000000, "snapshots": K,
//	 "high": [[sat, k0, k1], ...]}
//
// Snapshot k covers scenario times [k*step_ns, (k+1)*step_ns); satellite sat is
// above the cut-off during snapshots k0 <= k < k1. Times outside the K
// snapshots are out of range.
type Schedule struct {
	Format        string     `json:"format"`
	Constellation string     `json:"constellation"`
	CutoffDeg     float64    `json:"latitude_cutoff_deg"`
	StepNs        int64      `json:"step_ns"`
	Snapshots     int64      `json:"snapshots"`
	High          [][3]int64 `json:"high"`
}

// ReadSchedule reads and checks a schedule file for spec.
func ReadSchedule(path string, spec Spec) (*Schedule, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("ISL schedule: %w", err)
	}
	if st.Size() > MaxScheduleBytes {
		return nil, fmt.Errorf("ISL schedule %s: %d bytes exceed %d: %w", path, st.Size(), MaxScheduleBytes, errs.ErrInvalid)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("ISL schedule: %w", err)
	}
	s, err := ParseSchedule(raw, spec)
	if err != nil {
		return nil, fmt.Errorf("ISL schedule %s: %w", path, err)
	}
	return s, nil
}

// ParseSchedule decodes and checks a schedule for spec.
func ParseSchedule(raw []byte, spec Spec) (*Schedule, error) {
	var s Schedule
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("not a schedule: %v: %w", err, errs.ErrInvalid)
	}
	if s.Format != ScheduleFormat {
		return nil, fmt.Errorf("format %q, want %q: %w", s.Format, ScheduleFormat, errs.ErrInvalid)
	}
	other, err := ParseSpec(s.Constellation)
	if err != nil {
		return nil, err
	}
	if other != spec {
		return nil, fmt.Errorf("written for %s, not %s: %w", other, spec, errs.ErrInvalid)
	}
	if s.StepNs <= 0 {
		return nil, fmt.Errorf("step_ns %d: want > 0: %w", s.StepNs, errs.ErrInvalid)
	}
	if s.Snapshots < 1 || s.Snapshots > MaxScheduleSnapshots {
		return nil, fmt.Errorf("snapshots %d: want 1 to %d: %w", s.Snapshots, MaxScheduleSnapshots, errs.ErrInvalid)
	}
	for i, h := range s.High {
		if h[0] < 0 || h[0] >= int64(spec.Satellites) || h[1] < 0 || h[1] >= h[2] || h[2] > s.Snapshots {
			return nil, fmt.Errorf("high[%d] = %v: want [satellite < %d, k0, k1) with 0 <= k0 < k1 <= %d: %w",
				i, h, spec.Satellites, s.Snapshots, errs.ErrInvalid)
		}
	}
	return &s, nil
}

// timed is the time-varying part of a Grid: the schedule and a bounded cache of
// the snapshots in use (replays and requests move forward in time).
type timed struct {
	step, snapshots int64
	high            [][][2]int64 // satellite -> sorted [k0, k1) intervals above the cut-off

	mu    sync.Mutex // guards cache and order
	cache map[int64]*snapshot
	order []int64 // insertion order, for eviction
}

// maxSnapshots bounds the cache: each snapshot holds its neighbours and the
// hop counts to the destinations asked for.
const maxSnapshots = 16

// snapshot is the ISL graph of one routing step.
type snapshot struct {
	neighbors [][]uint32

	mu     sync.Mutex // guards distTo
	distTo map[uint32][]uint16
}

// WithSchedule returns a grid that routes on the snapshots of s (a copy; g is unchanged).
func (g *Grid) WithSchedule(s *Schedule) (*Grid, error) {
	if other, err := ParseSpec(s.Constellation); err != nil || other != g.spec {
		return nil, fmt.Errorf("ISL schedule for %q on a grid of %s: %w", s.Constellation, g.spec, errs.ErrInvalid)
	}
	tm := &timed{step: s.StepNs, snapshots: s.Snapshots, high: make([][][2]int64, g.spec.Satellites),
		cache: map[int64]*snapshot{}}
	for _, h := range s.High {
		tm.high[h[0]] = append(tm.high[h[0]], [2]int64{h[1], h[2]})
	}
	for _, iv := range tm.high {
		slices.SortFunc(iv, func(a, b [2]int64) int { return int(a[0] - b[0]) })
	}
	c := *g
	c.timed = tm
	return &c, nil
}

// CheckTime returns ErrOutOfRange when tNs lies outside the grid's schedule
// (never for a time-invariant grid).
func (g *Grid) CheckTime(tNs int64) error {
	_, err := g.snapshotAt(tNs)
	return err
}

// snapshotAt is the snapshot in force at tNs (nil for a time-invariant grid).
func (g *Grid) snapshotAt(tNs int64) (*snapshot, error) {
	tm := g.timed
	if tm == nil {
		return nil, nil
	}
	if tNs < 0 || tNs/tm.step >= tm.snapshots {
		return nil, fmt.Errorf("scenario time %d ns outside the ISL schedule [0, %d): %w",
			tNs, tm.snapshots*tm.step, errs.ErrOutOfRange)
	}
	k := tNs / tm.step
	tm.mu.Lock()
	defer tm.mu.Unlock()
	if s := tm.cache[k]; s != nil {
		return s, nil
	}
	high := make([]bool, g.spec.Satellites)
	for i, iv := range tm.high {
		j, _ := slices.BinarySearchFunc(iv, k, func(v [2]int64, k int64) int {
			switch {
			case v[1] <= k:
				return -1
			case v[0] > k:
				return 1
			}
			return 0
		})
		high[i] = j < len(iv) && iv[j][0] <= k && k < iv[j][1]
	}
	s := g.cutOff(high)
	if len(tm.order) >= maxSnapshots {
		delete(tm.cache, tm.order[0])
		tm.order = tm.order[1:]
	}
	tm.cache[k] = s
	tm.order = append(tm.order, k)
	return s, nil
}

// cutOff is the static graph without the cross-plane links that touch a high satellite.
func (g *Grid) cutOff(high []bool) *snapshot {
	s := &snapshot{neighbors: make([][]uint32, len(g.neighbors)), distTo: map[uint32][]uint16{}}
	per := uint32(g.spec.PerPlane())
	for i, nb := range g.neighbors {
		keep := make([]uint32, 0, len(nb))
		for _, j := range nb {
			if uint32(i)/per != j/per && (high[i] || high[j]) {
				continue
			}
			keep = append(keep, j)
		}
		s.neighbors[i] = keep
	}
	return s
}

// dist is the hop count from every satellite to b in the snapshot (BFS, cached).
func (s *snapshot) dist(b uint32) []uint16 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d := s.distTo[b]; d != nil {
		return d
	}
	d := bfs(s.neighbors, b)
	s.distTo[b] = d
	return d
}

// bfs is the hop count from src to every satellite (Unreachable where there is no path).
func bfs(neighbors [][]uint32, src uint32) []uint16 {
	d := make([]uint16, len(neighbors))
	for i := range d {
		d[i] = Unreachable
	}
	d[src] = 0
	queue := []uint32{src}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		for _, v := range neighbors[u] {
			if d[v] == Unreachable {
				d[v] = d[u] + 1
				queue = append(queue, v)
			}
		}
	}
	return d
}
