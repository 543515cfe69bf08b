package constellation

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/satpage/satpage/services/internal/errs"
)

const star150 = "walker-star:150/10/1:500:87"

func mustGrid(t *testing.T, spec string) *Grid {
	t.Helper()
	s, err := ParseSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	g, err := NewGrid(s)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// Satellite 0 (plane 0, slot 0) is above the cut-off during snapshot 1 only:
// its link to 15 (plane 1, slot 0) is down then and up before and after, and
// in-plane links never go down.
func TestAScheduleSwitchesCrossPlaneLinksByTime(t *testing.T) {
	g := mustGrid(t, star150)
	const step = int64(60e9)
	tg, err := g.WithSchedule(&Schedule{Format: ScheduleFormat, Constellation: star150, CutoffDeg: 60,
		StepNs: step, Snapshots: 3, High: [][3]int64{{0, 1, 2}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		tNs        int64
		crossUp    bool
		hops0to15  int
		inPlaneUp  bool
		nextTo15At int
	}{
		{0, true, 1, true, 15},
		{step - 1, true, 1, true, 15},
		{step, false, 3, true, 1}, // 0 -> 1 -> 16 -> 15 (lowest-indexed neighbour first)
		{2*step + 5, true, 1, true, 15},
	} {
		if got := tg.IsNeighbor(0, 15, tt.tNs); got != tt.crossUp {
			t.Errorf("t=%d: link 0-15 up %v, want %v", tt.tNs, got, tt.crossUp)
		}
		if got := tg.IsNeighbor(0, 1, tt.tNs); got != tt.inPlaneUp {
			t.Errorf("t=%d: link 0-1 up %v, want %v", tt.tNs, got, tt.inPlaneUp)
		}
		if h, err := tg.Hops(0, 15, tt.tNs); err != nil || h != tt.hops0to15 {
			t.Errorf("t=%d: hops 0 -> 15 got %d, %v, want %d", tt.tNs, h, err, tt.hops0to15)
		}
		if n, err := tg.NextHop(0, 15, tt.tNs); err != nil || n != uint32(tt.nextTo15At) {
			t.Errorf("t=%d: next hop 0 -> 15 got %d, %v, want %d", tt.tNs, n, err, tt.nextTo15At)
		}
	}
	// The time-invariant grid it was made from is unchanged.
	if h, _ := g.Hops(0, 15, step); h != 1 {
		t.Errorf("the original grid changed: hops 0 -> 15 = %d", h)
	}
	for _, tNs := range []int64{-1, 3 * step} {
		if _, err := tg.Hops(0, 15, tNs); !errors.Is(err, errs.ErrOutOfRange) || !strings.Contains(err.Error(), "ISL schedule") {
			t.Errorf("t=%d: got %v, want ErrOutOfRange naming the schedule", tNs, err)
		}
		if err := tg.CheckTime(tNs); !errors.Is(err, errs.ErrOutOfRange) {
			t.Errorf("CheckTime(%d): got %v, want ErrOutOfRange", tNs, err)
		}
	}
}

// Many snapshots in turn (more than the cache holds) and back again give the
// same answers as a fresh grid each time.
func TestScheduleSnapshotsSurviveEviction(t *testing.T) {
	g := mustGrid(t, star150)
	var high [][3]int64
	for k := range int64(40) {
		high = append(high, [3]int64{k % 150, k, k + 1}, [3]int64{(k * 7) % 150, k, k + 1})
	}
	sch := &Schedule{Format: ScheduleFormat, Constellation: star150, StepNs: 10, Snapshots: 40, High: high}
	tg, err := g.WithSchedule(sch)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]int, 40)
	for k := range int64(40) {
		one := &Schedule{Format: ScheduleFormat, Constellation: star150, StepNs: 10, Snapshots: 1,
			High: [][3]int64{{k % 150, 0, 1}, {(k * 7) % 150, 0, 1}}}
		fresh, _ := g.WithSchedule(one)
		want[k], _ = fresh.Hops(uint32(k%150), 149, 0)
	}
	for pass := range 2 {
		for k := range int64(40) {
			if got, err := tg.Hops(uint32(k%150), 149, k*10+3); err != nil || got != want[k] {
				t.Fatalf("pass %d snapshot %d: got %d, %v, want %d", pass, k, got, err, want[k])
			}
		}
	}
}

func TestBadSchedulesNameTheirFault(t *testing.T) {
	s, _ := ParseSpec(star150)
	for _, tt := range []struct{ name, body, want string }{
		{"not JSON", `{`, "not a schedule"},
		{"format", `{"format": "x", "constellation": "` + star150 + `", "step_ns": 1, "snapshots": 1}`, `format "x"`},
		{"other constellation", `{"format": "satpage-isl-schedule/1", "constellation": "walker:60/6/2:550:53", "step_ns": 1, "snapshots": 1}`, "written for walker:60/6/2:550:53"},
		{"step", `{"format": "satpage-isl-schedule/1", "constellation": "` + star150 + `", "step_ns": 0, "snapshots": 1}`, "step_ns 0"},
		{"snapshots", `{"format": "satpage-isl-schedule/1", "constellation": "` + star150 + `", "step_ns": 1, "snapshots": 0}`, "snapshots 0"},
		{"satellite", `{"format": "satpage-isl-schedule/1", "constellation": "` + star150 + `", "step_ns": 1, "snapshots": 2, "high": [[150, 0, 1]]}`, "high[0] = [150 0 1]"},
		{"interval", `{"format": "satpage-isl-schedule/1", "constellation": "` + star150 + `", "step_ns": 1, "snapshots": 2, "high": [[3, 1, 1]]}`, "high[0] = [3 1 1]"},
		{"past the end", `{"format": "satpage-isl-schedule/1", "constellation": "` + star150 + `", "step_ns": 1, "snapshots": 2, "high": [[3, 0, 3]]}`, "high[0] = [3 0 3]"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseSchedule([]byte(tt.body), s)
			if !errors.Is(err, errs.ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want ErrInvalid naming %q", err, tt.want)
			}
		})
	}
	if _, err := ReadSchedule(filepath.Join(t.TempDir(), "missing.json"), s); err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Errorf("missing file: got %v, want an error naming it", err)
	}
	path := filepath.Join(t.TempDir(), "ok.json")
	body := `{"format": "satpage-isl-schedule/1", "constellation": "` + star150 + `", "latitude_cutoff_deg": 60, "step_ns": 60000000000, "snapshots": 2, "high": [[3, 0, 2]]}`
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if sch, err := ReadSchedule(path, s); err != nil || sch.CutoffDeg != 60 || len(sch.High) != 1 {
		t.Errorf("good file: got %+v, %v", sch, err)
	}
}

// A schedule file is input from outside: whatever it holds, parsing never
// panics, and a schedule that parses answers every query without panicking.
func FuzzParseSchedule(f *testing.F) {
	f.Add([]byte(`{"format": "satpage-isl-schedule/1", "constellation": "walker-star:150/10/1:500:87", "step_ns": 60000000000, "snapshots": 3, "high": [[0, 1, 2], [149, 0, 3]]}`), int64(61e9), uint32(0), uint32(15))
	f.Add([]byte(`{"format": "satpage-isl-schedule/1", "constellation": "walker-star:150/10/1:500:87", "step_ns": 1, "snapshots": 10000000, "high": [[3, 0, 10000000]]}`), int64(9999999), uint32(3), uint32(149))
	f.Add([]byte(`{"high": [[-1, 5, 2]]}`), int64(-5), uint32(200), uint32(1))
	s, _ := ParseSpec(star150)
	g, _ := NewGrid(s)
	f.Fuzz(func(t *testing.T, raw []byte, tNs int64, a, b uint32) {
		sch, err := ParseSchedule(raw, s)
		if err != nil {
			return
		}
		tg, err := g.WithSchedule(sch)
		if err != nil {
			t.Fatalf("a parsed schedule was refused: %v", err)
		}
		a, b = a%150, b%150
		if h, err := tg.Hops(a, b, tNs); err == nil {
			if n, err := tg.NextHop(a, b, tNs); err != nil || (h > 0 && !tg.IsNeighbor(a, n, tNs)) {
				t.Fatalf("hops %d -> %d = %d at %d but next hop %d, %v", a, b, h, tNs, n, err)
			}
		}
	})
}
