// Package fsm is a gateway session's logic as a deterministic state machine,
// in the spirit of etcd-raft's Ready: given the time and an event, Step
// returns the actions to perform. It does no I/O and reads no clock. The
// driver (package gateway) performs each action (an RPC to a satellite, a
// failure detector's verdict, a wait) and feeds its result back as the next
// event, so one request is a short conversation: Request, then the result of
// each action asked for, until a Reply. Tests run it on a fake clock.
//
// What it decides (docs/faults.md): the handovers due by a request's scenario
// time; a takeover when the serving satellite looks dead; a handover to a
// stand-in when the next satellite is dead, only once the failure detector
// says so (a slow satellite is never replaced); where a session rebuilt from
// its ticket is (Plan, Locate); a relocation when the satellite it was at no
// longer knows it; the expiry of an idle session.
package fsm

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/satpage/satpage/services/internal/errs"
	"github.com/satpage/satpage/services/internal/retry"
)

// Visit is one satellite of a session's schedule, serving from StartNs.
type Visit struct {
	Satellite uint32
	StartNs   int64
}

// Plane is the geometry the stand-ins come from.
type Plane struct {
	PerPlane int
	// StandIns is how many satellites behind a dead one are asked, nearest first.
	StandIns int
	// Behind is the j-th satellite behind sat in its plane (replica.Behind).
	Behind func(sat uint32, j int) uint32
}

func (p Plane) standIns() int { return min(p.StandIns, p.PerPlane-1) }

// Strategy is how pages follow a session (satpagev1.Strategy).
type Strategy int

const (
	OnDemand Strategy = iota
	Proactive
	PushAhead
)

// Config is what a Machine is made of.
type Config struct {
	ID       string
	Visits   []Visit // the registered schedule
	Strategy Strategy
	Plane    Plane
	// Idle: a Tick this long after the last request expires the session (0: never).
	Idle time.Duration
	// FencedRetry is how long a request a fenced satellite refused waits
	// before it is sent there again (when no satellite took the session over).
	FencedRetry time.Duration
	// ForwardRetries is how many times a request is sent again to a serving
	// satellite that failed it as a dead or fenced one does and that no
	// satellite behind took over (it only looked dead: back from a restart at
	// a new address, or restoring), after waits of FencedRetry doubling up to
	// 8 x FencedRetry. 0: only a fenced one, once.
	ForwardRetries int
	// HandOverRetries is how many times a handover is sent again when the
	// serving satellite refused it as to a dead next satellite that the
	// gateway's failure detector holds alive (the two detectors disagree for
	// a moment: the next one is back at a new address the serving one has
	// not reached yet), after the same waits. 0: the refusal is the request's
	// error at once.
	HandOverRetries int
	// Unlocated: the session is rebuilt (from its ticket): where it is comes
	// from asking the satellites, on its first request. Otherwise it was just
	// opened at its first visit's satellite.
	Unlocated bool
	// Relocatable: a satellite that no longer knows the session makes the
	// machine look it up again (replay sessions; a live session is not).
	Relocatable bool
	Now         time.Time // the session's creation (idle expiry counts from it)
}

// Outcome is an action's result as the machine reads it (Classify).
type Outcome int

const (
	OK         Outcome = iota
	Dead               // Unavailable: the satellite may be dead (or cut off, or paused)
	Fenced             // STALE_EPOCH: it was fenced; the session may have been taken over
	Unknown            // UNKNOWN_SESSION: it holds no page table of the session
	Missing            // NOT_FOUND of another kind
	StaleTable         // STALE_TABLE: a handover's table is older than the destination's
	Failed             // anything else: reported as it is
)

// Classify reads an RPC's error by its code and ErrorInfo reason, never its text.
func Classify(err error) Outcome {
	switch {
	case err == nil:
		return OK
	case errs.Has(err, errs.ErrStaleEpoch):
		return Fenced
	case errs.Has(err, errs.ErrStaleTable):
		return StaleTable
	case status.Code(err) == codes.Unavailable:
		return Dead
	case errs.Has(err, errs.ErrUnknownSession):
		return Unknown
	case status.Code(err) == codes.NotFound:
		return Missing
	}
	return Failed
}

// Events.
type (
	// Event is what Step is given.
	Event interface{ event() }
	// Request: a client request at scenario time TNs, using Pages.
	Request struct {
		TNs   int64
		Pages []uint32
	}
	// Result: the result of the action asked for last (Err nil: it succeeded).
	Result struct {
		Err error
		// TablePages: a HandOver's reply, or the table's size at a satellite
		// AskServing found serving.
		TablePages uint32
	}
	// Verdict: the failure detector's answer to CheckAlive.
	Verdict struct {
		Satellite uint32
		Dead      bool
	}
	// Tick: time passes (idle expiry).
	Tick struct{}
)

func (Request) event() {}
func (Result) event()  {}
func (Verdict) event() {}
func (Tick) event()    {}

// Actions.
type (
	// Action is what Step asks the driver to do.
	Action interface{ action() }
	// CallHandOver: HandOver of the session from From to To at AtNs.
	CallHandOver struct {
		From, To uint32
		AtNs     int64
		Visit    int // the visit it starts
	}
	// CallTakeOver: TakeOver of the session at At from Failed.
	CallTakeOver struct{ Failed, At uint32 }
	// CheckAlive: the failure detector's verdict on Satellite (answered by a Verdict).
	CheckAlive struct{ Satellite uint32 }
	// AskServing: SessionFrames at Satellite: whether it serves the session
	// (Result nil: it does; Unknown or Missing: it does not; Dead: no answer).
	AskServing struct{ Satellite uint32 }
	// CallMove: the proactive MovePages of Visit at To (request id per visit).
	CallMove struct {
		To    uint32
		AtNs  int64
		Visit int
	}
	// CallPush: push-ahead's MovePages of Pages to To at AtNs.
	CallPush struct {
		To    uint32
		AtNs  int64
		Pages []uint32
	}
	// Forward: send the request to Satellite, the serving one.
	Forward struct{ Satellite uint32 }
	// Wait D, then report a Result (Err: the wait was cut short).
	Wait struct{ D time.Duration }
	// Reply: the request is done (Err nil: forwarded and answered at Satellite).
	Reply struct {
		Satellite uint32
		Err       error
	}
	// Expire: end the idle session at Satellite (EndSession at AtNs) and forget it.
	Expire struct {
		Satellite uint32
		AtNs      int64
	}
)

func (CallHandOver) action() {}
func (CallTakeOver) action() {}
func (CheckAlive) action()   {}
func (AskServing) action()   {}
func (CallMove) action()     {}
func (CallPush) action()     {}
func (Forward) action()      {}
func (Wait) action()         {}
func (Reply) action()        {}
func (Expire) action()       {}

// pending is what the next Result or Verdict answers.
type pending int

const (
	none pending = iota
	pHandOver
	pHandedOver // AskServing at the next satellite after the old one said it has no table
	pTakeOver
	pNextAlive    // CheckAlive of the next satellite after a failed handover
	pStandInAlive // CheckAlive of a stand-in of the dead next satellite
	pProbe        // AskServing while locating
	pMove
	pPush
	pForward
	pWait
)

// resume is where a takeover leads back to.
type resume int

const (
	toHandOver resume = iota
	toForward
	toMove
	toSilent
)

// Machine is one session. Not safe for concurrent use: the driver steps it
// under the session's lock.
type Machine struct {
	cfg     Config
	visits  []Visit // the schedule, with stand-ins in place of dead satellites
	cur     int     // the visit serving now
	epoch   uint64  // rises at every change of the serving satellite
	left    []uint32
	moveDue bool
	recent  map[uint32]struct{}
	tables  []uint32
	used    time.Time
	ended   bool
	located bool
	changed bool // visits changed since New or Resume
	moved   bool // the request in progress found the session elsewhere (a relocation)

	// The request in progress.
	busy      bool
	tNs       int64
	pages     []uint32
	pend      pending
	cause     error // the error that started the recovery in progress
	retried   bool  // the forward was retried after a takeover (once per place)
	waits     int   // the forward's waits for a satellite nobody took over
	relocated bool  // the session was looked up again (once per request)
	moveTried bool
	// takeover in progress
	failed uint32
	j      int
	then   resume
	// locate in progress
	plan    []Probe
	answers []Answer
	silent  []Probe
	si      int
	saved   *place // where the session was before a relocation (restored if it fails)
}

// place is where a session is.
type place struct {
	visits  []Visit
	cur     int
	left    []uint32
	moveDue bool
}

// State is what a Machine holds between requests: a driver that keeps it
// (with the session's other fields) makes the machine again with Resume.
type State struct {
	Visits  []Visit // the schedule as served (stand-ins in place)
	Cur     int
	Epoch   uint64
	Left    []uint32
	MoveDue bool
	// Recent: the pages used during the current visit (push-ahead). The
	// machine changes the map it is given.
	Recent  map[uint32]struct{}
	Tables  []uint32
	Used    time.Time
	Located bool
}

// Resume makes a session's machine in state st (cfg.Now and cfg.Unlocated
// are st's Used and !Located).
func Resume(cfg Config, st State) (*Machine, error) {
	cfg.Now, cfg.Unlocated = st.Used, !st.Located
	m, err := New(cfg)
	if err != nil {
		return nil, err
	}
	if len(st.Visits) > 0 {
		m.visits = st.Visits
	}
	if st.Cur < 0 || st.Cur >= len(m.visits) {
		return nil, fmt.Errorf("session %q: visit %d of %d: %w", cfg.ID, st.Cur, len(m.visits), errs.ErrOutOfRange)
	}
	m.cur, m.epoch, m.left, m.moveDue, m.recent, m.tables = st.Cur, st.Epoch, st.Left, st.MoveDue, st.Recent, st.Tables
	return m, nil
}

// State is the machine's state (for Resume). Its Visits are the machine's
// own while Changed is false (no stand-in nor relocation since Resume).
func (m *Machine) State() State {
	return State{Visits: m.visits, Cur: m.cur, Epoch: m.epoch, Left: m.left, MoveDue: m.moveDue, Recent: m.recent,
		Tables: m.tables, Used: m.used, Located: m.located}
}

// Changed reports whether the visits changed since New or Resume (a stand-in
// or a relocation).
func (m *Machine) Changed() bool { return m.changed }

// New makes a session's machine.
func New(cfg Config) (*Machine, error) {
	if len(cfg.Visits) == 0 {
		return nil, fmt.Errorf("session %q: no visits: %w", cfg.ID, errs.ErrInvalid)
	}
	if cfg.Plane.Behind == nil || cfg.Plane.PerPlane < 1 {
		return nil, fmt.Errorf("session %q: no plane geometry: %w", cfg.ID, errs.ErrInvalid)
	}
	m := &Machine{cfg: cfg, visits: cfg.Visits, used: cfg.Now, located: !cfg.Unlocated}
	return m, nil
}

// Serving is the satellite serving the session now, and its visit.
func (m *Machine) Serving() (uint32, int) { return m.visits[m.cur].Satellite, m.cur }

// Epoch rises at every change of the serving satellite (handover, takeover, relocation).
func (m *Machine) Epoch() uint64 { return m.epoch }

// Ended reports whether the session expired (no action comes after Expire).
func (m *Machine) Ended() bool { return m.ended }

// Visits is the schedule as served so far (stand-ins in place).
func (m *Machine) Visits() []Visit { return slices.Clone(m.visits) }

// Left is the satellites the session was taken over from.
func (m *Machine) Left() []uint32 { return slices.Clone(m.left) }

// Tables is the page-table size handed over at each handover done.
func (m *Machine) Tables() []uint32 { return slices.Clone(m.tables) }

// Relocated reports whether the last request found the session elsewhere
// than where the machine had it (it was looked up again).
func (m *Machine) Relocated() bool { return m.moved }

// Busy reports whether a request is in progress.
func (m *Machine) Busy() bool { return m.busy }

// Step feeds one event at time now and returns the actions to perform, in
// order (the last one, when it is not a Reply or Expire, is the one whose
// result comes next). An event the machine does not wait for is ignored.
func (m *Machine) Step(now time.Time, ev Event) []Action {
	if m.ended {
		return nil
	}
	switch e := ev.(type) {
	case Tick:
		if !m.busy && m.cfg.Idle > 0 && now.Sub(m.used) >= m.cfg.Idle {
			m.ended = true
			return []Action{Expire{Satellite: m.visits[m.cur].Satellite, AtNs: m.visits[m.cur].StartNs}}
		}
		return nil
	case Request:
		if m.busy {
			return []Action{Reply{Err: fmt.Errorf("session %q: a request is in progress: %w", m.cfg.ID, errs.ErrInvalid)}}
		}
		m.used = now
		m.busy, m.tNs, m.pages = true, e.TNs, e.Pages
		m.retried, m.relocated, m.moveTried, m.moved, m.cause = false, false, false, false, nil
		m.waits = 0
		if !m.located {
			return m.startLocate()
		}
		return m.advance()
	case Result:
		return m.result(e)
	case Verdict:
		return m.verdict(e)
	}
	return nil
}

func (m *Machine) ask(p pending, a Action) []Action {
	m.pend = p
	return []Action{a}
}

func (m *Machine) reply(err error) []Action {
	m.busy, m.pend = false, none
	if err == nil && m.cfg.Strategy == PushAhead {
		if m.recent == nil {
			m.recent = map[uint32]struct{}{}
		}
		for _, p := range m.pages {
			m.recent[p] = struct{}{}
		}
	}
	return []Action{Reply{Satellite: m.visits[m.cur].Satellite, Err: err}}
}

// visitAt is the index of the visit serving at tNs.
func (m *Machine) visitAt(tNs int64) (int, error) {
	if tNs < m.visits[0].StartNs {
		return 0, fmt.Errorf("scenario time %d ns is before session %q starts at %d ns: %w", tNs, m.cfg.ID, m.visits[0].StartNs, errs.ErrOutOfRange)
	}
	v := sort.Search(len(m.visits), func(i int) bool { return m.visits[i].StartNs > tNs }) - 1
	if v < m.cur {
		return 0, fmt.Errorf("scenario time %d ns is before visit %d of session %q (starts %d ns), which already serves it: %w",
			tNs, m.cur, m.cfg.ID, m.visits[m.cur].StartNs, errs.ErrOutOfRange)
	}
	return v, nil
}

// advance asks for the next step towards serving the request: the visit's
// proactive move, the next handover due, or the forward.
func (m *Machine) advance() []Action {
	target, err := m.visitAt(m.tNs)
	if err != nil {
		return m.reply(err)
	}
	if m.moveDue {
		return m.ask(pMove, CallMove{To: m.visits[m.cur].Satellite, AtNs: m.visits[m.cur].StartNs, Visit: m.cur})
	}
	if m.cur < target {
		return m.ask(pHandOver, CallHandOver{From: m.visits[m.cur].Satellite, To: m.visits[m.cur+1].Satellite,
			AtNs: m.visits[m.cur+1].StartNs, Visit: m.cur + 1})
	}
	return m.ask(pForward, Forward{Satellite: m.visits[m.cur].Satellite})
}

func (m *Machine) result(r Result) []Action {
	p := m.pend
	if p == none || p == pNextAlive || p == pStandInAlive {
		return nil // not waited for
	}
	m.pend = none
	o := Classify(r.Err)
	switch p {
	case pHandOver:
		if o == OK {
			return m.handedOver(r.TablePages)
		}
		m.cause = m.handOverFailed(r.Err)
		switch o {
		case Unknown, Missing:
			// A handover whose reply was lost (the old satellite moved the table,
			// then died before answering) is done if the new one holds it.
			return m.ask(pHandedOver, AskServing{Satellite: m.visits[m.cur+1].Satellite})
		case Dead, Fenced:
			return m.startTakeOver(toHandOver)
		case StaleTable:
			return m.relocate(m.cause)
		}
		return m.reply(m.cause)
	case pHandedOver:
		if o == OK {
			return m.handedOver(r.TablePages)
		}
		return m.relocate(m.cause)
	case pTakeOver:
		return m.takeOverResult(o, r.Err)
	case pProbe:
		a := NotServing
		switch o {
		case OK:
			a = Serving
		case Dead, Fenced, Failed:
			a = Down
		}
		m.answers = append(m.answers, a)
		return m.locateNext()
	case pMove:
		switch {
		case o == OK:
			m.moveDue = false
			return m.advance()
		case (o == Dead || o == Fenced) && !m.moveTried:
			m.moveTried, m.cause = true, r.Err
			return m.startTakeOver(toMove)
		}
		return m.reply(fmt.Errorf("proactive move of session %q to satellite %d (sent again by the next request): %w",
			m.cfg.ID, m.visits[m.cur].Satellite, r.Err))
	case pPush:
		if o != OK {
			return m.reply(fmt.Errorf("push-ahead of session %q to satellite %d: %w", m.cfg.ID, m.visits[m.cur].Satellite, r.Err))
		}
		return m.advance()
	case pForward:
		switch {
		case o == OK:
			return m.reply(nil)
		case (o == Dead || o == Fenced) && !m.retried:
			m.retried, m.cause = true, r.Err
			return m.startTakeOver(toForward)
		case o == Unknown || o == StaleTable:
			return m.relocate(r.Err)
		}
		return m.reply(r.Err)
	case pWait:
		if r.Err != nil {
			return m.reply(m.cause)
		}
		return m.advance()
	}
	return nil
}

func (m *Machine) handOverFailed(err error) error {
	return fmt.Errorf("handover %d of session %q from satellite %d to %d: %w", m.cur+1, m.cfg.ID,
		m.visits[m.cur].Satellite, m.visits[m.cur+1].Satellite, err)
}

// handedOver moves the session to its next visit and asks for what follows.
func (m *Machine) handedOver(tablePages uint32) []Action {
	m.tables = append(m.tables, tablePages)
	m.cur++
	m.epoch++
	m.moveDue = m.cfg.Strategy == Proactive
	if m.cfg.Strategy == PushAhead && len(m.recent) > 0 {
		pages := make([]uint32, 0, len(m.recent))
		for p := range m.recent {
			pages = append(pages, p)
		}
		clear(m.recent)
		slices.Sort(pages)
		return m.ask(pPush, CallPush{To: m.visits[m.cur].Satellite, AtNs: m.visits[m.cur].StartNs, Pages: pages})
	}
	return m.advance()
}

// startTakeOver asks the first satellite behind the serving one to take the
// session over; then leads back to then.
func (m *Machine) startTakeOver(then resume) []Action {
	m.failed, m.j, m.then = m.visits[m.cur].Satellite, 1, then
	return m.nextTakeOver()
}

func (m *Machine) nextTakeOver() []Action {
	if m.j > m.cfg.Plane.standIns() {
		return m.takeOverFailed()
	}
	return m.ask(pTakeOver, CallTakeOver{Failed: m.failed, At: m.cfg.Plane.Behind(m.failed, m.j)})
}

func (m *Machine) takeOverResult(o Outcome, err error) []Action {
	switch o {
	case OK:
		at := m.cfg.Plane.Behind(m.failed, m.j)
		m.standIn(m.cur, at)
		m.left = append(m.left, m.failed)
		m.epoch++
		switch m.then {
		case toMove:
			return m.ask(pMove, CallMove{To: at, AtNs: m.visits[m.cur].StartNs, Visit: m.cur})
		case toSilent:
			m.moved = m.moved || m.saved != nil
			m.located, m.saved = true, nil
			m.moveDue = m.cfg.Strategy == Proactive
		}
		return m.advance() // the handover from the stand-in, or the forward to it
	case Dead, Fenced:
		m.j++ // the one behind is down too: the next one
		return m.nextTakeOver()
	}
	return m.takeOverFailed()
}

// takeOverFailed: no satellite took the session over.
func (m *Machine) takeOverFailed() []Action {
	switch m.then {
	case toHandOver:
		// The next satellite may be the dead one: a stand-in, once the detector says so.
		return m.ask(pNextAlive, CheckAlive{Satellite: m.visits[m.cur+1].Satellite})
	case toForward:
		if m.waits < m.cfg.ForwardRetries {
			// No satellite behind took the session over: theirs hold it alive
			// (back at a new address, or restoring). Ask it again after a wait,
			// and take it over then if it has died meanwhile.
			m.retried = false
			return m.waitAgain()
		}
		if m.waits == 0 && errs.Has(m.cause, errs.ErrStaleEpoch) {
			// Fenced, and no satellite behind it took the session over: the
			// session is still its own once it has restored.
			m.waits++
			return m.ask(pWait, Wait{D: m.cfg.FencedRetry})
		}
		return m.reply(m.cause)
	case toSilent:
		m.si++
		return m.takeOverSilent()
	}
	return m.reply(fmt.Errorf("proactive move of session %q to satellite %d (sent again by the next request): %w",
		m.cfg.ID, m.visits[m.cur].Satellite, m.cause))
}

// waitAgain asks for the next of the request's waits (FencedRetry doubling
// up to 8x) before it is tried again.
func (m *Machine) waitAgain() []Action {
	d := retry.Backoff{First: m.cfg.FencedRetry, Max: 8 * m.cfg.FencedRetry}.Delay(m.waits) // no jitter: the driver's
	m.waits++
	return m.ask(pWait, Wait{D: d})
}

func (m *Machine) verdict(v Verdict) []Action {
	switch m.pend {
	case pNextAlive:
		if v.Satellite != m.visits[m.cur+1].Satellite {
			return nil
		}
		m.pend = none
		if !v.Dead {
			// Slow, not dead: never replaced. Handed over again after a wait
			// (the serving satellite's detector catching up), else the error.
			if m.waits < m.cfg.HandOverRetries {
				return m.waitAgain()
			}
			return m.reply(m.cause)
		}
		m.j = 1
		return m.nextStandIn()
	case pStandInAlive:
		at := m.cfg.Plane.Behind(m.visits[m.cur+1].Satellite, m.j)
		if v.Satellite != at {
			return nil
		}
		m.pend = none
		if !v.Dead {
			m.standIn(m.cur+1, at)
			return m.advance()
		}
		m.j++
		return m.nextStandIn()
	}
	return nil
}

// nextStandIn tries the j-th satellite behind the dead next one.
func (m *Machine) nextStandIn() []Action {
	if m.j > m.cfg.Plane.standIns() {
		return m.reply(m.cause)
	}
	at := m.cfg.Plane.Behind(m.visits[m.cur+1].Satellite, m.j)
	if at == m.visits[m.cur].Satellite {
		m.standIn(m.cur+1, at) // the serving one keeps the session
		return m.advance()
	}
	return m.ask(pStandInAlive, CheckAlive{Satellite: at})
}

func (m *Machine) standIn(v int, at uint32) {
	if !m.changed {
		m.visits, m.changed = slices.Clone(m.visits), true // the caller's may be shared
	}
	m.visits[v] = Visit{Satellite: at, StartNs: m.visits[v].StartNs}
}

// relocate looks the session up again when the satellite it was at does not
// know it (another gateway moved it on); once per request.
func (m *Machine) relocate(cause error) []Action {
	if !m.cfg.Relocatable || m.relocated {
		return m.reply(cause)
	}
	m.relocated, m.cause = true, cause
	m.saved = &place{visits: m.visits, cur: m.cur, left: m.left, moveDue: m.moveDue}
	return m.startLocate()
}

// startLocate asks the satellites where the session is, from its registered schedule.
func (m *Machine) startLocate() []Action {
	m.visits, m.cur, m.left, m.changed = slices.Clone(m.cfg.Visits), 0, nil, true
	target := max(0, sort.Search(len(m.visits), func(i int) bool { return m.visits[i].StartNs > m.tNs })-1)
	m.plan, m.answers, m.silent, m.si = Plan(m.cfg.Plane, m.visits, target), nil, nil, 0
	return m.locateNext()
}

func (m *Machine) locateNext() []Action {
	found, at, silent, done, err := Locate(m.plan, m.answers)
	switch {
	case err != nil:
		return m.locateFailed(err)
	case !done:
		return m.ask(pProbe, AskServing{Satellite: m.plan[len(m.answers)].Sat})
	case found:
		m.moveTo(at)
		m.moved = m.moved || m.saved != nil
		m.located, m.saved = true, nil
		m.epoch++
		m.moveDue = m.cfg.Strategy == Proactive
		m.retried = false
		return m.advance()
	}
	m.silent = silent
	return m.takeOverSilent()
}

// takeOverSilent has a satellite behind the si-th silent probe take the session over.
func (m *Machine) takeOverSilent() []Action {
	if m.si >= len(m.silent) {
		return m.locateFailed(fmt.Errorf("no satellite that answers serves session %q, and none takes it over from one that does not: %w",
			m.cfg.ID, errs.ErrUnavailable))
	}
	m.visits, m.cur, m.left, m.changed = slices.Clone(m.cfg.Visits), 0, nil, true
	m.moveTo(m.silent[m.si])
	m.retried = false
	return m.startTakeOver(toSilent)
}

// locateFailed: a relocation leaves the session where it was and reports
// what started it; a rebuild reports why (the session stays unlocated).
func (m *Machine) locateFailed(err error) []Action {
	if s := m.saved; s != nil {
		m.visits, m.cur, m.left, m.moveDue, m.saved = s.visits, s.cur, s.left, s.moveDue, nil
		return m.reply(m.cause)
	}
	m.visits, m.cur, m.left, m.changed = slices.Clone(m.cfg.Visits), 0, nil, true
	return m.reply(err)
}

// moveTo puts the session at probe p: its visit, served by its satellite.
func (m *Machine) moveTo(p Probe) {
	m.cur = p.Visit
	if p.StandIn > 0 {
		m.left = append(m.left, m.visits[p.Visit].Satellite)
		m.standIn(p.Visit, p.Sat)
	}
}
