package constellation

import (
	"fmt"
	"slices"

	"github.com/satpage/satpage/services/internal/errs"
)

// Grid is the +Grid ISL graph of a constellation with all-pairs hop counts
// precomputed (breadth-first search from every satellite: T^2 entries, 22,500
// for the default). With a Schedule (WithSchedule) cross-plane links switch off
// and on with latitude, and every query uses the snapshot at its scenario time.
// Safe for concurrent use.
type Grid struct {
	spec      Spec
	neighbors [][]uint32 // sorted ascending
	dist      []uint16   // dist[a*T+b]; Unreachable when there is no path
	timed     *timed     // nil: time-invariant
	delays    Delays     // nil: the lowest-indexed of the fewest-hop paths (WithDelays)
	fast      *fastTrees
}

// Unreachable marks a pair with no ISL path.
const Unreachable = ^uint16(0)

// NewGrid builds the +Grid topology of spec.
func NewGrid(spec Spec) (*Grid, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	t, p, s := spec.Satellites, spec.Planes, spec.PerPlane()
	g := &Grid{spec: spec, neighbors: make([][]uint32, t), dist: make([]uint16, t*t)}
	for i := range t {
		plane, slot := i/s, i%s
		var nb []uint32
		add := func(j int) {
			if j != i && !slices.Contains(nb, uint32(j)) {
				nb = append(nb, uint32(j))
			}
		}
		add(plane*s + (slot+s-1)%s)
		add(plane*s + (slot+1)%s)
		if plane > 0 {
			add((plane-1)*s + slot)
		}
		if plane < p-1 {
			add((plane+1)*s + slot)
		}
		// Walker delta with P >= 3 closes the ring of planes: plane P would be plane 0
		// with every mean anomaly advanced by 360 F / T, i.e. F slots, so (P-1, k)
		// links to (0, (k+F) mod S). Walker star has no link across the seam.
		if spec.Kind == Delta && p >= 3 {
			if plane == p-1 {
				add((slot + spec.Phasing) % s)
			}
			if plane == 0 {
				add((p-1)*s + (slot-spec.Phasing%s+s)%s)
			}
		}
		slices.Sort(nb)
		g.neighbors[i] = nb
	}
	for a := range t {
		copy(g.dist[a*t:(a+1)*t], bfs(g.neighbors, uint32(a)))
	}
	return g, nil
}

// Spec is the constellation the grid was built for.
func (g *Grid) Spec() Spec { return g.spec }

// Satellites is T.
func (g *Grid) Satellites() int { return g.spec.Satellites }

// Check returns ErrOutOfRange naming i when i is not a satellite index.
func (g *Grid) Check(i uint32) error {
	if int(i) >= g.spec.Satellites {
		return fmt.Errorf("satellite %d outside [0, %d): %w", i, g.spec.Satellites, errs.ErrOutOfRange)
	}
	return nil
}

// Neighbors are the ISL neighbours of satellite i at scenario time tNs,
// ascending (none outside a schedule's time range). The caller must not modify the slice.
func (g *Grid) Neighbors(i uint32, tNs int64) []uint32 {
	s, err := g.snapshotAt(tNs)
	switch {
	case err != nil:
		return nil
	case s != nil:
		return s.neighbors[i]
	}
	return g.neighbors[i]
}

// IsNeighbor reports whether a and b share an ISL at tNs.
func (g *Grid) IsNeighbor(a, b uint32, tNs int64) bool {
	_, ok := slices.BinarySearch(g.Neighbors(a, tNs), b)
	return ok
}

// Hops is the ISL shortest-path length from a to b at tNs, or ErrNoRoute
// (ErrOutOfRange outside a schedule's time range).
func (g *Grid) Hops(a, b uint32, tNs int64) (int, error) {
	d, err := g.distTo(b, tNs)
	if err != nil {
		return 0, err
	}
	if d[a] == Unreachable {
		return 0, fmt.Errorf("from satellite %d to %d at %d ns: %w", a, b, tNs, errs.ErrNoRoute)
	}
	return int(d[a]), nil
}

// distTo is the hop count from every satellite to b at tNs.
func (g *Grid) distTo(b uint32, tNs int64) ([]uint16, error) {
	s, err := g.snapshotAt(tNs)
	switch {
	case err != nil:
		return nil, err
	case s != nil:
		return s.dist(b), nil
	}
	// dist is symmetric (links are undirected): column b is row b.
	t := g.spec.Satellites
	return g.dist[int(b)*t : (int(b)+1)*t], nil
}

// NextHop is the neighbour of a on a shortest path to b at tNs (b != a): the
// lowest-indexed neighbour one hop closer to b, so every relay picks the same
// path; with delays (WithDelays), the next satellite on the fastest of them.
func (g *Grid) NextHop(a, b uint32, tNs int64) (uint32, error) {
	dist, err := g.distTo(b, tNs)
	if err != nil {
		return 0, err
	}
	d := dist[a]
	if d == Unreachable {
		return 0, fmt.Errorf("from satellite %d to %d at %d ns: %w", a, b, tNs, errs.ErrNoRoute)
	}
	if d == 0 {
		return a, nil
	}
	if g.delays != nil {
		if next, ok := g.fastNext(a, b, tNs); ok {
			return next, nil
		}
	}
	for _, n := range g.Neighbors(a, tNs) {
		if dist[n] == d-1 {
			return n, nil
		}
	}
	return 0, fmt.Errorf("from satellite %d to %d: no neighbour closer: %w", a, b, errs.ErrNoRoute)
}
