package constellation

import (
	"encoding/json"
	"math"
	"os"
	"slices"
	"testing"
)

// The shared +Grid test vectors, written by orbit_model
// (services/testdata/make_isl_vectors.py); sim/tests/test_cluster_vectors.py
// checks that orbit_model still reproduces the file.
type vectorFile struct {
	Format string `json:"format"`
	Cases  []struct {
		Constellation string     `json:"constellation"`
		CutoffDeg     *float64   `json:"latitude_cutoff_deg"`
		TNs           int64      `json:"t_ns"`
		LatitudeDeg   []float64  `json:"satellite_latitude_deg"`
		Neighbours    [][]uint32 `json:"neighbours"`
		Hops          [][]int    `json:"hops"`
	} `json:"cases"`
}

func TestTheGridAgreesWithOrbitModelsVectors(t *testing.T) {
	raw, err := os.ReadFile("../../testdata/isl_vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var f vectorFile
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	if f.Format != "satpage-isl-vectors/1" {
		t.Fatalf("format: got %q, want satpage-isl-vectors/1", f.Format)
	}
	checked, cut := 0, 0
	for _, c := range f.Cases {
		t.Run(c.Constellation, func(t *testing.T) {
			g := mustGrid(t, c.Constellation)
			s := g.Spec()
			if c.CutoffDeg != nil {
				// orbit_model's satellite latitudes at t_ns, as a one-snapshot schedule.
				sch := &Schedule{Format: ScheduleFormat, Constellation: c.Constellation, CutoffDeg: *c.CutoffDeg,
					StepNs: c.TNs + 1, Snapshots: 1}
				for i, lat := range c.LatitudeDeg {
					if math.Abs(lat) > *c.CutoffDeg {
						sch.High = append(sch.High, [3]int64{int64(i), 0, 1})
					}
				}
				if len(sch.High) == 0 || len(sch.High) == s.Satellites {
					t.Fatalf("%d of %d satellites above the cut-off: the case tests nothing", len(sch.High), s.Satellites)
				}
				if g, err = g.WithSchedule(sch); err != nil {
					t.Fatal(err)
				}
				cut++
			}
			for a := range s.Satellites {
				if got, want := g.Neighbors(uint32(a), c.TNs), c.Neighbours[a]; !slices.Equal(got, want) {
					t.Errorf("neighbours of %d: got %v, want %v", a, got, want)
				}
				for b := range s.Satellites {
					got, err := g.Hops(uint32(a), uint32(b), c.TNs)
					want := c.Hops[a][b]
					if want < 0 {
						if err == nil {
							t.Errorf("hops %d -> %d: got %d, want unreachable", a, b, got)
						}
						continue
					}
					if err != nil || got != want {
						t.Fatalf("hops %d -> %d: got %d, %v, want %d", a, b, got, err, want)
					}
				}
			}
		})
		checked++
	}
	if checked-cut < 2 || cut < 2 {
		t.Errorf("checked %d time-invariant cases and %d with a cut-off, want at least 2 of each", checked-cut, cut)
	}
}
