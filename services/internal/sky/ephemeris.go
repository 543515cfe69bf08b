package sky

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"time"

	"github.com/satpage/satpage/services/internal/constellation"
	"github.com/satpage/satpage/services/internal/errs"
)

// Format is the ephemeris file format this package reads (orbit_model.write_ephemeris).
const Format = "satpage-ephemeris/1"

// Header is the JSON line that starts an ephemeris file.
type Header struct {
	Format          string  `json:"format"`
	Constellation   string  `json:"constellation"`
	Epoch           string  `json:"epoch"`
	T0Ns            int64   `json:"t0_ns"`
	KnotNs          int64   `json:"knot_ns"`
	Knots           int     `json:"knots"`
	Satellites      int     `json:"satellites"`
	Frame           string  `json:"frame"`
	DType           string  `json:"dtype"`
	Policy          string  `json:"policy"`
	Sticky          bool    `json:"sticky"`
	MinElevationDeg float64 `json:"min_elevation_deg"`
	StepNs          int64   `json:"step_ns"`
	// IntervalNs > 0: scheduled reallocation at PhaseNs + k*IntervalNs from the
	// epoch (orbit_model's handover kernel; Place.Advance). Absent: none.
	IntervalNs int64 `json:"interval_ns,omitempty"`
	PhaseNs    int64 `json:"phase_ns,omitempty"`
	// QuantumM is the rounding of a compressed body's positions, metres
	// (DType delta5-*-zlib; orbit_model.write_ephemeris(compress=True)).
	QuantumM float64 `json:"quantum_m,omitempty"`
}

// Ephemeris is a loaded file: Earth-fixed positions (km) of every satellite at
// knots KnotNs apart from T0Ns, and the handover policy to apply. Read-only
// after Parse, so safe for concurrent use.
type Ephemeris struct {
	Header
	EpochTime time.Time
	pos       []float32 // knots x satellites x 3
}

// MaxEphemerisBytes bounds a file (a year of 4096 satellites at 60 s is 26 GB; a
// gateway holds hours to days: 2 GiB is far above any sane horizon).
const MaxEphemerisBytes = 2 << 30

// ReadEphemeris reads and checks a file written for spec.
func ReadEphemeris(path string, spec constellation.Spec) (*Ephemeris, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("ephemeris %s: %w", path, err)
	}
	e, err := ParseEphemeris(raw, spec)
	if err != nil {
		return nil, fmt.Errorf("ephemeris %s: %w", path, err)
	}
	return e, nil
}

// ParseEphemeris decodes and checks an ephemeris for spec.
func ParseEphemeris(raw []byte, spec constellation.Spec) (*Ephemeris, error) {
	if len(raw) > MaxEphemerisBytes {
		return nil, fmt.Errorf("%d bytes, more than %d: %w", len(raw), MaxEphemerisBytes, errs.ErrInvalid)
	}
	nl := bytes.IndexByte(raw, '\n')
	if nl < 0 {
		return nil, fmt.Errorf("no header line: %w", errs.ErrInvalid)
	}
	var h Header
	if err := json.Unmarshal(raw[:nl], &h); err != nil {
		return nil, fmt.Errorf("header: %v: %w", err, errs.ErrInvalid)
	}
	if h.Format != Format {
		return nil, fmt.Errorf("format %q, want %q: %w", h.Format, Format, errs.ErrInvalid)
	}
	other, err := constellation.ParseSpec(h.Constellation)
	if err != nil {
		return nil, err
	}
	if other != spec {
		return nil, fmt.Errorf("written for %s, not %s: %w", other, spec, errs.ErrInvalid)
	}
	epoch, err := time.Parse(time.RFC3339Nano, h.Epoch)
	if err != nil {
		return nil, fmt.Errorf("epoch %q: %v: %w", h.Epoch, err, errs.ErrInvalid)
	}
	residual, compressed := deltaResiduals[h.DType]
	switch {
	case h.DType != "<f4" && !compressed:
		return nil, fmt.Errorf("dtype %q, want <f4 or delta5-i1-zlib, -i2-, -i4-: %w", h.DType, errs.ErrInvalid)
	case compressed && !(h.QuantumM > 0 && h.QuantumM < math.Inf(1)):
		return nil, fmt.Errorf("quantum %v m of a compressed body: want a positive finite figure: %w", h.QuantumM, errs.ErrInvalid)
	case compressed && h.Knots <= deltaOrder:
		return nil, fmt.Errorf("%d knots: a compressed body needs more than %d: %w", h.Knots, deltaOrder, errs.ErrInvalid)
	case h.Satellites != spec.Satellites:
		return nil, fmt.Errorf("%d satellites, the constellation has %d: %w", h.Satellites, spec.Satellites, errs.ErrInvalid)
	case h.Knots < 4:
		return nil, fmt.Errorf("%d knots, need at least 4 to interpolate: %w", h.Knots, errs.ErrInvalid)
	case h.StepNs <= 0 || h.KnotNs <= 0 || h.KnotNs%h.StepNs != 0:
		return nil, fmt.Errorf("knot step %d ns is not a positive multiple of the handover step %d ns: %w", h.KnotNs, h.StepNs, errs.ErrInvalid)
	case h.T0Ns < 0 || h.T0Ns%h.KnotNs != 0:
		return nil, fmt.Errorf("t0 %d ns is not a non-negative multiple of the knot step %d ns: %w", h.T0Ns, h.KnotNs, errs.ErrInvalid)
	case h.Policy != "highest" && h.Policy != "nearest" && h.Policy != "longest":
		return nil, fmt.Errorf("policy %q: the live service applies highest, nearest or longest: %w", h.Policy, errs.ErrInvalid)
	case !(h.MinElevationDeg >= -90 && h.MinElevationDeg < 90):
		return nil, fmt.Errorf("minimum elevation %v deg is outside -90..90: %w", h.MinElevationDeg, errs.ErrInvalid)
	case h.IntervalNs < 0 || (h.IntervalNs == 0 && h.PhaseNs != 0):
		return nil, fmt.Errorf("reallocation interval %d ns and phase %d ns: the interval must be positive when given: %w",
			h.IntervalNs, h.PhaseNs, errs.ErrInvalid)
	case h.IntervalNs > 0 && !(h.PhaseNs >= 0 && h.PhaseNs < h.IntervalNs):
		return nil, fmt.Errorf("reallocation phase %d ns is outside [0, interval %d ns): %w", h.PhaseNs, h.IntervalNs, errs.ErrInvalid)
	case h.IntervalNs%h.StepNs != 0 || h.PhaseNs%h.StepNs != 0:
		return nil, fmt.Errorf("reallocation interval %d ns and phase %d ns are not multiples of the handover step %d ns: %w",
			h.IntervalNs, h.PhaseNs, h.StepNs, errs.ErrInvalid)
	}
	body := raw[nl+1:]
	if compressed {
		pos, err := inflateDelta(body, h, residual)
		if err != nil {
			return nil, err
		}
		return &Ephemeris{Header: h, EpochTime: epoch, pos: pos}, nil
	}
	want := h.Knots * h.Satellites * 12
	if len(body) != want {
		return nil, fmt.Errorf("%d bytes of positions, want %d (%d knots x %d satellites x 12): %w",
			len(body), want, h.Knots, h.Satellites, errs.ErrInvalid)
	}
	pos := make([]float32, h.Knots*h.Satellites*3)
	for i := range pos {
		v := math.Float32frombits(binary.LittleEndian.Uint32(body[4*i:]))
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return nil, fmt.Errorf("position %d is not finite: %w", i, errs.ErrInvalid)
		}
		pos[i] = v
	}
	return &Ephemeris{Header: h, EpochTime: epoch, pos: pos}, nil
}

// EndNs is the last time the file covers (its last knot).
func (e *Ephemeris) EndNs() int64 { return e.T0Ns + int64(e.Knots-1)*e.KnotNs }

// Position is satellite sat's position (km) at tNs, interpolated as Positions
// does, for one satellite only (the link emulator asks two per message).
func (e *Ephemeris) Position(sat int, tNs int64) ([3]float64, error) {
	var out [3]float64
	if tNs < e.T0Ns || tNs > e.EndNs() {
		return out, fmt.Errorf("scenario time %d ns is outside the ephemeris [%d, %d] ns: %w", tNs, e.T0Ns, e.EndNs(), errs.ErrOutOfRange)
	}
	if sat < 0 || sat >= e.Satellites {
		return out, fmt.Errorf("satellite %d is outside 0..%d: %w", sat, e.Satellites-1, errs.ErrInvalid)
	}
	k0, l := e.lagrange(tNs)
	n := 3 * e.Satellites
	for d := range out {
		for j := range l {
			out[d] += l[j] * float64(e.pos[(k0+j)*n+3*sat+d])
		}
	}
	return out, nil
}

// lagrange is the first of the 4 knots around tNs and their weights.
func (e *Ephemeris) lagrange(tNs int64) (int, [4]float64) {
	rel := tNs - e.T0Ns
	k := int(rel / e.KnotNs) // knot at or before t
	k0 := min(max(k-1, 0), e.Knots-4)
	s := float64(rel-int64(k0)*e.KnotNs) / float64(e.KnotNs) // position in knots from k0
	// Lagrange basis on nodes 0, 1, 2, 3
	return k0, [4]float64{-(s - 1) * (s - 2) * (s - 3) / 6, s * (s - 2) * (s - 3) / 2,
		-s * (s - 1) * (s - 3) / 2, s * (s - 1) * (s - 2) / 6}
}

// Positions fills out (satellites x 3, km) with the positions at tNs, by
// 4-point Lagrange interpolation over the knots around it (within 3.2 m of
// orbit_model's positions at 60 s knots for 500 km orbits; docs/live.md).
func (e *Ephemeris) Positions(tNs int64, out []float64) error {
	if tNs < e.T0Ns || tNs > e.EndNs() {
		return fmt.Errorf("scenario time %d ns is outside the ephemeris [%d, %d] ns: %w", tNs, e.T0Ns, e.EndNs(), errs.ErrOutOfRange)
	}
	if len(out) != 3*e.Satellites {
		return fmt.Errorf("out holds %d values, want %d: %w", len(out), 3*e.Satellites, errs.ErrInvalid)
	}
	k0, l := e.lagrange(tNs)
	l0, l1, l2, l3 := l[0], l[1], l[2], l[3]
	n := 3 * e.Satellites
	p0, p1, p2, p3 := e.pos[k0*n:(k0+1)*n], e.pos[(k0+1)*n:(k0+2)*n], e.pos[(k0+2)*n:(k0+3)*n], e.pos[(k0+3)*n:(k0+4)*n]
	for i := range out {
		out[i] = l0*float64(p0[i]) + l1*float64(p1[i]) + l2*float64(p2[i]) + l3*float64(p3[i])
	}
	return nil
}

// deltaOrder is the order of the differences a compressed body stores.
const deltaOrder = 5

// deltaResiduals maps a compressed body's dtype to the bytes of one residual.
var deltaResiduals = map[string]int{"delta5-i1-zlib": 1, "delta5-i2-zlib": 2, "delta5-i4-zlib": 4}

// inflateDelta decodes a compressed body (orbit_model.io, module docstring):
// per satellite and axis, the first value of the 0th..4th differences (int32)
// and the 5th differences (residual bytes each); integers of h.QuantumM metres.
func inflateDelta(body []byte, h Header, residual int) ([]float32, error) {
	zr, err := zlib.NewReader(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("compressed positions: %v: %w", err, errs.ErrInvalid)
	}
	row := 4*deltaOrder + (h.Knots-deltaOrder)*residual
	want := int64(h.Satellites) * 3 * int64(row)
	raw, err := io.ReadAll(io.LimitReader(zr, want+1)) // +1: a longer stream is refused below
	if err != nil {
		return nil, fmt.Errorf("compressed positions: %v: %w", err, errs.ErrInvalid)
	}
	if int64(len(raw)) != want {
		return nil, fmt.Errorf("%d bytes of inflated positions, want %d (%d series x %d): %w",
			len(raw), want, h.Satellites*3, row, errs.ErrInvalid)
	}
	pos := make([]float32, h.Knots*h.Satellites*3)
	x := make([]int64, h.Knots) // one series, reused
	km := h.QuantumM / 1000
	for series := range h.Satellites * 3 {
		r := raw[series*row : (series+1)*row]
		var heads [deltaOrder]int64
		for j := range heads {
			heads[j] = int64(int32(binary.LittleEndian.Uint32(r[4*j:])))
		}
		d := r[4*deltaOrder:]
		for k := range h.Knots - deltaOrder {
			switch residual {
			case 1:
				x[deltaOrder+k] = int64(int8(d[k]))
			case 2:
				x[deltaOrder+k] = int64(int16(binary.LittleEndian.Uint16(d[2*k:])))
			default:
				x[deltaOrder+k] = int64(int32(binary.LittleEndian.Uint32(d[4*k:])))
			}
		}
		// x_j = cumulative sum of [heads[j], x_{j+1}...], from j = 4 down to 0,
		// in place: the j-th differences occupy x[j:].
		for j := deltaOrder - 1; j >= 0; j-- {
			x[j] = heads[j]
			for k := j + 1; k < h.Knots; k++ {
				x[k] += x[k-1]
			}
		}
		sat, axis := series/3, series%3
		for k, v := range x {
			pos[(k*h.Satellites+sat)*3+axis] = float32(float64(v) * km)
		}
	}
	return pos, nil
}
