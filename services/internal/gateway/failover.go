package gateway

// Failover (docs/faults.md): a request the serving satellite cannot answer
// because it is dead (Unavailable) is not failed: the first live satellite
// behind it in its plane takes the session over (node TakeOver: from the
// newest copy of the dead satellite's state, which with R >= 2 holds every
// acknowledged change) and the request is sent again there, with the same
// request id, so it acts once. The stand-in serves the rest of the visit; the
// next scheduled handover starts from it. A handover whose next satellite is
// dead goes to the first live satellite behind that one instead (the stand-in
// the placement rule gives a dead slot), and so does a new session whose
// first satellite is dead (openFirst). With R = 1, or when the satellite
// only looked dead, the satellite asked refuses (FailedPrecondition); the
// request is sent to the serving satellite again after a wait, up to
// forwardRetries times within its deadline, and then fails with its first error.

import (
	"context"
	"fmt"
	"slices"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/errs"
	"github.com/satpage/satpage/services/internal/liveness"
	"github.com/satpage/satpage/services/internal/replica"
)

const (
	// takeOverTimeout bounds one takeover. It runs to its end even when the
	// request that found the satellite dead gives up first: a retry finds it done.
	takeOverTimeout = 10 * time.Second
	// standIns is how many satellites behind a dead one are asked, nearest
	// first (the next is asked when one is dead too).
	standIns = 3
	// probeTimeout bounds one probe of whether a satellite is alive (a miss,
	// not a death: see alive).
	probeTimeout = liveness.ProbeTimeout
)

// mayBeDead reports whether err, from a call to a satellite, may mean that
// the satellite is dead (its connection is refused or broke), or that it was
// fenced (STALE_EPOCH: it looked dead, and the session may have been taken
// over from it meanwhile).
func mayBeDead(err error) bool {
	return status.Code(err) == codes.Unavailable || errs.Has(err, errs.ErrStaleEpoch)
}

// fencedRetry is how long a request that a fenced satellite refused waits
// before it is sent there again (the satellite restores from its copies:
// milliseconds on loopback).
const fencedRetry = 250 * time.Millisecond

// forwardRetries: a serving satellite that failed a request as a dead one
// does but that no satellite behind took over is asked again after waits of
// 0.25, 0.5, 1 and 2 s (3.75 s in all): a satellite back from a restart at a
// new address is reached once the connection has looked its name up again
// (make e2e-swarm: accesses failed "Error while dialing" 6 s after the
// killed satellite's return, when one try was all they had).
const forwardRetries = 4

// handOverRetries: a handover the serving satellite refused because its
// detector holds the next satellite dead, while the gateway's holds it alive,
// is sent again after waits of 0.25, 0.5, 1, 2, 2 and 2 s (7.75 s in all):
// a satellite back in a new pod is reached by the serving one once its
// re-probe (every 2 s) finds the new pod's name, which the cluster DNS may
// answer "no such host" for its negative-cache time (5 s) after the pod's
// first calls (make e2e-k8s: a handover 8 s after a forced pod deletion,
// refused "satellite 14 is down: no ISL route", failed the replay).
const handOverRetries = 6

// standIn makes satellite at serve visit v of s in place of the scheduled one.
func (s *session) standIn(v int, at uint32) {
	s.visits = slices.Clone(s.visits) // the registered schedule may be shared
	s.visits[v] = &satpagev1.Visit{Satellite: at, StartNs: s.visits[v].StartNs}
}

// framesFromCopy asks the satellites behind dead, nearest first, for the
// frames of session in their copy of dead's state (a past satellite of the
// trail that is down: its copy is synchronous, so the count is the one dead
// would give). cause is returned when no copy answers (R = 1).
func (g *Gateway) framesFromCopy(ctx context.Context, session string, dead uint32, cause error) (*satpagev1.SessionFramesResponse, error) {
	spec := g.grid.Spec()
	for j := 1; j <= standIns && j < spec.PerPlane(); j++ {
		c, err := g.peers.Satellite(replica.Behind(spec, dead, j))
		if err != nil {
			return nil, cause
		}
		f, err := c.SessionFrames(ctx, &satpagev1.SessionFramesRequest{SessionId: session, CopyOf: &dead})
		if err == nil {
			return f, nil
		}
		// dead too, or no in-sync copy there (FailedPrecondition): the next one
		g.log.DebugContext(ctx, "no copy to count frames", "session", session, "dead", dead, "err", err)
	}
	return nil, cause
}

// openFirst opens s's page table at its first serving satellite or, when
// that one is dead, at the first live satellite behind it, which then serves
// the first visit (a new session has nothing to lose there; the stand-in is
// the one a handover to the dead satellite would take). s is locked.
func (g *Gateway) openFirst(ctx context.Context, s *session) error {
	open := func(at uint32) error {
		c, err := g.peers.Satellite(at)
		if err != nil {
			return err
		}
		_, err = c.OpenSession(ctx, &satpagev1.OpenSessionRequest{SessionId: s.id})
		return err
	}
	first := s.visits[0].Satellite
	err := open(first)
	if err == nil || !mayBeDead(err) || g.alive(ctx, first) {
		return err
	}
	spec := g.grid.Spec()
	for j := 1; j <= standIns && j < spec.PerPlane(); j++ {
		at := replica.Behind(spec, first, j)
		e := open(at)
		if e == nil {
			s.standIn(0, at)
			g.m.Takeovers.WithLabelValues("open").Inc()
			g.log.WarnContext(ctx, "session opened at a stand-in of its dead first satellite", "session", s.id, "dead", first, "at", at)
			return nil
		}
		if !mayBeDead(e) {
			return e
		}
	}
	return err
}

// alive reports whether satellite i answers (any answer but Unavailable).
// One probe that times out proves nothing on a loaded machine: the gateway's
// detector holds i dead only when it refuses, or stays silent through
// liveness.SilentMisses probes (liveness.Detector.Confirm); a satellite it
// holds dead is probed again first, since it may have come back.
func (g *Gateway) alive(ctx context.Context, i uint32) bool {
	if g.dead.SatelliteDown(i) {
		return !g.dead.Recheck(ctx, i)
	}
	return !g.dead.Confirm(ctx, i)
}

// probe is the gateway detector's probe of satellite i: nil for any answer
// alive() counted as life (whatever its code), the call's error when it
// failed as a dead or fenced satellite's does, marked errs.ErrSilent when no
// answer came in time (a miss, not a death).
func (g *Gateway) probe(ctx context.Context, i uint32) error {
	c, err := g.peers.Satellite(i)
	if err != nil {
		return err
	}
	_, err = c.SessionFrames(ctx, &satpagev1.SessionFramesRequest{SessionId: "-"})
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil || status.Code(err) == codes.DeadlineExceeded || g.unanswered(i):
		return fmt.Errorf("satellite %d: %w: %w", i, errs.ErrSilent, err)
	case mayBeDead(err):
		return err
	}
	return nil
}

// unanswered reports whether the peers' last call to i ran out of its
// deadline (peers.Pool.Unanswered), when the peers keep that.
func (g *Gateway) unanswered(i uint32) bool {
	u, ok := g.peers.(interface{ Unanswered(i uint32) bool })
	return ok && u.Unanswered(i)
}
