package replica

import (
	"slices"
	"testing"

	"github.com/satpage/satpage/services/internal/constellation"
)

func spec(t *testing.T, text string) constellation.Spec {
	t.Helper()
	s, err := constellation.ParseSpec(text)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestReplicasTrailTheOwnerInItsPlane(t *testing.T) {
	sp := spec(t, "walker-star:150/10/1:500:87") // S = 15
	tests := []struct {
		name  string
		owner uint32
		r     int
		down  []uint32
		want  []uint32
	}{
		{"R=1 has no replica", 17, 1, nil, nil},
		{"R=2: the slot behind", 17, 2, nil, []uint32{16}},
		{"R=3 wraps around the ring", 15, 3, nil, []uint32{29, 28}},
		{"a dead slot is skipped", 17, 3, []uint32{16}, []uint32{15, 29}},
		{"slot 0 of plane 0", 0, 2, nil, []uint32{14}},
		{"more than the plane holds", 3, 20, nil, []uint32{2, 1, 0, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Replicas(sp, tt.owner, tt.r, func(i uint32) bool { return slices.Contains(tt.down, i) })
			if !slices.Equal(got, tt.want) {
				t.Errorf("Replicas(%d, R=%d, down %v) = %v, want %v", tt.owner, tt.r, tt.down, got, tt.want)
			}
		})
	}
}

// The ring distance agrees with the +Grid's shortest paths (the grid's BFS is
// the authority: in-plane pairs are never closer through other planes).
func TestRingHopsAreTheGridsShortestPaths(t *testing.T) {
	sp := spec(t, "walker-star:150/10/1:500:87")
	g, err := constellation.NewGrid(sp)
	if err != nil {
		t.Fatal(err)
	}
	for s := range uint32(150) {
		for j := 1; j < 15; j++ {
			b := Behind(sp, s, j)
			want, err := g.Hops(s, b, 0)
			if err != nil {
				t.Fatal(err)
			}
			if got := RingHops(sp, s, b); got != want {
				t.Fatalf("RingHops(%d, %d) = %d, want the grid's %d", s, b, got, want)
			}
		}
	}
	if RingHops(sp, 0, 15) != -1 {
		t.Error("RingHops across planes should be -1")
	}
}

func TestPrimariesOfIsTheInverseOfReplicas(t *testing.T) {
	sp := spec(t, "walker:24/3/1:550:53")
	for _, r := range []int{2, 3, 4} {
		for s := range uint32(24) {
			for _, p := range PrimariesOf(sp, s, r) {
				if !slices.Contains(Replicas(sp, p, r, nil), s) {
					t.Errorf("R=%d: %d is a primary of %d, but Replicas(%d) = %v", r, p, s, p, Replicas(sp, p, r, nil))
				}
			}
		}
	}
}
