package constellation

import (
	"fmt"

	"github.com/satpage/satpage/services/internal/errs"
)

// Faults are what is down now (failure detection and ISL cuts): routing on the
// live graph leaves out dead satellites and cut links.
type Faults interface {
	// Any is false when nothing is down (routing then uses the precomputed tables).
	Any() bool
	SatelliteDown(i uint32) bool
	LinkCut(a, b uint32) bool
}

// LiveNextHop is NextHop on the live graph: the +Grid at tNs without the
// satellites f reports down and the links it reports cut. The path is a
// shortest one on that graph, and ties go to the lowest-indexed neighbour as in
// NextHop, so every relay picks the same path and, with no faults, the same
// path NextHop picks. b down, or no live path: ErrNoRoute.
//
// Cost: one breadth-first search from b over T satellites per call (a few
// microseconds for 150), paid only while something is down.
func (g *Grid) LiveNextHop(a, b uint32, tNs int64, f Faults) (uint32, error) {
	if f == nil || !f.Any() {
		return g.NextHop(a, b, tNs)
	}
	if err := g.Check(a); err != nil {
		return 0, err
	}
	if err := g.Check(b); err != nil {
		return 0, err
	}
	if a == b {
		return a, nil
	}
	if f.SatelliteDown(b) {
		return 0, fmt.Errorf("from satellite %d to %d at %d ns: satellite %d is down: %w", a, b, tNs, b, errs.ErrNoRoute)
	}
	dist, err := g.LiveDistances(b, tNs, f)
	if err != nil {
		return 0, err
	}
	d := dist[a]
	if d == Unreachable {
		return 0, fmt.Errorf("from satellite %d to %d at %d ns on the live graph: %w", a, b, tNs, errs.ErrNoRoute)
	}
	for _, n := range g.Neighbors(a, tNs) {
		if dist[n] == d-1 && !f.LinkCut(a, n) {
			return n, nil
		}
	}
	return 0, fmt.Errorf("from satellite %d to %d: no live neighbour closer: %w", a, b, errs.ErrNoRoute)
}

// LiveDistances is the hop count from every satellite to b on the live graph
// at tNs (Unreachable for satellites cut off, and for the dead ones).
func (g *Grid) LiveDistances(b uint32, tNs int64, f Faults) ([]uint16, error) {
	if _, err := g.snapshotAt(tNs); err != nil {
		return nil, err
	}
	t := g.spec.Satellites
	dist := make([]uint16, t)
	for i := range dist {
		dist[i] = Unreachable
	}
	if f.SatelliteDown(b) {
		return dist, nil
	}
	dist[b] = 0
	queue := make([]uint32, 1, t)
	queue[0] = b
	for len(queue) > 0 {
		x := queue[0]
		queue = queue[1:]
		for _, n := range g.Neighbors(x, tNs) {
			if dist[n] != Unreachable || f.SatelliteDown(n) || f.LinkCut(x, n) {
				continue
			}
			dist[n] = dist[x] + 1
			queue = append(queue, n)
		}
	}
	return dist, nil
}
