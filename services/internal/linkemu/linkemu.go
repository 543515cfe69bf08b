// Package linkemu makes the messages of a deployed constellation wait what the
// sky makes them wait (docs/emulation.md): a routed request crossing an ISL
// waits the link's propagation delay, distance / c at the message's own
// constellation time, plus its serialisation time behind the messages already
// on that directed link (FIFO at the link's capacity); a session's request
// between the gateway and its serving satellite waits the slant range / c.
//
// Positions come from orbit_model's ephemeris (sky.Ephemeris), interpolated at
// each message's time: there is no update cadence. What the machine itself
// adds to a hop (loopback or pod network, TLS, gRPC, scheduling: the
// substrate) is measured (Measure) and subtracted from every wait, never below
// zero, so the end-to-end time is the sky's rather than the sky's plus the
// machine's. The core (Model.Wait) is deterministic: it takes the instant now
// as an argument; timers and gRPC are at the edge (Sleep, the interceptors).
package linkemu

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/satpage/satpage/services/internal/errs"
)

// SpeedOfLightKmS is orbit_model.constants.SPEED_OF_LIGHT_KM_S (the SI definition).
const SpeedOfLightKmS = 299_792.458

// DefaultCapacityGbps is the scenario default of network.isl_capacity_gbps
// (sim/satpage/scenario.py: 100 Gbit/s, SpaceX's figure for a Starlink laser link).
const DefaultCapacityGbps = 100.0

// Positions gives a satellite's Earth-fixed position (km) at a scenario time
// (ns from the epoch); *sky.Ephemeris implements it. A time outside what it
// covers is errs.ErrOutOfRange.
type Positions interface {
	Position(sat int, tNs int64) ([3]float64, error)
}

// Model is the link physics of one process: the positions, the capacity of
// every directed ISL and the queue of each directed link this process sends
// on. Safe for concurrent use.
type Model struct {
	pos        Positions
	nsPerByte  float64       // serialisation time of one byte at the link capacity
	perHop     time.Duration // on-board processing added to every ISL hop, each way
	substrate  atomic.Int64  // ns the machine adds to one hop one way (Measure)
	late       atomic.Int64  // ns a timer fires after its deadline, smoothed (Sleep)
	unemulated atomic.Int64  // messages at times outside the positions: not delayed

	mu   sync.Mutex             // guards free
	free map[link]time.Duration // instant (on the caller's now axis) each link has sent what it holds
}

type link struct{ from, to int32 }

// SetPerHop sets the on-board processing time every ISL hop adds, each way
// (network.per_hop_processing_ms: the engine's term; the machine's own is the
// substrate, subtracted). Set before use.
func (m *Model) SetPerHop(d time.Duration) { m.perHop = max(d, 0) }

// New is the model of links whose ends move as pos says, each directed ISL
// carrying capacityGbps.
func New(pos Positions, capacityGbps float64) (*Model, error) {
	if pos == nil {
		return nil, fmt.Errorf("link emulation needs positions (an ephemeris): %w", errs.ErrInvalid)
	}
	if !(capacityGbps > 0) || math.IsInf(capacityGbps, 0) {
		return nil, fmt.Errorf("ISL capacity %v Gbit/s: want a positive finite figure: %w", capacityGbps, errs.ErrInvalid)
	}
	return &Model{pos: pos, nsPerByte: 8 / capacityGbps, free: map[link]time.Duration{}}, nil
}

// PropagationNs is the one-way delay (ns) of the link from satellite a to
// satellite b at tNs: their distance / c.
func (m *Model) PropagationNs(a, b uint32, tNs int64) (float64, error) {
	pa, err := m.pos.Position(int(a), tNs)
	if err != nil {
		return 0, err
	}
	pb, err := m.pos.Position(int(b), tNs)
	if err != nil {
		return 0, err
	}
	return distanceKm(pa, pb) / SpeedOfLightKmS * 1e9, nil
}

// GroundNs is the one-way delay (ns) between a ground point (Earth-fixed, km:
// sky.Place.GroundKm) and satellite sat at tNs: the slant range / c.
func (m *Model) GroundNs(groundKm [3]float64, sat uint32, tNs int64) (float64, error) {
	p, err := m.pos.Position(int(sat), tNs)
	if err != nil {
		return 0, err
	}
	return distanceKm(p, groundKm) / SpeedOfLightKmS * 1e9, nil
}

func distanceKm(a, b [3]float64) float64 {
	dx, dy, dz := a[0]-b[0], a[1]-b[1], a[2]-b[2]
	return math.Sqrt(dx*dx + dy*dy + dz*dz)
}

// Serialise queues a message of bytes on the directed link from -> to at the
// instant now (any monotonic axis, the same for every call) and returns how
// long from now its last bit leaves: its wait behind the messages queued
// before it (FIFO) plus its own serialisation time at the link's capacity.
func (m *Model) Serialise(from, to uint32, bytes int, now time.Duration) time.Duration {
	tx := time.Duration(math.Round(float64(bytes) * m.nsPerByte))
	l := link{int32(from), int32(to)}
	m.mu.Lock()
	defer m.mu.Unlock()
	start := max(now, m.free[l])
	m.free[l] = start + tx
	if len(m.free) > maxLinks { // links are ISLs: a few per satellite; bound the map regardless
		m.forgetIdle(now)
	}
	return start + tx - now
}

// maxLinks bounds the queue map (a satellite sends on at most 4 ISLs; a gateway on none).
const maxLinks = 1 << 12

// forgetIdle drops the links that are idle at now (m.mu held): their next message starts at once either way.
func (m *Model) forgetIdle(now time.Duration) {
	for l, f := range m.free {
		if f <= now {
			delete(m.free, l)
		}
	}
}

// Wait is what a message of bytes sent from satellite from to satellite to at
// scenario time tNs and at the instant now waits on top of what the machine
// takes: propagation plus serialisation (queue included) plus the per-hop
// processing, less the measured substrate and timer lateness, never below zero.
func (m *Model) Wait(from, to uint32, tNs int64, bytes int, now time.Duration) (time.Duration, error) {
	prop, err := m.PropagationNs(from, to, tNs)
	if err != nil {
		return 0, err
	}
	return m.Less(time.Duration(math.Round(prop)) + m.perHop + m.Serialise(from, to, bytes, now)), nil
}

// Less is physics less what the machine already adds to a hop (substrate and
// timer lateness), never below zero.
func (m *Model) Less(physics time.Duration) time.Duration {
	return max(physics-time.Duration(m.substrate.Load()+m.late.Load()), 0)
}

// SetSubstrate sets what the machine adds to one hop one way (Measure sets it).
func (m *Model) SetSubstrate(d time.Duration) { m.substrate.Store(int64(max(d, 0))) }

// Substrate is the one-way per-hop time of the machine being subtracted.
func (m *Model) Substrate() time.Duration { return time.Duration(m.substrate.Load()) }

// Lateness is how late this process' timers fire, smoothed (subtracted too).
func (m *Model) Lateness() time.Duration { return time.Duration(m.late.Load()) }
