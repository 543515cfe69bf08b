// Package sky is what the live service knows of the sky: the constellation
// clock every daemon shares, the ephemeris orbit_model writes
// (satpage-ephemeris/1, docs/live.md), and the serving satellite of a place
// under a handover policy, decided step by step exactly as orbit_model's
// handover kernel does. It never propagates an orbit: positions come from
// the ephemeris file.
package sky

import (
	"fmt"
	"math"
	"time"

	"github.com/satpage/satpage/services/internal/errs"
)

// Clock is the constellation clock: scenario time t (ns from the epoch) runs
// at Speed times wall time from the instant Start, where it reads StartNs.
// Every daemon given the same three values reads the same t (to the accuracy
// of its host's clock), so no daemon has to talk to another to agree on it.
type Clock struct {
	Epoch   time.Time // t = 0 (the constellation's element epoch)
	Start   time.Time // wall instant at which t = StartNs
	StartNs int64
	Speed   float64 // 1 = real time; 60 = a minute of constellation time per wall second
	now     func() time.Time
}

// NewClock checks the settings. A zero start means the epoch itself (real time
// since the epoch, sped up from there).
func NewClock(epoch, start time.Time, speed float64) (*Clock, error) {
	if !(speed > 0) || speed > 1e6 || math.IsInf(speed, 0) {
		return nil, fmt.Errorf("clock speed %v: want a factor above 0 and at most 1e6: %w", speed, errs.ErrInvalid)
	}
	if epoch.IsZero() {
		return nil, fmt.Errorf("clock epoch is not set: %w", errs.ErrInvalid)
	}
	if start.IsZero() {
		start = epoch
	}
	if start.Before(epoch) {
		return nil, fmt.Errorf("clock start %s is before the epoch %s: %w", start.Format(time.RFC3339), epoch.Format(time.RFC3339), errs.ErrInvalid)
	}
	// Up to the start the clock ran in real time; from there at Speed.
	return &Clock{Epoch: epoch, Start: start, StartNs: int64(start.Sub(epoch)), Speed: speed, now: time.Now}, nil
}

// NowNs is the scenario time now, in ns from the epoch.
func (c *Clock) NowNs() int64 {
	return c.StartNs + int64(float64(c.now().Sub(c.Start))*c.Speed)
}

// Wall is the wall-clock instant at which the scenario clock reads tNs.
func (c *Clock) Wall(tNs int64) time.Time {
	return c.Start.Add(time.Duration(float64(tNs-c.StartNs) / c.Speed))
}

// WallNow is the wall clock the Clock reads.
func (c *Clock) WallNow() time.Time { return c.now() }

// SetNow replaces the wall clock the Clock reads (tests and simulations).
func (c *Clock) SetNow(now func() time.Time) { c.now = now }
