package linkemu

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/constellation"
	"github.com/satpage/satpage/services/internal/sky"
)

// linkVectors is services/testdata/link_vectors.json (make_link_vectors.py):
// delays orbit_model computes from SGP4 positions at each message's time.
type linkVectors struct {
	Format        string       `json:"format"`
	Constellation string       `json:"constellation"`
	Ephemeris     string       `json:"ephemeris"`
	SpeedOfLight  float64      `json:"speed_of_light_km_s"`
	ISL           [][4]float64 `json:"isl"`
	Ground        [][5]float64 `json:"ground"`
}

// interpolationNs bounds the ephemeris' interpolation error as a delay: 3.2 m
// at 60 s knots (docs/live.md) is 11 ns; two ends of a link, doubled for margin.
const interpolationNs = 45.0

func load(t *testing.T) (*sky.Ephemeris, linkVectors) {
	t.Helper()
	raw, err := os.ReadFile("../../testdata/link_vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var v linkVectors
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	if v.Format != "satpage-link-vectors/1" || v.SpeedOfLight != SpeedOfLightKmS {
		t.Fatalf("vectors format %q, c %v km/s; want satpage-link-vectors/1 and %v", v.Format, v.SpeedOfLight, SpeedOfLightKmS)
	}
	spec, err := constellation.ParseSpec(v.Constellation)
	if err != nil {
		t.Fatal(err)
	}
	e, err := sky.ReadEphemeris("../../testdata/"+v.Ephemeris, spec)
	if err != nil {
		t.Fatal(err)
	}
	return e, v
}

func TestAHopWaitsDistanceOverCAtTheMessagesTime(t *testing.T) {
	e, v := load(t)
	m, err := New(e, DefaultCapacityGbps)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range v.ISL {
		a, b, tNs, want := uint32(c[0]), uint32(c[1]), int64(c[2]), c[3]
		got, err := m.PropagationNs(a, b, tNs)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got-want) > interpolationNs {
			t.Errorf("ISL %d->%d at %d ns: got %.1f ns, want %.1f ns (orbit_model)", a, b, tNs, got, want)
		}
		// The whole wait of an idle link: propagation plus a message's serialisation.
		const bytes = 4096
		w, err := m.Wait(a, b, tNs, bytes, time.Duration(tNs)) // a fresh instant: the link is idle
		if err != nil {
			t.Fatal(err)
		}
		tx := bytes * 8 / DefaultCapacityGbps
		if math.Abs(float64(w)-want-tx) > interpolationNs+1 {
			t.Errorf("wait %d->%d at %d ns: got %v, want %.1f ns + %.1f ns serialisation", a, b, tNs, w, want, tx)
		}
	}
	if len(v.ISL) < 20 {
		t.Fatalf("only %d ISL vectors", len(v.ISL))
	}
}

func TestTheGroundLinkWaitsTheSlantRangeOverC(t *testing.T) {
	e, v := load(t)
	m, err := New(e, DefaultCapacityGbps)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range v.Ground {
		p, err := sky.NewPlace(c[0], c[1])
		if err != nil {
			t.Fatal(err)
		}
		got, err := m.GroundNs(p.GroundKm(), uint32(c[2]), int64(c[3]))
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got-c[4]) > interpolationNs {
			t.Errorf("ground (%v, %v) to %d at %d ns: got %.1f ns, want %.1f ns (orbit_model)", c[0], c[1], int(c[2]), int64(c[3]), got, c[4])
		}
	}
}

// still is a constellation that does not move: satellite i at (1000 i, 0, 0) km.
type still struct{}

func (still) Position(sat int, _ int64) ([3]float64, error) {
	return [3]float64{1000 * float64(sat), 0, 0}, nil
}

func TestASaturatedLinkQueuesInFIFOOrderAtItsCapacity(t *testing.T) {
	m, err := New(still{}, 1) // 1 Gbit/s: 1250 bytes take 10 us
	if err != nil {
		t.Fatal(err)
	}
	at := 5 * time.Second
	for k := 1; k <= 5; k++ {
		if got, want := m.Serialise(1, 2, 1250, at), time.Duration(k)*10*time.Microsecond; got != want {
			t.Errorf("message %d sent at once on a busy link: got %v, want %v (FIFO behind %d)", k, got, want, k-1)
		}
	}
	// The other direction and another link have queues of their own.
	if got, want := m.Serialise(2, 1, 1250, at), 10*time.Microsecond; got != want {
		t.Errorf("reverse direction: got %v, want %v", got, want)
	}
	// 20 us later the link still holds 30 us of the first five.
	if got, want := m.Serialise(1, 2, 1250, at+20*time.Microsecond), 40*time.Microsecond; got != want {
		t.Errorf("message 6, 20 us later: got %v, want %v", got, want)
	}
	// Once drained, a message waits only its own serialisation.
	if got, want := m.Serialise(1, 2, 1250, at+time.Second), 10*time.Microsecond; got != want {
		t.Errorf("drained link: got %v, want %v", got, want)
	}
	// Wait adds the propagation (1000 km) to the queue.
	w, err := m.Wait(1, 2, 0, 1250, at+time.Second)
	if err != nil {
		t.Fatal(err)
	}
	prop := time.Duration(math.Round(1000 / SpeedOfLightKmS * 1e9))
	if want := prop + 20*time.Microsecond; w != want {
		t.Errorf("wait behind one message: got %v, want %v", w, want)
	}
}

func TestTheSubstrateIsSubtractedNeverBelowZero(t *testing.T) {
	m, _ := New(still{}, DefaultCapacityGbps)
	prop := time.Duration(math.Round(1000 / SpeedOfLightKmS * 1e9)) // 3.336 ms
	m.SetSubstrate(300 * time.Microsecond)
	if got := m.Less(prop); got != prop-300*time.Microsecond {
		t.Errorf("got %v, want %v", got, prop-300*time.Microsecond)
	}
	m.SetSubstrate(time.Hour)
	if got := m.Less(prop); got != 0 {
		t.Errorf("substrate above the physics: got %v, want 0", got)
	}
}

func TestARoutedRequestWaitsItsHopThereAndItsReplyBack(t *testing.T) {
	m, _ := New(still{}, DefaultCapacityGbps)
	hop := time.Duration(math.Round(3000 / SpeedOfLightKmS * 1e9)) // satellites 1 and 4: 10 ms
	req := &satpagev1.FetchPagesRequest{Route: &satpagev1.Route{Origin: 1, Destination: 4, Hops: 1, Path: []uint32{1}}}
	start := time.Now()
	var due int64
	err := wire(m, 4, func(ctx context.Context, _ any) (any, error) {
		md, _ := metadata.FromIncomingContext(ctx) // sent at once, with the instant it is due here
		due, _ = dueOf(md)
		return &satpagev1.FetchPagesResponse{}, nil
	})(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	total := time.Since(start)
	// The upper bound only catches a wait of the wrong order (a unit off): a
	// loaded machine wakes goroutines tens of ms late; the exact wait is held
	// by the due-time tests below.
	if d := time.Duration(due - start.UnixNano()); d < hop || d > hop+250*time.Millisecond {
		t.Errorf("request due at satellite 4 %v after it was sent, want %v", d, hop)
	}
	if total < 2*hop {
		t.Errorf("round trip %v, want at least %v there and back", total, 2*hop)
	}
	// A request that is not routed (no path) passes at once.
	start = time.Now()
	_ = m.ClientInterceptor(4)(context.Background(), "/x", &satpagev1.SessionFramesRequest{}, nil, nil,
		func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error { return nil })
	if d := time.Since(start); d > hop/2 {
		t.Errorf("an unrouted request waited %v", d)
	}
}

func TestATimeOutsideTheEphemerisIsNotEmulatedAndCounted(t *testing.T) {
	e, _ := load(t)
	m, _ := New(e, DefaultCapacityGbps)
	if _, err := m.Wait(1, 2, e.EndNs()+1, 100, 0); err == nil {
		t.Fatal("a time after the ephemeris gave a wait")
	}
	if _, ok := m.due(1, 2, e.EndNs()+1, 100, 0); ok || m.Unemulated() != 1 {
		t.Errorf("a time after the ephemeris is due: %v; unemulated %d, want 1", ok, m.Unemulated())
	}
}

// stream records what a server interceptor sets as its trailer.
type stream struct{ trailer metadata.MD }

func (s *stream) Method() string               { return "/satpage.v1.SatelliteService/FetchPages" }
func (s *stream) SetHeader(metadata.MD) error  { return nil }
func (s *stream) SendHeader(metadata.MD) error { return nil }
func (s *stream) SetTrailer(md metadata.MD) error {
	s.trailer = metadata.Join(s.trailer, md)
	return nil
}

// wire is an in-process hop from one satellite's client interceptor to the
// next one's server interceptor, carrying metadata as gRPC does.
func wire(m *Model, to uint32, handler grpc.UnaryHandler) func(ctx context.Context, req any) error {
	return func(ctx context.Context, req any) error {
		return m.ClientInterceptor(to)(ctx, "/satpage.v1.SatelliteService/FetchPages", req, nil, nil,
			func(ctx context.Context, _ string, req, _ any, _ *grpc.ClientConn, opts ...grpc.CallOption) error {
				out, _ := metadata.FromOutgoingContext(ctx)
				st := &stream{}
				sctx := grpc.NewContextWithServerTransportStream(metadata.NewIncomingContext(ctx, out), st)
				_, err := m.ServerInterceptor(to)(sctx, req, &grpc.UnaryServerInfo{}, handler)
				for _, o := range opts {
					if t, ok := o.(grpc.TrailerCallOption); ok {
						*t.TrailerAddr = st.trailer
					}
				}
				return err
			})
	}
}

func TestARelayMadeLateIsAbsorbedByTheNextHopsWait(t *testing.T) {
	m, _ := New(still{}, DefaultCapacityGbps)
	hop := int64(math.Round(3000 / SpeedOfLightKmS * 1e9)) // 10 ms between 0, 3 and 6
	const late = 8 * time.Millisecond
	dueAt := map[uint32]int64{}
	record := func(ctx context.Context, at uint32) {
		md, _ := metadata.FromIncomingContext(ctx)
		dueAt[at], _ = dueOf(md)
	}
	last := wire(m, 6, func(ctx context.Context, _ any) (any, error) {
		record(ctx, 6)
		return &satpagev1.FetchPagesResponse{}, nil
	})
	relay := wire(m, 3, func(ctx context.Context, _ any) (any, error) {
		record(ctx, 3)
		time.Sleep(late) // the relay is slow (a loaded machine)
		fwd := &satpagev1.FetchPagesRequest{Route: &satpagev1.Route{Origin: 0, Destination: 6, Hops: 2, Path: []uint32{0, 3}}}
		return &satpagev1.FetchPagesResponse{}, last(ctx, fwd)
	})
	sent := time.Now().UnixNano()
	req := &satpagev1.FetchPagesRequest{Route: &satpagev1.Route{Origin: 0, Destination: 6, Hops: 1, Path: []uint32{0}}}
	if err := relay(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	returned := time.Now().UnixNano()
	// Due at 3 one hop after the origin sent it; due at 6 one hop after it was due
	// at 3, not one hop after the late relay sent it on.
	// (+ the moment between taking sent and the interceptor reading the clock:
	// under load a goroutine can wait tens of ms for a core)
	if d := dueAt[3] - sent; d < hop || d > hop+int64(100*time.Millisecond) {
		t.Errorf("due at satellite 3 %v after it was sent, want %v", time.Duration(d), time.Duration(hop))
	}
	if d := dueAt[6] - dueAt[3]; d < hop || d > hop+10 { // + the request's serialisation: ns at 100 Gbit/s
		t.Errorf("due at satellite 6 %v after satellite 3, want %v: the relay's %v late absorbed", time.Duration(d), time.Duration(hop), late)
	}
	// The origin's call returns no earlier than the reply is due: four hops.
	if d := returned - sent; d < 4*hop-int64(time.Millisecond) {
		t.Errorf("round trip %v, want at least %v", time.Duration(d), time.Duration(4*hop))
	}
}

func TestTheOriginResumesWhenTheReplyIsDueWhateverTheHandlingTook(t *testing.T) {
	m, _ := New(still{}, DefaultCapacityGbps)
	hop := int64(math.Round(3000 / SpeedOfLightKmS * 1e9)) // 10 ms between 0 and 6
	for _, handling := range []time.Duration{0, 4 * time.Millisecond} {
		var due int64
		req := &satpagev1.FetchPagesRequest{Route: &satpagev1.Route{Origin: 0, Destination: 6, Hops: 1, Path: []uint32{0}}}
		err := m.ClientInterceptor(6)(context.Background(), "/satpage.v1.SatelliteService/FetchPages", req, nil, nil,
			func(ctx context.Context, _ string, req, _ any, _ *grpc.ClientConn, opts ...grpc.CallOption) error {
				out, _ := metadata.FromOutgoingContext(ctx)
				due, _ = dueOf(out)
				st := &stream{}
				sctx := grpc.NewContextWithServerTransportStream(metadata.NewIncomingContext(ctx, out), st)
				_, err := m.ServerInterceptor(6)(sctx, req, &grpc.UnaryServerInfo{}, func(context.Context, any) (any, error) {
					time.Sleep(handling) // the machine's own handling: inside the schedule, not added to it
					return &satpagev1.FetchPagesResponse{}, nil
				})
				for _, o := range opts {
					if tr, ok := o.(grpc.TrailerCallOption); ok {
						*tr.TrailerAddr = st.trailer
					}
				}
				return err
			})
		returned := time.Now().UnixNano()
		if err != nil {
			t.Fatal(err)
		}
		// The reply is due one hop after the request (+ its serialisation: ns
		// at 100 Gbit/s); the origin returns no earlier: the exact bound.
		if back := due + hop; due == 0 || returned < back {
			t.Errorf("handling %v: returned %v before the reply was due", handling, time.Duration(back-returned))
		}
		// Not a hop later either, unless the machine is that slow (a bound for a unit off).
		if late := time.Duration(returned - due - hop); late > 250*time.Millisecond {
			t.Errorf("handling %v: returned %v after the reply was due", handling, late)
		}
	}
}

// shifted reads positions tNs after the ephemeris' start: the routing table of
// a grid without a schedule is at time 0, which this ephemeris need not cover.
type shifted struct {
	m  *Model
	t0 int64
}

func (s shifted) PropagationNs(a, b uint32, tNs int64) (float64, error) {
	return s.m.PropagationNs(a, b, s.t0+tNs)
}

func TestRelaysTakeTheFastestOfTheFewestHopPaths(t *testing.T) {
	e, v := load(t)
	m, _ := New(e, DefaultCapacityGbps)
	spec, _ := constellation.ParseSpec(v.Constellation)
	plain, err := constellation.NewGrid(spec)
	if err != nil {
		t.Fatal(err)
	}
	d := shifted{m, e.T0Ns}
	fast := plain.WithDelays(d)
	// walk follows NextHop from a to b, summing the delays at the table's time (0).
	walk := func(g *constellation.Grid, a, b uint32) (float64, int) {
		total, hops := 0.0, 0
		for at := a; at != b; hops++ {
			next, err := g.NextHop(at, b, 0)
			if err != nil {
				t.Fatal(err)
			}
			w, _ := d.PropagationNs(at, next, 0)
			total, at = total+w, next
		}
		return total, hops
	}
	// fastest is the least delay over every fewest-hop path (brute force over
	// the neighbours one hop closer, memoised).
	memo := map[[2]uint32]float64{}
	var fastest func(a, b uint32) float64
	fastest = func(a, b uint32) float64 {
		if a == b {
			return 0
		}
		if f, ok := memo[[2]uint32{a, b}]; ok {
			return f
		}
		h, _ := plain.Hops(a, b, 0)
		best := math.Inf(1)
		for _, n := range plain.Neighbors(a, 0) {
			if hn, _ := plain.Hops(n, b, 0); hn == h-1 {
				w, _ := d.PropagationNs(a, n, 0)
				best = min(best, w+fastest(n, b))
			}
		}
		memo[[2]uint32{a, b}] = best
		return best
	}
	shorter := 0
	for a := uint32(0); a < uint32(spec.Satellites); a += 7 {
		for b := uint32(0); b < uint32(spec.Satellites); b += 5 {
			if a == b {
				continue
			}
			want, _ := plain.Hops(a, b, 0)
			got, hops := walk(fast, a, b)
			if hops != want {
				t.Fatalf("%d -> %d: %d hops, want the fewest, %d", a, b, hops, want)
			}
			if best := fastest(a, b); math.Abs(got-best) > 1e-3*float64(hops)+1e-6 {
				t.Errorf("%d -> %d: path of %.1f ns, want the fastest fewest-hop one, %.1f ns", a, b, got, best)
			}
			if lowest, _ := walk(plain, a, b); got < lowest-1 {
				shorter++
			}
		}
	}
	if shorter == 0 {
		t.Error("no pair's fastest path is shorter than the lowest-indexed one: the check has no teeth")
	}
	t.Logf("%d pairs shorter than the lowest-indexed path", shorter)
}
