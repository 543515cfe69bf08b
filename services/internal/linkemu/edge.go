package linkemu

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/constellation"
	"github.com/satpage/satpage/services/internal/errs"
	"github.com/satpage/satpage/services/internal/sky"
)

// origin is the zero of the now axis every Model call of this process uses.
var origin = time.Now()

// Now is the instant on the axis Serialise and Wait take.
func Now() time.Duration { return time.Since(origin) }

// Sleep waits d on a timer (not the CPU) unless ctx ends first (false). How
// late the timer fires is smoothed into Lateness, which the next ground-link waits take off.
func (m *Model) Sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	start := time.Now()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
	}
	over := min(max(time.Since(start)-d, 0), maxLate)
	old := m.late.Load() // a lost update between two sleeps only delays the average by one sample
	m.late.Store(old + (int64(over)-old)/8)
	return true
}

// maxLate bounds one timer's lateness sample: a descheduled process must not
// make the next ground-link waits arbitrarily short.
const maxLate = 2 * time.Millisecond

// routed is a satellite-to-satellite request that travels hop by hop.
type routed interface{ GetRoute() *satpagev1.Route }

// sender is the satellite that sends a routed request over its current hop:
// the last of its path (the origin and every relay add themselves before
// sending).
func sender(req any) (uint32, int64, bool) {
	r, ok := req.(routed)
	if !ok {
		return 0, 0, false
	}
	route := r.GetRoute()
	if route == nil || len(route.Path) == 0 {
		return 0, 0, false
	}
	return route.Path[len(route.Path)-1], route.ScenarioTimeNs, true
}

func size(m any) int {
	if p, ok := m.(proto.Message); ok && p != nil {
		return proto.Size(p)
	}
	return 0
}

// dueKey is the gRPC metadata (request header, reply trailer) that carries
// when a message is due at its receiver on the sky's schedule: wall-clock ns.
const dueKey = "satpage-link-due-ns"

// hop is what a satellite's server interceptor knows of a routed request it
// handles, for the calls its handler makes (a relay's next hop) and its reply.
type hop struct {
	due   int64        // when the request was due here (wall ns)
	reply atomic.Int64 // when the reply of the next hop is due here (0: none)
}

type hopKey struct{}

// ClientInterceptor is the interceptor of a connection to satellite to. A
// routed request is due at to one hop's time (propagation at its scenario
// time, its place in the link's queue, the per-hop processing) after it was
// due here (after now at the origin); it is sent at once, carrying that
// instant (metadata satpage-link-due-ns). Timing against one schedule rather
// than adding each hop's wait to the last keeps the machine's lateness at one
// hop from adding up along the path: a late hop is absorbed by the next one's
// wait. The reply is timed by the replier (ServerInterceptor); at the origin
// the call returns when the reply is due, not earlier (holdUntil), so what
// the machine takes to carry and handle the messages is inside the wait,
// never added to it, as long as the machine is faster than the sky. Other
// requests pass untouched.
func (m *Model) ClientInterceptor(to uint32) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		from, tNs, ok := sender(req)
		if !ok || from == to {
			return invoker(ctx, method, req, reply, cc, opts...)
		}
		h, _ := ctx.Value(hopKey{}).(*hop)
		base := time.Now().UnixNano()
		if h != nil {
			base = h.due
		}
		due, ok := m.due(from, to, tNs, size(req), base)
		if !ok {
			return invoker(ctx, method, req, reply, cc, opts...)
		}
		var trailer metadata.MD
		md, _ := metadata.FromOutgoingContext(ctx)
		md = md.Copy() // set, not append: this hop's instant replaces any an outer call carried
		md.Set(dueKey, strconv.FormatInt(due, 10))
		ctx = metadata.NewOutgoingContext(ctx, md)
		err := invoker(ctx, method, req, reply, cc, append(opts, grpc.Trailer(&trailer))...)
		back, ok := dueOf(trailer)
		switch {
		case !ok:
		case h != nil:
			h.reply.Store(back) // this relay's own reply leaves from there
		case !holdUntil(ctx, back) && err == nil:
			return status.FromContextError(ctx.Err()).Err()
		}
		return err
	}
}

// ServerInterceptor is satellite self's server interceptor. The reply to a
// routed request is due back at the satellite that sent it one hop's time
// after the reply was ready here on the schedule: when the next hop's reply
// was due (a relay), else when the request was due (the machine's own
// handling is inside the schedule). It is sent at once, with the instant in
// the trailer. A request is handled when it arrives, before its instant:
// what a satellite does with it is the same either way, and holding it too
// would cost every hop a second wake-up (the CPU the holds cost is in
// docs/emulation.md); the origin, which holds the reply, resumes on the sky's
// schedule.
func (m *Model) ServerInterceptor(self uint32) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		from, tNs, ok := sender(req) // before the handler: a relay appends itself to the path
		if !ok || from == self {
			return handler(ctx, req)
		}
		md, _ := metadata.FromIncomingContext(ctx)
		h := &hop{due: time.Now().UnixNano()}
		if due, ok := dueOf(md); ok {
			h.due = due
		}
		resp, err := handler(context.WithValue(ctx, hopKey{}, h), req)
		ready := h.due
		if r := h.reply.Load(); r > 0 {
			ready = r
		}
		due, ok := m.due(self, from, tNs+(ready-h.due), size(resp), ready)
		if !ok {
			return resp, err
		}
		_ = grpc.SetTrailer(ctx, metadata.Pairs(dueKey, strconv.FormatInt(due, 10))) // no stream: an in-process call
		return resp, err
	}
}

// due is when a message of bytes sent from -> to at scenario time tNs, leaving
// at wall ns base, is due at its receiver; false when tNs is outside the
// positions (counted in Unemulated: the message crosses without waiting).
func (m *Model) due(from, to uint32, tNs int64, bytes int, base int64) (int64, bool) {
	prop, err := m.PropagationNs(from, to, tNs)
	if err != nil {
		m.unemulated.Add(1)
		return 0, false
	}
	return base + int64(math.Round(prop)) + int64(m.perHop) + int64(m.Serialise(from, to, bytes, time.Duration(base))), true
}

func dueOf(md metadata.MD) (int64, bool) {
	v := md.Get(dueKey)
	if len(v) != 1 {
		return 0, false
	}
	due, err := strconv.ParseInt(v[0], 10, 64)
	return due, err == nil && due > 0
}

// Unemulated counts the messages that crossed without waiting: their time is
// outside the ephemeris.
func (m *Model) Unemulated() int64 { return m.unemulated.Load() }

// GroundTrip runs call (a request from the gateway to satellite sat and its
// reply) between the two waits of the ground link from groundKm (a session's
// place, sky.Place.GroundKm) at tNs: the slant range / c up, then down at the
// reply's own time. Beam capacity is not emulated: no queue on this link.
func (m *Model) GroundTrip(ctx context.Context, groundKm [3]float64, sat uint32, tNs int64, call func() error) error {
	if up, err := m.GroundNs(groundKm, sat, tNs); err == nil {
		if !m.Sleep(ctx, m.Less(time.Duration(up))) {
			return status.FromContextError(ctx.Err()).Err()
		}
	} else {
		m.unemulated.Add(1)
	}
	start := time.Now()
	err := call()
	if down, gerr := m.GroundNs(groundKm, sat, tNs+int64(time.Since(start))); gerr == nil {
		if !m.Sleep(ctx, m.Less(time.Duration(down))) && err == nil {
			return status.FromContextError(ctx.Err()).Err()
		}
	}
	return err
}

// Measure sets the substrate, what the machine adds to one hop one way, from
// round trips of probe (a health check over a connection that relayed
// requests use too): at once, then every `every`, until ctx ends. A round is
// the median of probeRounds probes; one way is half of it. The waits are
// short (a health check), so the round trips measure the machine, not the
// emulated sky (health checks are not routed: they never wait).
func (m *Model) Measure(ctx context.Context, probe func(context.Context) error, every time.Duration, log *slog.Logger) {
	for first := true; ; first = false {
		var rtt []time.Duration
		for range probeRounds {
			pctx, cancel := context.WithTimeout(ctx, time.Second)
			start := time.Now()
			err := probe(pctx)
			cancel()
			if err == nil {
				rtt = append(rtt, time.Since(start))
			}
		}
		if len(rtt) > 0 {
			slices.Sort(rtt)
			m.SetSubstrate(rtt[len(rtt)/2] / 2)
			if first {
				log.Info("link emulation: substrate measured", "one_way", m.Substrate(), "probes", len(rtt))
			}
		}
		t := time.NewTimer(every)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// probeRounds is the probes of one substrate measurement.
const probeRounds = 9

// Open is the model timed by the ephemeris at path, written for spec, with
// every directed ISL carrying capacityGbps, and the file it reads positions
// from (Watch reads it again when it changes). An empty path is no emulation: nil.
func Open(path string, spec constellation.Spec, capacityGbps float64) (*Model, *File, error) {
	if path == "" {
		return nil, nil, nil
	}
	e, err := sky.ReadEphemeris(path, spec)
	if err != nil {
		return nil, nil, fmt.Errorf("link emulation: %w", err)
	}
	f := &File{path: path, spec: spec}
	f.eph.Store(e)
	f.seen, _ = stamp(path)
	m, err := New(f, capacityGbps)
	return m, f, err
}

// File is positions from an ephemeris file, read again when the file changes
// (Watch): a live ephemeris the refresher extends, a ConfigMap replaced in
// place. Safe for concurrent use.
type File struct {
	path string
	spec constellation.Spec
	eph  atomic.Pointer[sky.Ephemeris]

	mu   sync.Mutex // guards seen (reloads run one at a time)
	seen fileStamp  // the file last read
}

type fileStamp struct {
	mod  time.Time
	size int64
}

func stamp(path string) (fileStamp, error) {
	fi, err := os.Stat(path) // follows a ConfigMap's symlinks to the file itself
	if err != nil {
		return fileStamp{}, err
	}
	return fileStamp{fi.ModTime(), fi.Size()}, nil
}

// Position is the satellite's position from the file last read.
func (f *File) Position(sat int, tNs int64) ([3]float64, error) {
	return f.eph.Load().Position(sat, tNs)
}

// Ephemeris is the file last read.
func (f *File) Ephemeris() *sky.Ephemeris { return f.eph.Load() }

// Reload reads the file again when its modification time or size changed
// (true: it did). A file that does not parse, or whose epoch moved (every
// message time counts from it), is refused and the positions stay as they were.
func (f *File) Reload() (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st, err := stamp(f.path)
	if err != nil || st == f.seen {
		return false, err
	}
	e, err := sky.ReadEphemeris(f.path, f.spec)
	if err != nil {
		return false, err
	}
	if old := f.eph.Load(); !e.EpochTime.Equal(old.EpochTime) {
		return false, fmt.Errorf("link ephemeris %s: epoch %s, was %s (message times count from it): %w",
			f.path, e.Epoch, old.Epoch, errs.ErrInvalid)
	}
	f.eph.Store(e)
	f.seen = st
	return true, nil
}

// Watch calls Reload every `every` until ctx ends, logging what it read or why not.
func (f *File) Watch(ctx context.Context, every time.Duration, log *slog.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		switch ok, err := f.Reload(); {
		case err != nil:
			log.Error("link ephemeris not read again", "path", f.path, "err", err)
		case ok:
			e := f.Ephemeris()
			log.Info("link ephemeris read again", "path", f.path, "covers_ns", [2]int64{e.T0Ns, e.EndNs()})
		}
	}
}

// WatchEvery is how often the daemons look for a changed link ephemeris.
const WatchEvery = 10 * time.Second

// Collectors are the model's metrics: the substrate and timer lateness being
// subtracted, and the messages not emulated.
func (m *Model) Collectors() []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "satpage_link_substrate_seconds",
			Help: "What the machine adds to one hop one way (measured; subtracted from every emulated wait)."},
			func() float64 { return m.Substrate().Seconds() }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "satpage_link_timer_lateness_seconds",
			Help: "How late this process' timers fire, smoothed (subtracted from every emulated wait)."},
			func() float64 { return m.Lateness().Seconds() }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "satpage_link_unemulated_total",
			Help: "Messages that crossed without waiting: their time is outside the link ephemeris."},
			func() float64 { return float64(m.Unemulated()) }),
	}
}
