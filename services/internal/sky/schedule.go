package sky

import (
	"fmt"
	"math"

	"github.com/satpage/satpage/services/internal/errs"
)

// WGS84 (orbit_model.constants.WGS84_A_KM, WGS84_F).
const (
	wgs84AKm = 6378.137
	wgs84F   = 1 / 298.257223563
)

// Handover is one entry of a place's schedule, in the form of `satpage orbit
// handovers --json`: from TimeNs on, Satellite serves (-1: none is above the
// minimum elevation). Forced: decided between two reallocation instants because
// the serving satellite set (or a satellite rose after an outage).
type Handover struct {
	TimeNs    int64 `json:"time_ns"`
	Satellite int32 `json:"satellite"`
	Forced    bool  `json:"forced,omitempty"`
}

// Place follows the serving satellite of one ground point, step by step from
// the ephemeris' first knot, under the file's policy: the same decision at the
// same step times as orbit_model's handover kernel (handover.py `_sweep`):
// visible means sin(elevation) >= sin(min elevation) from the WGS84 normal;
// highest = largest sin(elevation), nearest = shortest range, ties to the
// lowest index; sticky keeps the serving satellite while it is visible. Under
// scheduled reallocation (the ephemeris' IntervalNs) the policy picks afresh at
// each instant and the first step, the assignment holds between instants, and a
// pick forced by the server setting is marked. Not safe for concurrent use (the
// gateway holds one per session, under its lock).
type Place struct {
	LatDeg, LonDeg float64
	g, up          [3]float64
	step           int64 // last step decided (-1: none yet)
	serving        int32
	Schedule       []Handover
	buf            []float64
	// longest: visibility of the steps from visBase on, kept for the look-ahead.
	visBase int64
	vis     [][]bool
}

// NewPlace is a ground point at height 0 on the WGS84 ellipsoid.
func NewPlace(latDeg, lonDeg float64) (*Place, error) {
	if !(latDeg >= -90 && latDeg <= 90) {
		return nil, fmt.Errorf("latitude %v deg is outside -90..90: %w", latDeg, errs.ErrInvalid)
	}
	if !(lonDeg >= -180 && lonDeg <= 360) {
		return nil, fmt.Errorf("longitude %v deg is outside -180..360: %w", lonDeg, errs.ErrInvalid)
	}
	lat, lon := latDeg*math.Pi/180, lonDeg*math.Pi/180
	e2 := wgs84F * (2 - wgs84F)
	n := wgs84AKm / math.Sqrt(1-e2*math.Sin(lat)*math.Sin(lat))
	p := &Place{LatDeg: latDeg, LonDeg: lonDeg, step: -1, serving: -1}
	p.g = [3]float64{n * math.Cos(lat) * math.Cos(lon), n * math.Cos(lat) * math.Sin(lon), n * (1 - e2) * math.Sin(lat)}
	p.up = [3]float64{math.Cos(lat) * math.Cos(lon), math.Cos(lat) * math.Sin(lon), math.Sin(lat)}
	return p, nil
}

// GroundKm is the place's Earth-fixed position (km): the ground end of its link.
func (p *Place) GroundKm() [3]float64 { return p.g }

// Advance decides every step up to tNs (the steps are T0Ns + k*StepNs) and
// returns the satellite serving at tNs (-1: none visible). Steps already
// decided are not revisited, so a place's schedule only grows.
func (p *Place) Advance(e *Ephemeris, tNs int64) (int32, error) {
	if tNs < e.T0Ns {
		return -1, fmt.Errorf("scenario time %d ns is before the ephemeris starts at %d ns: %w", tNs, e.T0Ns, errs.ErrOutOfRange)
	}
	last := (tNs - e.T0Ns) / e.StepNs
	if p.buf == nil {
		p.buf = make([]float64, 3*e.Satellites)
	}
	sinMin := math.Sin(e.MinElevationDeg * math.Pi / 180)
	if e.Policy == "longest" {
		return p.advanceLongest(e, last, sinMin, tNs)
	}
	for k := p.step + 1; k <= last; k++ {
		t := e.T0Ns + k*e.StepNs
		if err := e.Positions(t, p.buf); err != nil {
			return -1, err
		}
		best, bestVal, curUp := int32(-1), math.Inf(-1), false
		for i := 0; i < e.Satellites; i++ {
			dx, dy, dz := p.buf[3*i]-p.g[0], p.buf[3*i+1]-p.g[1], p.buf[3*i+2]-p.g[2]
			upKm := dx*p.up[0] + dy*p.up[1] + dz*p.up[2]
			rng := math.Sqrt(dx*dx + dy*dy + dz*dz)
			sinEl := upKm / rng
			if sinEl < sinMin {
				continue
			}
			if int32(i) == p.serving {
				curUp = true
			}
			val := sinEl
			if e.Policy == "nearest" {
				val = -rng
			}
			if val > bestVal { // ascending index: ties keep the lower one
				best, bestVal = int32(i), val
			}
		}
		choice, forced := best, false
		switch hold := p.serving >= 0 && curUp; {
		case e.IntervalNs == 0:
			if e.Sticky && hold {
				choice = p.serving
			}
		case k == 0 || e.instant(t):
			// afresh at an instant: not sticky there
		case hold:
			choice = p.serving // the assignment holds between instants
		default:
			forced = true // the server set (or none served): pick at once
		}
		if choice != p.serving || k == 0 {
			p.Schedule = append(p.Schedule, Handover{TimeNs: t, Satellite: choice, Forced: forced && k != 0})
			p.serving = choice
		}
		p.step = k
	}
	return p.ServingAt(tNs), nil
}

// instant reports whether tNs is a reallocation instant PhaseNs + k*IntervalNs.
func (e *Ephemeris) instant(tNs int64) bool {
	return e.IntervalNs > 0 && tNs >= e.PhaseNs && (tNs-e.PhaseNs)%e.IntervalNs == 0
}

// ServingAt is the satellite serving at tNs by the steps decided so far (-1 before them).
func (p *Place) ServingAt(tNs int64) int32 {
	s := int32(-1)
	for _, h := range p.Schedule {
		if h.TimeNs > tNs {
			break
		}
		s = h.Satellite
	}
	return s
}

// advanceLongest decides the steps up to last under "longest": among the
// visible satellites the one whose pass ends last (the first later step it is
// not visible; a pass still up at the ephemeris' last step ends one step past
// it, as orbit_model's window end), ties to the lowest index; sticky keeps the
// serving satellite while it is visible. orbit_model (handover.py `_longest`)
// decides only when a pass rises or the serving one ends; between those steps
// the visible passes and so the choice do not change, so deciding every step
// gives the same schedule.
func (p *Place) advanceLongest(e *Ephemeris, last int64, sinMin float64, tNs int64) (int32, error) {
	nSteps := (e.EndNs()-e.T0Ns)/e.StepNs + 1
	for k := p.step + 1; k <= last; k++ {
		vis, err := p.visible(e, k, sinMin)
		if err != nil {
			return -1, err
		}
		t := e.T0Ns + k*e.StepNs
		hold := p.serving >= 0 && vis[p.serving]
		decide, forced := !(e.Sticky && hold), false
		if e.IntervalNs > 0 {
			fresh := k == 0 || e.instant(t)
			decide, forced = fresh || !hold, !fresh && !hold
		}
		choice := p.serving
		if decide {
			choice = -1
			bestSet := int64(-1)
			for i, up := range vis {
				if !up {
					continue
				}
				set := k + 1
				for ; set < nSteps; set++ {
					v, err := p.visible(e, set, sinMin)
					if err != nil {
						return -1, err
					}
					if !v[i] {
						break
					}
				}
				if set > bestSet { // ascending index: ties keep the lower one
					choice, bestSet = int32(i), set
				}
			}
		}
		if choice != p.serving || k == 0 {
			p.Schedule = append(p.Schedule, Handover{TimeNs: t, Satellite: choice, Forced: forced && k != 0})
			p.serving = choice
		}
		p.step = k
		p.dropVisibleBefore(k)
	}
	return p.ServingAt(tNs), nil
}

// visible reports which satellites are above the minimum elevation at step k
// (k >= the last step decided), computed once per step.
func (p *Place) visible(e *Ephemeris, k int64, sinMin float64) ([]bool, error) {
	if len(p.vis) == 0 {
		p.visBase = k
	}
	for int64(len(p.vis)) <= k-p.visBase {
		t := e.T0Ns + (p.visBase+int64(len(p.vis)))*e.StepNs
		if err := e.Positions(t, p.buf); err != nil {
			return nil, err
		}
		row := make([]bool, e.Satellites)
		for i := range row {
			dx, dy, dz := p.buf[3*i]-p.g[0], p.buf[3*i+1]-p.g[1], p.buf[3*i+2]-p.g[2]
			row[i] = (dx*p.up[0]+dy*p.up[1]+dz*p.up[2])/math.Sqrt(dx*dx+dy*dy+dz*dz) >= sinMin
		}
		p.vis = append(p.vis, row)
	}
	return p.vis[k-p.visBase], nil
}

// dropVisibleBefore forgets the look-ahead rows of steps before k.
func (p *Place) dropVisibleBefore(k int64) {
	if n := k - p.visBase; n > 0 && len(p.vis) > 0 {
		n = min(n, int64(len(p.vis)))
		p.vis = p.vis[n:]
		p.visBase += n
	}
}
