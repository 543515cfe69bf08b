package fsm

import (
	"fmt"

	"github.com/satpage/satpage/services/internal/constellation"
	"github.com/satpage/satpage/services/internal/errs"
	"github.com/satpage/satpage/services/internal/replica"
)

// Answer is what a satellite said when asked whether it serves a session.
type Answer int

const (
	NotServing Answer = iota
	Serving
	Down // no answer (dead, paused, cut off): it may serve the session
)

// Probe is one satellite to ask where a session is: Visit's scheduled
// satellite (StandIn 0) or the StandIn-th satellite behind it, which serves
// the visit after a takeover.
type Probe struct {
	Visit   int
	Sat     uint32
	StandIn int
}

// Plan is whom to ask where a session with visits is at visit target: newest
// visit first; within a visit the stand-ins deepest first (a session taken
// over moves only backwards in the plane, so the deepest one serving is the
// newest server; a resumed primary that was taken over may still believe it
// serves), then the scheduled satellite. Each satellite is asked once (its
// first place in the order).
func Plan(p Plane, visits []Visit, target int) []Probe {
	var plan []Probe
	seen := map[uint32]bool{}
	add := func(pr Probe) {
		if !seen[pr.Sat] {
			seen[pr.Sat] = true
			plan = append(plan, pr)
		}
	}
	for v := target; v >= 0; v-- {
		sat := visits[v].Satellite
		for j := p.standIns(); j >= 1; j-- {
			add(Probe{Visit: v, Sat: p.Behind(sat, j), StandIn: j})
		}
		add(Probe{Visit: v, Sat: sat})
	}
	return plan
}

// Locate decides from the answers to a prefix of plan (asked in order) where
// the session is: the probe that serves it (done, found); or, once every
// satellite has answered and none serves it, the silent ones in plan order
// (done, not found): the session is at one of them, which a takeover moves it
// off; none silent: errs.ErrUnknownSession (the session ended or expired).
// done is false while more answers are needed.
func Locate(plan []Probe, answers []Answer) (found bool, at Probe, silent []Probe, done bool, err error) {
	for i, a := range answers {
		switch a {
		case Serving:
			return true, plan[i], nil, true, nil
		case Down:
			silent = append(silent, plan[i])
		}
	}
	if len(answers) < len(plan) {
		return false, Probe{}, nil, false, nil
	}
	if len(silent) == 0 {
		return false, Probe{}, nil, true, fmt.Errorf("no satellite of the session's schedule holds its page table (it ended or expired): %w", errs.ErrUnknownSession)
	}
	return false, Probe{}, silent, true, nil
}

// PlaneOf is spec's geometry with standIns stand-ins per dead satellite.
func PlaneOf(spec constellation.Spec, standIns int) Plane {
	return Plane{PerPlane: spec.PerPlane(), StandIns: standIns,
		Behind: func(sat uint32, j int) uint32 { return replica.Behind(spec, sat, j) }}
}
