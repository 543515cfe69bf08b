package gateway

// Push-ahead with a lead (docs/live.md): lead before a handover the serving
// satellite copies the pages used so far in the visit to the next serving
// satellite, predicted from the place's schedule (CopyAhead); they stay its
// own, so accesses until the handover are hits there. The gateway, which
// forwards every write of the session, notes the pages written after the copy.
// At the handover the new satellite claims the copies not written since
// (ClaimPages: no second transfer), and the rest of the visit's pages (written
// since, or first used after the copy) move as at a push without a lead
// (pushAhead). pager.PushAhead(staged=True) counts exactly this.

import (
	"context"
	"maps"
	"slices"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
)

// copied is a copy sent ahead for one handover (guarded by the session's mu).
type copied struct {
	from, to uint32 // serving satellite then, and the one predicted next
	forNs    int64  // the handover it is for
	pages    map[uint32]bool
}

// dirty marks a page written after the copy: its copy is not claimed.
func (c *copied) dirty(page uint32) {
	if _, ok := c.pages[page]; ok {
		c.pages[page] = false
	}
}

// leading reports whether s pushes ahead with a lead.
func (g *Gateway) leading(s *session) bool {
	return s.live != nil && g.live.lead > 0 && s.strategy == satpagev1.Strategy_STRATEGY_PUSH_AHEAD
}

// predictNext is the next handover of s (satellite and time) if it falls
// within the lead of tNs: the place's schedule decided lead ahead (the same
// sweep that will perform it, so exact while the ephemeris stays the same).
// Past the ephemeris' horizon there is no prediction. s is locked.
func (g *Gateway) predictNext(s *session, tNs int64) (uint32, int64, bool) {
	if !g.leading(s) {
		return 0, 0, false
	}
	cur := s.visits[s.cur]
	if s.cur+1 < len(s.visits) {
		next := s.visits[s.cur+1]
		return next.Satellite, next.StartNs, next.StartNs-g.live.lead <= tNs
	}
	e := g.live.eph.Load()
	horizon := min(tNs+g.live.lead, e.EndNs())
	if _, err := s.live.place.Advance(e, horizon); err != nil {
		return 0, 0, false
	}
	for _, h := range s.live.place.Schedule[s.live.synced:] {
		if h.TimeNs > cur.StartNs && h.Satellite >= 0 && uint32(h.Satellite) != cur.Satellite {
			return uint32(h.Satellite), h.TimeNs, h.TimeNs-g.live.lead <= tNs
		}
	}
	return 0, 0, false
}

// copyAheadIfDue copies the visit's pages to satellite to for the handover at
// atNs once tNs has reached atNs - lead, once per handover. The copy is stamped
// at atNs - lead (not before the visit's start), where pager puts it. A failed
// copy is logged and leaves nothing to claim: the pages then move at the
// handover. s is locked.
func (g *Gateway) copyAheadIfDue(ctx context.Context, s *session, to uint32, atNs, tNs int64) {
	if !g.leading(s) || atNs-g.live.lead > tNs {
		return
	}
	if a := s.live.ahead; a != nil && a.to == to && a.forNs == atNs {
		return
	}
	if a := s.live.ahead; a != nil { // a copy for a handover that did not come
		s.live.strays = append(s.live.strays, a.to)
	}
	from := s.visits[s.cur].Satellite
	a := &copied{from: from, to: to, forNs: atNs, pages: map[uint32]bool{}}
	s.live.ahead = a
	if len(s.recent) == 0 {
		return
	}
	stamp := max(atNs-g.live.lead, s.visits[s.cur].StartNs)
	c, err := g.peers.Satellite(from)
	if err != nil {
		g.log.WarnContext(ctx, "copy ahead: no satellite client", "session", s.id, "from", from, "err", err)
		return
	}
	r, err := c.CopyAhead(ctx, &satpagev1.CopyAheadRequest{SessionId: s.id, ToSatellite: to, ScenarioTimeNs: stamp,
		Pages: slices.Sorted(maps.Keys(s.recent))})
	if err != nil {
		// Part of it may have arrived: those frames are strays at to until claimed or swept.
		s.live.strays = append(s.live.strays, to)
		g.log.WarnContext(ctx, "copy ahead failed: the pages move at the handover", "session", s.id, "from", from, "to", to, "err", err)
		return
	}
	for _, p := range r.Copied {
		a.pages[p] = true
	}
	s.stats.PushMoves += uint64(len(r.Copied))
	s.stats.PushHops += r.PageHops
}

// claimAhead has the new serving satellite to take the copies still valid of
// the handover from -> to at atNs as its own, and leaves the rest of the
// visit's pages to pushAhead. s is locked.
func (g *Gateway) claimAhead(ctx context.Context, s *session, from, to uint32, atNs int64) error {
	if s.live == nil || s.live.ahead == nil {
		return nil
	}
	a := s.live.ahead
	s.live.ahead = nil
	if a.to != to || a.forNs != atNs || a.from != from {
		s.live.strays = append(s.live.strays, a.to)
		return nil
	}
	var claim []uint32
	for p, valid := range a.pages {
		if valid {
			claim = append(claim, p)
		}
	}
	if len(claim) == 0 {
		return nil
	}
	slices.Sort(claim)
	for _, p := range claim {
		delete(s.recent, p)
	}
	c, err := g.peers.Satellite(to)
	if err != nil {
		return err
	}
	r, err := c.ClaimPages(ctx, &satpagev1.ClaimPagesRequest{SessionId: s.id, FromSatellite: from, ScenarioTimeNs: atNs, Pages: claim})
	if err != nil {
		// The handover is done; the pages stay with from (still correct there) and
		// move on demand when used.
		s.live.strays = append(s.live.strays, to)
		g.log.WarnContext(ctx, "claim of the copies sent ahead failed: the pages move on demand", "session", s.id,
			"from", from, "to", to, "err", err)
		return nil
	}
	s.stats.PushMoves += uint64(r.Moved)
	s.stats.PushHops += r.PageHops
	return nil
}

// strayCopies are the satellites that may hold copies of s never claimed, as
// visits for the trail sweep. s is locked.
func (s *session) strayCopies() []*satpagev1.Visit {
	if s.live == nil {
		return nil
	}
	var out []*satpagev1.Visit
	for _, sat := range s.live.strays {
		out = append(out, &satpagev1.Visit{Satellite: sat})
	}
	if a := s.live.ahead; a != nil {
		out = append(out, &satpagev1.Visit{Satellite: a.to})
	}
	return out
}
