// Package constellation parses Walker constellation specs and computes the
// +Grid inter-satellite-link (ISL) topology the satellites relay over.
//
// Conventions (../../../docs/services.md, ../../../docs/conventions.md, and
// orbit_model.isl, which services/testdata/isl_vectors.json proves this
// package agrees with): satellite index i = p*S + k (plane p, slot k, S = T/P).
// +Grid links each satellite to its in-plane predecessor and successor and to
// the same slot in the two neighbouring planes; for walker-star there is no
// link across the seam between plane P-1 and plane 0 (counter-rotating
// planes). Without a Schedule this topology does not depend on time; with one
// (schedule.go) cross-plane links switch off above a latitude cut-off, snapshot
// by snapshot, and every query answers for the scenario time it is given.
package constellation

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/satpage/satpage/services/internal/errs"
)

// Kind is the Walker pattern: delta (ascending nodes over 360 deg) or star (over 180 deg).
type Kind string

const (
	Delta Kind = "walker"
	Star  Kind = "walker-star"
)

// Spec is a Walker constellation T/P/F at an altitude and inclination.
type Spec struct {
	Kind           Kind
	Satellites     int // T
	Planes         int // P
	Phasing        int // F
	AltitudeKm     float64
	InclinationDeg float64
}

// PerPlane is S = T/P.
func (s Spec) PerPlane() int { return s.Satellites / s.Planes }

// String gives the spec back in the notation ParseSpec reads.
func (s Spec) String() string {
	return fmt.Sprintf("%s:%d/%d/%d:%s:%s", s.Kind, s.Satellites, s.Planes, s.Phasing,
		strconv.FormatFloat(s.AltitudeKm, 'f', -1, 64), strconv.FormatFloat(s.InclinationDeg, 'f', -1, 64))
}

// MaxSatellites bounds T so that a hostile spec cannot make a node allocate
// an all-pairs table of absurd size (1e4^2 uint16 = 200 MB is already a lot).
const MaxSatellites = 4096

// ParseSpec reads `walker:T/P/F:ALT_KM:INC_DEG` or `walker-star:T/P/F:ALT_KM:INC_DEG`.
func ParseSpec(text string) (Spec, error) {
	parts := strings.Split(strings.TrimSpace(text), ":")
	if len(parts) != 4 {
		return Spec{}, fmt.Errorf("constellation %q: want walker[-star]:T/P/F:ALT_KM:INC_DEG: %w", text, errs.ErrInvalid)
	}
	var s Spec
	switch Kind(parts[0]) {
	case Delta, Star:
		s.Kind = Kind(parts[0])
	default:
		return Spec{}, fmt.Errorf("constellation %q: kind %q is not walker or walker-star: %w", text, parts[0], errs.ErrInvalid)
	}
	tpf := strings.Split(parts[1], "/")
	if len(tpf) != 3 {
		return Spec{}, fmt.Errorf("constellation %q: %q is not T/P/F: %w", text, parts[1], errs.ErrInvalid)
	}
	ints := make([]int, 3)
	for i, f := range tpf {
		v, err := strconv.Atoi(f)
		if err != nil {
			return Spec{}, fmt.Errorf("constellation %q: %q is not an integer: %w", text, f, errs.ErrInvalid)
		}
		ints[i] = v
	}
	s.Satellites, s.Planes, s.Phasing = ints[0], ints[1], ints[2]
	var err error
	if s.AltitudeKm, err = strconv.ParseFloat(parts[2], 64); err != nil {
		return Spec{}, fmt.Errorf("constellation %q: altitude %q is not a number: %w", text, parts[2], errs.ErrInvalid)
	}
	if s.InclinationDeg, err = strconv.ParseFloat(parts[3], 64); err != nil {
		return Spec{}, fmt.Errorf("constellation %q: inclination %q is not a number: %w", text, parts[3], errs.ErrInvalid)
	}
	return s, s.Validate()
}

// Validate checks T, P, F, altitude and inclination, quoting the bad value.
func (s Spec) Validate() error {
	switch {
	case s.Satellites < 1 || s.Satellites > MaxSatellites:
		return fmt.Errorf("constellation %s: T = %d outside [1, %d]: %w", s, s.Satellites, MaxSatellites, errs.ErrInvalid)
	case s.Planes < 1 || s.Satellites%s.Planes != 0:
		return fmt.Errorf("constellation %s: P = %d does not divide T = %d: %w", s, s.Planes, s.Satellites, errs.ErrInvalid)
	case s.Phasing < 0 || s.Phasing >= s.Planes:
		return fmt.Errorf("constellation %s: F = %d outside [0, P-1 = %d]: %w", s, s.Phasing, s.Planes-1, errs.ErrInvalid)
	case !(s.AltitudeKm > 0):
		return fmt.Errorf("constellation %s: altitude %v km is not positive: %w", s, s.AltitudeKm, errs.ErrInvalid)
	case !(s.InclinationDeg >= 0 && s.InclinationDeg <= 180):
		return fmt.Errorf("constellation %s: inclination %v deg outside [0, 180]: %w", s, s.InclinationDeg, errs.ErrInvalid)
	}
	return nil
}
