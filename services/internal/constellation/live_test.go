package constellation

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/satpage/satpage/services/internal/errs"
)

// testFaults is a plain fault set for tests.
type testFaults struct {
	down map[uint32]bool
	cut  map[[2]uint32]bool
}

func (f testFaults) Any() bool                   { return len(f.down)+len(f.cut) > 0 }
func (f testFaults) SatelliteDown(i uint32) bool { return f.down[i] }
func (f testFaults) LinkCut(a, b uint32) bool    { return f.cut[[2]uint32{min(a, b), max(a, b)}] }

// floyd is the authority: all-pairs shortest paths on the live graph by
// Floyd-Warshall over an adjacency matrix, independent of the BFS code.
func floyd(g *Grid, f testFaults) [][]int {
	t := g.Satellites()
	const inf = 1 << 20
	d := make([][]int, t)
	for i := range d {
		d[i] = make([]int, t)
		for j := range d[i] {
			d[i][j] = inf
		}
		if !f.down[uint32(i)] {
			d[i][i] = 0
		}
	}
	for i := range t {
		for _, n := range g.Neighbors(uint32(i), 0) {
			if !f.down[uint32(i)] && !f.down[n] && !f.LinkCut(uint32(i), n) {
				d[i][n] = 1
			}
		}
	}
	for k := range t {
		for i := range t {
			for j := range t {
				if d[i][k]+d[k][j] < d[i][j] {
					d[i][j] = d[i][k] + d[k][j]
				}
			}
		}
	}
	for i := range d {
		for j := range d[i] {
			if d[i][j] >= inf {
				d[i][j] = -1
			}
		}
	}
	return d
}

func TestLiveNextHopWithoutFaultsIsNextHop(t *testing.T) {
	g := mustGrid(t, "walker-star:150/10/1:500:87")
	for a := range uint32(150) {
		for b := range uint32(150) {
			want, err1 := g.NextHop(a, b, 0)
			got, err2 := g.LiveNextHop(a, b, 0, testFaults{})
			if got != want || (err1 == nil) != (err2 == nil) {
				t.Fatalf("LiveNextHop(%d, %d) = %d, %v; want %d, %v", a, b, got, err2, want, err1)
			}
		}
	}
}

func TestLiveNextHopFollowsAShortestLivePath(t *testing.T) {
	g := mustGrid(t, "walker-star:150/10/1:500:87")
	rng := rand.New(rand.NewPCG(7, 15))
	for trial := range 4 {
		f := testFaults{down: map[uint32]bool{}, cut: map[[2]uint32]bool{}}
		for range 3 + trial*4 {
			f.down[uint32(rng.IntN(150))] = true
		}
		for range 2 + trial*6 {
			a := uint32(rng.IntN(150))
			nb := g.Neighbors(a, 0)
			b := nb[rng.IntN(len(nb))]
			f.cut[[2]uint32{min(a, b), max(a, b)}] = true
		}
		want := floyd(g, f)
		for range 20 { // sources sampled: every destination from each
			a := uint32(rng.IntN(150))
			if f.down[a] {
				continue
			}
			for b := range uint32(150) {
				if a == b {
					continue
				}
				// Walk the next hops: every step a live satellite over an uncut link,
				// arriving in exactly the Floyd-Warshall distance.
				at, steps := a, 0
				var err error
				for at != b && steps <= 150 {
					var next uint32
					next, err = g.LiveNextHop(at, b, 0, f)
					if err != nil {
						break
					}
					if f.down[next] || f.LinkCut(at, next) || !g.IsNeighbor(at, next, 0) {
						t.Fatalf("trial %d: %d -> %d steps from %d to %d, which is down, cut or no ISL", trial, a, b, at, next)
					}
					at, steps = next, steps+1
				}
				switch w := want[a][b]; {
				case w < 0:
					if !errors.Is(err, errs.ErrNoRoute) {
						t.Fatalf("trial %d: %d -> %d has no live path; got err %v after %d steps, want ErrNoRoute", trial, a, b, err, steps)
					}
				case err != nil || steps != w:
					t.Fatalf("trial %d: %d -> %d: got %d steps (err %v), want %d", trial, a, b, steps, err, w)
				}
			}
		}
	}
}
