// Package replica replicates a satellite's state (its page frames and the page
// tables of the sessions it serves) to R-1 other satellites, synchronously:
// the primary applies a change, sends it to every replica, and acknowledges
// only when all have stored it (docs/faults.md).
//
//   - placement.go: which satellites hold the copies (the rule priced by the engine).
//   - ops.go: a store change as a message, and applying it to a copy.
//   - holder.go: the copies this satellite holds for others.
//   - primary.go: the PageStore wrapper at the primary (replicate, snapshot, restore).
package replica

import (
	"github.com/satpage/satpage/services/internal/constellation"
)

// Behind is the satellite j slots behind s in its own plane: plane p, slot
// (k - j) mod S. It trails s along the same orbit and covers s's region next.
func Behind(spec constellation.Spec, s uint32, j int) uint32 {
	per := spec.PerPlane()
	p, k := int(s)/per, int(s)%per
	return uint32(p*per + ((k-j)%per+per)%per)
}

// RingHops is the in-plane ISL distance between two satellites of one plane:
// min(j, S-j) for j slots apart (-1 when they are in different planes).
func RingHops(spec constellation.Spec, a, b uint32) int {
	per := spec.PerPlane()
	if int(a)/per != int(b)/per {
		return -1
	}
	j := (int(a)%per - int(b)%per + per) % per
	return min(j, per-j)
}

// Replicas are the R-1 satellites that hold copies of satellite s's state:
// the live satellites behind s in its plane, nearest first (slots k-1, k-2,
// ...; a dead slot is skipped and the next live one behind it is used). Fewer
// than R-1 when the plane has not enough live satellites.
func Replicas(spec constellation.Spec, s uint32, r int, down func(uint32) bool) []uint32 {
	if r <= 1 {
		return nil
	}
	out := make([]uint32, 0, r-1)
	for j := 1; j < spec.PerPlane() && len(out) < r-1; j++ {
		c := Behind(spec, s, j)
		if down == nil || !down(c) {
			out = append(out, c)
		}
	}
	return out
}

// PrimariesOf are the satellites whose copies s holds when nothing is down:
// the R-1 satellites ahead of s in its plane.
func PrimariesOf(spec constellation.Spec, s uint32, r int) []uint32 {
	out := make([]uint32, 0, max(r-1, 0))
	for j := 1; j < r && j < spec.PerPlane(); j++ {
		out = append(out, Behind(spec, s, -j))
	}
	return out
}
