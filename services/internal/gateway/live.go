package gateway

// Live sessions (docs/live.md): opened by location, timed by the constellation
// clock, handed over by the gateway when the ephemeris says the serving
// satellite changes. Idle sessions of both kinds end by ExpireIdle
// (security.go). Replay sessions are untouched.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/constellation"
	"github.com/satpage/satpage/services/internal/errs"
	"github.com/satpage/satpage/services/internal/sky"
)

// LiveOptions turn live mode on.
type LiveOptions struct {
	Clock         *sky.Clock
	Ephemeris     *sky.Ephemeris
	EphemerisPath string             // re-read when its modification time changes ("" = never)
	Spec          constellation.Spec // what a re-read file must be written for
	// PushLeadNs: push-ahead copies a visit's pages to the next serving satellite
	// this long (scenario ns) before the handover (pushlead.go); 0: at the handover.
	PushLeadNs int64
}

// live is the gateway's live-mode state.
type live struct {
	clock *sky.Clock
	eph   atomic.Pointer[sky.Ephemeris]
	path  string
	spec  constellation.Spec
	lead  int64 // push-ahead lead, scenario ns

	mu   sync.Mutex // guards seen (reloads run one at a time)
	seen time.Time  // modification time of the file last read
}

// liveSession is what a live session adds to a session (guarded by the session's mu).
type liveSession struct {
	place  *sky.Place
	synced int      // entries of place.Schedule already turned into visits
	lastNs int64    // latest scenario time used (times never go back within a session)
	ahead  *copied  // the copy sent ahead for the next handover (push-ahead with a lead)
	strays []uint32 // satellites holding copies never claimed (swept when the session ends)
}

// liveIDPrefix starts every live session id: live.<strategy>.<lat_e6>.<lon_e6>.<random>.
const liveIDPrefix = "live."

var strategyCodes = map[satpagev1.Strategy]string{
	satpagev1.Strategy_STRATEGY_ON_DEMAND:  "od",
	satpagev1.Strategy_STRATEGY_PROACTIVE:  "pr",
	satpagev1.Strategy_STRATEGY_PUSH_AHEAD: "pa",
}

func newLive(o *LiveOptions) (*live, error) {
	if o.Clock == nil || o.Ephemeris == nil {
		return nil, fmt.Errorf("live mode needs a clock and an ephemeris: %w", errs.ErrInvalid)
	}
	if o.PushLeadNs < 0 {
		return nil, fmt.Errorf("push-ahead lead %d ns is negative: %w", o.PushLeadNs, errs.ErrInvalid)
	}
	l := &live{clock: o.Clock, path: o.EphemerisPath, spec: o.Spec, lead: o.PushLeadNs}
	l.eph.Store(o.Ephemeris)
	if fi, err := os.Stat(o.EphemerisPath); o.EphemerisPath != "" && err == nil {
		l.seen = fi.ModTime()
	}
	return l, nil
}

func liveID(strategy satpagev1.Strategy, latE6, lonE6 int64) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s%s.%d.%d.%s", liveIDPrefix, strategyCodes[strategy], latE6, lonE6, hex.EncodeToString(b[:]))
}

// parseLiveID reads what a live session id carries.
func parseLiveID(id string) (satpagev1.Strategy, float64, float64, error) {
	parts := strings.Split(strings.TrimPrefix(id, liveIDPrefix), ".")
	bad := fmt.Errorf("session %q is not a live session id (live.<strategy>.<lat_e6>.<lon_e6>.<random>): %w", id, errs.ErrUnknownSession)
	if len(parts) != 4 {
		return 0, 0, 0, bad
	}
	var strategy satpagev1.Strategy
	for s, code := range strategyCodes {
		if code == parts[0] {
			strategy = s
		}
	}
	lat, err1 := strconv.ParseInt(parts[1], 10, 64)
	lon, err2 := strconv.ParseInt(parts[2], 10, 64)
	if strategy == 0 || err1 != nil || err2 != nil {
		return 0, 0, 0, bad
	}
	return strategy, float64(lat) / 1e6, float64(lon) / 1e6, nil
}

// OpenLiveSession opens a session for a place: the serving satellite at the
// clock's time opens its page table.
func (g *Gateway) OpenLiveSession(ctx context.Context, req *satpagev1.OpenLiveSessionRequest) (*satpagev1.OpenLiveSessionResponse, error) {
	if g.live == nil {
		return nil, fmt.Errorf("this gateway is not in live mode (no --ephemeris): %w", errs.ErrInvalid)
	}
	strategy := req.Strategy
	if strategy == satpagev1.Strategy_STRATEGY_UNSPECIFIED {
		strategy = satpagev1.Strategy_STRATEGY_ON_DEMAND
	}
	if _, ok := strategyCodes[strategy]; !ok {
		return nil, fmt.Errorf("strategy %d is not on-demand, proactive or push-ahead: %w", strategy, errs.ErrInvalid)
	}
	if math.IsNaN(req.LatDeg) || math.IsNaN(req.LonDeg) {
		return nil, fmt.Errorf("latitude %v, longitude %v: %w", req.LatDeg, req.LonDeg, errs.ErrInvalid)
	}
	latE6, lonE6 := int64(math.Round(req.LatDeg*1e6)), int64(math.Round(req.LonDeg*1e6))
	place, err := sky.NewPlace(float64(latE6)/1e6, float64(lonE6)/1e6)
	if err != nil {
		return nil, err
	}
	id := liveID(strategy, latE6, lonE6)
	t := g.live.clock.NowNs()
	s, err := g.newLiveSession(id, strategy, place, t)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	g.mu.Lock()
	g.sessions[id] = s
	g.mu.Unlock()
	first := s.visits[0].Satellite
	if err := g.openFirst(ctx, s); err != nil {
		g.mu.Lock()
		delete(g.sessions, id)
		g.mu.Unlock()
		return nil, fmt.Errorf("open live session at satellite %d: %w", first, err)
	}
	first = s.visits[0].Satellite // a stand-in when the scheduled one is dead
	g.m.Sessions.Inc()
	out := &satpagev1.OpenLiveSessionResponse{SessionId: id, Satellite: first, ScenarioTimeNs: t}
	if g.sec.issuer != nil { // the session's capability, as RegisterSession gives (docs/security.md)
		tok, exp := g.sec.issuer.Issue(id, g.sec.maxTablePages)
		out.Token, out.TokenExpiresUnixS = tok, exp.Unix()
	}
	return out, nil
}

// newLiveSession builds a session whose visits are the place's schedule from
// the satellite serving at tNs on.
func (g *Gateway) newLiveSession(id string, strategy satpagev1.Strategy, place *sky.Place, tNs int64) (*session, error) {
	s := &session{id: id, strategy: strategy, used: time.Now(),
		live: &liveSession{place: place, lastNs: tNs}}
	sat, err := g.placeAt(place, tNs)
	if err != nil {
		return nil, err
	}
	// The visit starts where the schedule entry serving now starts (a handover step).
	start := place.Schedule[len(place.Schedule)-1].TimeNs
	s.visits = []*satpagev1.Visit{{Satellite: uint32(sat), StartNs: start}}
	s.live.synced = len(place.Schedule)
	return s, nil
}

// placeAt advances a place to tNs and returns the serving satellite; no
// satellite above the minimum elevation, or a time past the ephemeris, is Unavailable.
func (g *Gateway) placeAt(place *sky.Place, tNs int64) (int32, error) {
	e := g.live.eph.Load()
	if tNs > e.EndNs() {
		return -1, fmt.Errorf("scenario time %d ns is past the ephemeris horizon %d ns (refresh the ephemeris file): %w",
			tNs, e.EndNs(), errs.ErrUnavailable)
	}
	sat, err := place.Advance(e, tNs)
	if err != nil {
		return -1, err
	}
	if sat < 0 {
		return -1, fmt.Errorf("no satellite is above %v deg at %v, %v at %d ns: %w",
			e.MinElevationDeg, place.LatDeg, place.LonDeg, tNs, errs.ErrUnavailable)
	}
	return sat, nil
}

// liveTime is the scenario time of a live session's request now (never before
// the session's previous one), with the place's new handovers added as visits.
// Replay sessions get back the time they asked for. s is locked.
func (g *Gateway) liveTime(s *session, asked int64) (int64, error) {
	if s.live == nil {
		return asked, nil
	}
	t := max(g.live.clock.NowNs(), s.live.lastNs)
	s.live.lastNs = t
	return t, g.follow(s, t)
}

// follow turns the place's schedule up to tNs into visits (s locked). The
// place may be decided further ahead (predictNext); those entries wait.
func (g *Gateway) follow(s *session, tNs int64) error {
	_, err := g.placeAt(s.live.place, tNs)
	sched := s.live.place.Schedule
	for ; s.live.synced < len(sched) && sched[s.live.synced].TimeNs <= tNs; s.live.synced++ {
		h := sched[s.live.synced]
		if h.Satellite >= 0 && uint32(h.Satellite) != s.visits[len(s.visits)-1].Satellite {
			s.visits = append(s.visits, &satpagev1.Visit{Satellite: uint32(h.Satellite), StartNs: h.TimeNs})
		}
	}
	return err
}

// use notes pages accessed during the current visit (push-ahead, live or replay).
func (s *session) use(pages ...uint32) {
	if s.strategy != satpagev1.Strategy_STRATEGY_PUSH_AHEAD {
		return
	}
	if s.recent == nil {
		s.recent = map[uint32]struct{}{}
	}
	for _, p := range pages {
		s.recent[p] = struct{}{}
	}
}

// writing notes a write about to be forwarded (before it is: a write whose
// reply is lost may still have changed the page): a copy of it sent ahead is
// no longer valid.
func (s *session) writing(page uint32) {
	if s.live != nil && s.live.ahead != nil {
		s.live.ahead.dirty(page)
	}
}

// pushAhead moves the pages used during the visit that just ended to the new
// serving satellite, right after its page table (s locked).
func (g *Gateway) pushAhead(ctx context.Context, s *session, to uint32, at int64) error {
	if len(s.recent) == 0 {
		return nil
	}
	pages := make([]uint32, 0, len(s.recent))
	for p := range s.recent {
		pages = append(pages, p)
	}
	clear(s.recent)
	sort.Slice(pages, func(i, j int) bool { return pages[i] < pages[j] })
	c, err := g.peers.Satellite(to)
	if err != nil {
		return err
	}
	m, err := c.MovePages(ctx, &satpagev1.MovePagesRequest{SessionId: s.id, ScenarioTimeNs: at, Pages: pages})
	if err != nil {
		return fmt.Errorf("push-ahead of session %q to satellite %d: %w", s.id, to, err)
	}
	s.stats.PushMoves += uint64(m.Moved)
	s.stats.PushHops += m.PageHops
	return nil
}

// recoverLive rebuilds a live session this gateway does not know (it restarted,
// or another replica opened it) from its id: the place's schedule up to now,
// and the satellite that holds the page table, asked newest visit first.
func (g *Gateway) recoverLive(ctx context.Context, id string) (*session, error) {
	strategy, lat, lon, err := parseLiveID(id)
	if err != nil {
		return nil, err
	}
	place, err := sky.NewPlace(lat, lon)
	if err != nil {
		return nil, fmt.Errorf("session %q: %v: %w", id, err, errs.ErrUnknownSession)
	}
	t := g.live.clock.NowNs()
	if _, err := g.placeAt(place, t); err != nil {
		return nil, err
	}
	var visits []*satpagev1.Visit
	for _, h := range place.Schedule {
		if h.Satellite >= 0 && (len(visits) == 0 || uint32(h.Satellite) != visits[len(visits)-1].Satellite) {
			visits = append(visits, &satpagev1.Visit{Satellite: uint32(h.Satellite), StartNs: h.TimeNs})
		}
	}
	const maxProbe = 64
	for v := len(visits) - 1; v >= 0 && v >= len(visits)-maxProbe; v-- {
		c, err := g.peers.Satellite(visits[v].Satellite)
		if err != nil {
			return nil, err
		}
		f, err := c.SessionFrames(ctx, &satpagev1.SessionFramesRequest{SessionId: id})
		if err != nil || !f.Serving {
			continue
		}
		s := &session{id: id, strategy: strategy, visits: visits[v:], used: time.Now(),
			live: &liveSession{place: place, synced: len(place.Schedule), lastNs: t}}
		g.mu.Lock()
		if old, ok := g.sessions[id]; ok { // recovered meanwhile by another request
			g.mu.Unlock()
			return old, nil
		}
		g.sessions[id] = s
		g.mu.Unlock()
		g.m.Sessions.Inc()
		g.log.InfoContext(ctx, "live session rebuilt from its id", "session", id, "satellite", visits[v].Satellite)
		return s, nil
	}
	return nil, fmt.Errorf("session %q: no satellite of its schedule holds its page table (it ended or expired): %w", id, errs.ErrUnknownSession)
}

// Clock reports the constellation clock and the ephemeris.
func (g *Gateway) Clock(_ context.Context, _ *satpagev1.ClockRequest) (*satpagev1.ClockResponse, error) {
	if g.live == nil {
		return nil, fmt.Errorf("this gateway is not in live mode (no --ephemeris): %w", errs.ErrInvalid)
	}
	e := g.live.eph.Load()
	return &satpagev1.ClockResponse{Epoch: g.live.clock.Epoch.UTC().Format(time.RFC3339Nano), Speed: g.live.clock.Speed,
		NowNs: g.live.clock.NowNs(), Constellation: e.Constellation, EphemerisEndNs: e.EndNs(), StepNs: e.StepNs,
		Policy: e.Policy, Sticky: e.Sticky, MinElevationDeg: e.MinElevationDeg,
		PushLeadNs: g.live.lead, ReallocationIntervalNs: e.IntervalNs, ReallocationPhaseNs: e.PhaseNs}, nil
}

// RunLive performs live sessions' handovers when they are due and re-reads
// the ephemeris file when it changes (checked every 5 s), until ctx ends.
func (g *Gateway) RunLive(ctx context.Context) {
	if g.live == nil {
		return
	}
	e := g.live.eph.Load()
	// One tick per handover step of constellation time, between 10 ms and 1 s of wall time.
	tick := min(max(time.Duration(float64(e.StepNs)/g.live.clock.Speed), 10*time.Millisecond), time.Second)
	t := time.NewTicker(tick)
	defer t.Stop()
	lastCheck := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		g.LiveTick(ctx)
		if g.live.path != "" && time.Since(lastCheck) > 5*time.Second {
			lastCheck = time.Now()
			if _, err := g.ReloadEphemeris(ctx); err != nil {
				g.log.ErrorContext(ctx, "ephemeris not reloaded", "path", g.live.path, "err", err)
			}
		}
	}
}

// LiveTick is one round of RunLive's work: every live session not busy with a
// request is advanced to the clock's time (its handovers performed). Tests call
// it with a clock they move by hand.
func (g *Gateway) LiveTick(ctx context.Context) {
	g.mu.Lock()
	var live []*session
	for _, s := range g.sessions {
		if s.live != nil {
			live = append(live, s)
		}
	}
	g.mu.Unlock()
	for _, s := range live {
		if !s.mu.TryLock() { // a request is advancing it right now
			continue
		}
		func() {
			defer s.mu.Unlock()
			if s.ended {
				return
			}
			ctx, cancel := context.WithTimeout(ctx, g.rpcTimeout)
			defer cancel()
			t := max(g.live.clock.NowNs(), s.live.lastNs)
			s.live.lastNs = t
			if err := g.follow(s, t); err != nil && !errors.Is(err, errs.ErrUnavailable) {
				g.log.WarnContext(ctx, "live session: schedule", "session", s.id, "err", err)
				return
			}
			if err := g.drive(ctx, s, t, noForward); err != nil {
				g.log.WarnContext(ctx, "live session: handover failed (retried next tick)", "session", s.id, "err", err)
			}
		}()
	}
}

// ReloadEphemeris re-reads the ephemeris file when its modification time
// changed since the last read, and swaps it in when it still describes the
// same epoch, knots and policy (live sessions depend on them); it reports
// whether it swapped. A refreshed file extends the horizon (docs/live.md).
func (g *Gateway) ReloadEphemeris(ctx context.Context) (bool, error) {
	if g.live == nil || g.live.path == "" {
		return false, nil
	}
	fi, err := os.Stat(g.live.path)
	if err != nil {
		return false, fmt.Errorf("ephemeris %s: %w", g.live.path, err)
	}
	g.live.mu.Lock()
	defer g.live.mu.Unlock()
	if !fi.ModTime().After(g.live.seen) {
		return false, nil
	}
	g.live.seen = fi.ModTime()
	e, err := sky.ReadEphemeris(g.live.path, g.live.spec)
	if err != nil {
		return false, err
	}
	old := g.live.eph.Load()
	if e.EpochTime != old.EpochTime || e.T0Ns != old.T0Ns || e.KnotNs != old.KnotNs || e.StepNs != old.StepNs ||
		e.Policy != old.Policy || e.Sticky != old.Sticky || e.MinElevationDeg != old.MinElevationDeg ||
		e.IntervalNs != old.IntervalNs || e.PhaseNs != old.PhaseNs {
		return false, fmt.Errorf("ephemeris %s changes the epoch, t0, steps or policy, which live sessions depend on: %w",
			g.live.path, errs.ErrInvalid)
	}
	g.live.eph.Store(e)
	g.log.InfoContext(ctx, "ephemeris reloaded", "path", g.live.path, "end_ns", e.EndNs())
	return true, nil
}
