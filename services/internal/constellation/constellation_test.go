package constellation

import (
	"errors"
	"testing"

	"github.com/satpage/satpage/services/internal/errs"
)

func TestParseSpec(t *testing.T) {
	tests := []struct {
		name, text string
		want       Spec
		wantErr    bool
	}{
		{"the default", "walker-star:150/10/1:500:87", Spec{Star, 150, 10, 1, 500, 87}, false},
		{"delta with fractions", "walker:24/3/1:550.5:53.2", Spec{Delta, 24, 3, 1, 550.5, 53.2}, false},
		{"one plane", "walker-star:15/1/0:500:87", Spec{Star, 15, 1, 0, 500, 87}, false},
		{"P does not divide T", "walker:10/3/1:500:87", Spec{}, true},
		{"F too large", "walker:10/2/2:500:87", Spec{}, true},
		{"unknown kind", "delta:10/2/1:500:87", Spec{}, true},
		{"missing field", "walker:10/2/1:500", Spec{}, true},
		{"negative altitude", "walker:10/2/1:-5:87", Spec{}, true},
		{"not numbers", "walker:a/b/c:500:87", Spec{}, true},
		{"too many satellites", "walker:100000/10/1:500:87", Spec{}, true},
		{"NaN altitude", "walker:10/2/1:NaN:87", Spec{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseSpec(tt.text)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseSpec(%q): got error %v, want error %v", tt.text, err, tt.wantErr)
			}
			if err != nil && !errors.Is(err, errs.ErrInvalid) {
				t.Errorf("got %v, want ErrInvalid", err)
			}
			if !tt.wantErr && got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			if !tt.wantErr && got.String() != tt.text {
				t.Errorf("String: got %q, want %q", got.String(), tt.text)
			}
		})
	}
}

// gridHops is the closed form of +Grid hop counts (an authority independent of
// the BFS): in-plane ring distance plus the plane distance, along a line of
// planes for walker-star (no seam links) and around a ring for walker delta
// with F = 0 (or P <= 2). It holds because cross-plane links join equal slots;
// the wrap with F != 0 is checked against orbit_model's vectors instead.
func gridHops(s Spec, a, b int) int {
	S := s.PerPlane()
	pa, ka, pb, kb := a/S, a%S, b/S, b%S
	dk := abs(ka - kb)
	dk = min(dk, S-dk)
	dp := abs(pa - pb)
	if s.Kind == Delta && s.Planes >= 3 {
		dp = min(dp, s.Planes-dp)
	}
	return dk + dp
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func TestGridHopsMatchTheClosedForm(t *testing.T) {
	for _, text := range []string{"walker-star:150/10/1:500:87", "walker:66/6/0:780:86.4",
		"walker-star:15/1/0:500:87", "walker:8/2/1:500:60", "walker:9/3/0:500:60", "walker:1/1/0:500:0"} {
		t.Run(text, func(t *testing.T) {
			g := mustGrid(t, text)
			s := g.Spec()
			for a := range s.Satellites {
				for b := range s.Satellites {
					got, err := g.Hops(uint32(a), uint32(b), 0)
					if want := gridHops(s, a, b); err != nil || got != want {
						t.Fatalf("Hops(%d, %d): got %d, %v, want %d", a, b, got, err, want)
					}
				}
			}
		})
	}
}

func TestNextHopWalksAShortestPathOfNeighbours(t *testing.T) {
	s, _ := ParseSpec("walker-star:150/10/1:500:87")
	g, _ := NewGrid(s)
	for _, pair := range [][2]uint32{{0, 5}, {0, 149}, {14, 135}, {77, 3}, {0, 0}} {
		a, b := pair[0], pair[1]
		want, _ := g.Hops(a, b, 0)
		at, steps := a, 0
		for at != b {
			next, err := g.NextHop(at, b, 0)
			if err != nil {
				t.Fatal(err)
			}
			if !g.IsNeighbor(at, next, 0) {
				t.Fatalf("NextHop(%d, %d) = %d is not a neighbour", at, b, next)
			}
			at, steps = next, steps+1
		}
		if steps != want {
			t.Errorf("path %d -> %d: got %d steps, want %d", a, b, steps, want)
		}
	}
}

func TestTheStarSeamHasNoLinks(t *testing.T) {
	s, _ := ParseSpec("walker-star:150/10/1:500:87")
	g, _ := NewGrid(s)
	// Plane 0 slot 3 and plane 9 slot 3 face each other across the seam.
	if g.IsNeighbor(3, 9*15+3, 0) {
		t.Errorf("got a link across the seam between 3 and %d, want none", 9*15+3)
	}
	if got := len(g.Neighbors(3, 0)); got != 3 {
		t.Errorf("neighbours of an edge-plane satellite: got %d, want 3", got)
	}
	if got := len(g.Neighbors(5*15+3, 0)); got != 4 {
		t.Errorf("neighbours of an inner-plane satellite: got %d, want 4", got)
	}
}

func TestAnIndexOutsideTheConstellationIsOutOfRange(t *testing.T) {
	s, _ := ParseSpec("walker-star:150/10/1:500:87")
	g, _ := NewGrid(s)
	if err := g.Check(150); !errors.Is(err, errs.ErrOutOfRange) {
		t.Errorf("Check(150): got %v, want ErrOutOfRange", err)
	}
}

func FuzzParseSpec(f *testing.F) {
	for _, s := range []string{"walker-star:150/10/1:500:87", "walker:24/3/1:550.5:53.2", "walker:1/1/0:1:0",
		"walker:0/0/0:0:0", "walker-star:4096/4096/4095:1e308:180", ":::", "walker:-1/-1/-1:-1:-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		s, err := ParseSpec(text)
		if err != nil {
			return
		}
		if s.Satellites > 256 {
			return // NewGrid is O(T^2); the parse is what is fuzzed
		}
		g, err := NewGrid(s)
		if err != nil {
			t.Fatalf("a valid spec %q gave no grid: %v", text, err)
		}
		for a := range s.Satellites {
			for _, n := range g.Neighbors(uint32(a), 0) {
				if !g.IsNeighbor(n, uint32(a), 0) {
					t.Fatalf("%q: link %d-%d is one-way", text, a, n)
				}
			}
		}
	})
}
