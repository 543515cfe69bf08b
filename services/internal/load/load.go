// Package load is a bounded page-fault load generator for a running cluster
// (bench/bench_services.py drives it through cmd/satload). Each worker owns a
// session that ping-pongs between two satellites h ISL hops apart: it reads
// every page at the serving satellite (each read a page fault that travels h
// hops), hands the page table over to the other satellite, and repeats.
//
// Reads go out one page per ReadPage (Batch 1) or Batch pages per ReadPages.
// Echo measures a bare gRPC round trip (the standard health Check) to the
// same daemons in the same way: the floor under one relayed hop.
//
// Closed loop by default (each worker sends its next request when the last
// returns: the throughput figure); with RatePerS, open loop at that aggregate
// request rate, each latency counted from the request's scheduled send time, so
// a slow reply also delays (and is charged to) the requests queued behind it.
package load

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/constellation"
	"github.com/satpage/satpage/services/internal/peers"
	"github.com/satpage/satpage/services/internal/token"
)

// Options bound one measurement.
type Options struct {
	Hops      int           // ISL hops between the two satellites of each worker (0: local reads)
	Workers   int           // concurrent sessions
	Pages     int           // pages per session
	PageBytes int           // bytes written into each page
	Duration  time.Duration // measuring time (after warm-up)
	MaxFaults int           // stop earlier after this many accesses
	Batch     int           // pages per request: 1 = ReadPage, more = ReadPages
	RatePerS  float64       // open-loop aggregate requests per second (0: closed loop)
	Seed      uint64
	CPUPids   []int // cluster processes whose CPU time is metered (may be empty)
	// Token, if set, is the capability of a session (a secure cluster wants one
	// on every PageService request; docs/security.md).
	Token func(session string) string
	// RequestIDs gives every read a request_id, as the gateway and the
	// replayer send them (exactly-once: the answer is kept with the change).
	RequestIDs bool
	// ReadStream sends one-page reads as messages of a read stream per
	// session and satellite (PageService.ReadStream) instead of a ReadPage
	// call each.
	ReadStream bool
}

// withToken puts session's token (if any) on the outgoing metadata.
func withToken(ctx context.Context, o Options, session string) context.Context {
	if o.Token == nil {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, token.MetadataKey, o.Token(session))
}

// Result is one measurement.
type Result struct {
	RPC           string  `json:"rpc"` // ReadPage, ReadStream, ReadPages, or Health.Check (the echo baseline)
	Hops          int     `json:"hops"`
	Workers       int     `json:"workers"`
	Batch         int     `json:"batch"`
	RatePerS      float64 `json:"offered_requests_per_s"` // 0: closed loop
	Requests      int     `json:"requests"`
	Accesses      int     `json:"accesses"`
	Seconds       float64 `json:"seconds"`
	PerSecond     float64 `json:"accesses_per_s"`
	P50Ms         float64 `json:"p50_ms"` // of requests (a batch is one request)
	P90Ms         float64 `json:"p90_ms"`
	P99Ms         float64 `json:"p99_ms"`
	P999Ms        float64 `json:"p999_ms"`
	MeanMs        float64 `json:"mean_ms"`
	MeasuredHops  uint64  `json:"measured_hops_sum"`
	UnexpectedOut int     `json:"unexpected_outcomes"`
	// CPU time of the processes in Options.CPUPids and of this load generator
	// during the measured phase, per access: independent of how busy the machine is.
	CPUMicrosPerAccess float64 `json:"cpu_us_per_access"`
}

// pairs picks n satellite pairs exactly h hops apart, spread over the constellation.
func pairs(g *constellation.Grid, h, n int, r *rand.Rand) ([][2]uint32, error) {
	t := g.Satellites()
	var out [][2]uint32
	for tries := 0; len(out) < n && tries < 100000; tries++ {
		a := uint32(r.IntN(t))
		b := uint32(r.IntN(t))
		if d, err := g.Hops(a, b, 0); err == nil && d == h && (h > 0 || a == b) {
			out = append(out, [2]uint32{a, b})
		}
	}
	if len(out) < n {
		return nil, fmt.Errorf("found %d satellite pairs %d hops apart, want %d", len(out), h, n)
	}
	return out, nil
}

func check(o Options) error {
	if o.Workers < 1 {
		return fmt.Errorf("%d workers: want >= 1", o.Workers)
	}
	if o.Batch < 1 || o.Batch > o.Pages {
		return fmt.Errorf("batch of %d pages: want 1 to the %d pages of a session", o.Batch, o.Pages)
	}
	if o.RatePerS < 0 {
		return fmt.Errorf("rate %g requests/s: want >= 0", o.RatePerS)
	}
	return nil
}

// Run measures o.Hops-hop page faults against satellites reached through pool.
func Run(ctx context.Context, g *constellation.Grid, pool peers.Dialer, o Options) (Result, error) {
	p, err := prepare(ctx, g, pool, o)
	defer p.end(pool)
	if err != nil {
		return Result{}, err
	}
	return p.measure(ctx, pool)
}

// Interleaved measures the page faults of all runs at once (one
// latency series over hop counts whose runs overlap: a stall of the machine
// falls on all of them alike, where one after the other it would fall on one
// hop count and tilt a slope over them). Every session of every run is
// set up before any clock starts; CPU is not metered (the runs share it).
func Interleaved(ctx context.Context, g *constellation.Grid, pool peers.Dialer, runs []Options) ([]Result, error) {
	ps := make([]*prepared, len(runs))
	defer func() {
		for _, p := range ps {
			p.end(pool)
		}
	}()
	for i, o := range runs {
		o.CPUPids = nil
		var err error
		if ps[i], err = prepare(ctx, g, pool, o); err != nil {
			return nil, err
		}
	}
	out := make([]Result, len(runs))
	errs := make([]error, len(runs))
	var wg sync.WaitGroup
	for i, p := range ps {
		wg.Go(func() {
			out[i], errs[i] = p.measure(ctx, pool)
			out[i].CPUMicrosPerAccess = 0
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// prepared is one measurement's sessions, set up (opened, every page written).
type prepared struct {
	o     Options
	ready []*session
	data  []byte
}

func prepare(ctx context.Context, g *constellation.Grid, pool peers.Dialer, o Options) (*prepared, error) {
	if err := check(o); err != nil {
		return nil, err
	}
	r := rand.New(rand.NewPCG(o.Seed, uint64(o.Hops)))
	ps, err := pairs(g, o.Hops, o.Workers, r)
	if err != nil {
		return nil, err
	}
	p := &prepared{o: o, ready: make([]*session, o.Workers), data: make([]byte, o.PageBytes)}
	for i := range p.data {
		p.data[i] = byte(r.IntN(256))
	}
	tag := fmt.Sprintf("load-%d-%d", time.Now().UnixNano(), o.Hops)
	errs := make([]error, o.Workers)
	var setup sync.WaitGroup
	for w := range o.Workers {
		setup.Go(func() {
			p.ready[w], errs[w] = open(ctx, pool, fmt.Sprintf("%s-%d", tag, w), ps[w], o, p.data)
		})
	}
	setup.Wait()
	for _, err := range errs {
		if err != nil {
			return p, err
		}
	}
	return p, nil
}

// measure starts the clock and the CPU meter and runs the sessions.
func (p *prepared) measure(ctx context.Context, pool peers.Dialer) (Result, error) {
	rpc := "ReadPage"
	if p.o.Batch > 1 {
		rpc = "ReadPages"
	} else if p.o.ReadStream {
		rpc = "ReadStream"
	}
	return measure(p.o, rpc, func(w int, pc *pacer) (tally, error) {
		return p.ready[w].run(ctx, pool, p.o, len(p.data), pc)
	})
}

// end ends the sessions that were opened (nil-safe).
func (p *prepared) end(pool peers.Dialer) {
	if p == nil {
		return
	}
	for _, ss := range p.ready {
		if ss != nil {
			ss.end(pool)
		}
	}
}

// Echo measures gRPC health Checks to satellites 0..Workers-1 (worker w asks
// satellite w), paced like Run: the baseline round trip of this machine.
func Echo(ctx context.Context, g *constellation.Grid, pool *peers.Pool, o Options) (Result, error) {
	if err := check(o); err != nil {
		return Result{}, err
	}
	if o.Workers > g.Satellites() {
		return Result{}, fmt.Errorf("%d workers for %d satellites", o.Workers, g.Satellites())
	}
	o.Batch, o.Hops = 1, 0
	return measure(o, "Health.Check", func(w int, p *pacer) (tally, error) {
		var t tally
		h, err := pool.Health(uint32(w))
		if err != nil {
			return t, err
		}
		for {
			t0, ok := p.next()
			if !ok {
				return t, nil
			}
			r, err := h.Check(ctx, &healthpb.HealthCheckRequest{})
			if err != nil {
				return t, fmt.Errorf("health check of satellite %d: %w", w, err)
			}
			if r.Status != healthpb.HealthCheckResponse_SERVING {
				t.bad++
			}
			t.lat = append(t.lat, time.Since(t0))
			t.accesses++
		}
	})
}

// tally is what one worker measured.
type tally struct {
	lat      []time.Duration
	accesses int
	hops     uint64
	bad      int
}

// pacer hands out one worker's requests: a budget token each, until stopAt.
// Closed loop (interval 0): now, as soon as asked. Open loop: request k is due
// at first + k*interval. A request sent late because the previous reply came
// late has its latency counted from when it was due (the wait is the
// service's); one sent on time counts from when it was sent (the timer's
// oversleep is not).
type pacer struct {
	budget   <-chan struct{}
	stopAt   time.Time
	due      time.Time
	interval time.Duration
}

// next waits for the next request's turn and returns the time its latency
// counts from; false when the budget or the time is spent.
func (p *pacer) next() (time.Time, bool) {
	late := p.interval > 0 && time.Now().After(p.due)
	if p.interval > 0 && !late {
		time.Sleep(time.Until(p.due))
	}
	if _, ok := <-p.budget; !ok || time.Now().After(p.stopAt) {
		return time.Time{}, false
	}
	t0 := time.Now()
	if late {
		t0 = p.due
	}
	p.due = p.due.Add(p.interval)
	return t0, true
}

// restart moves the schedule to now after unmeasured work (a handover).
func (p *pacer) restart() {
	if now := time.Now(); p.interval > 0 && now.After(p.due) {
		p.due = now
	}
}

// measure runs work on o.Workers workers for o.Duration (at most the budget of
// o.MaxFaults accesses) and summarises what they measured.
func measure(o Options, rpc string, work func(w int, p *pacer) (tally, error)) (Result, error) {
	requests := (o.MaxFaults + o.Batch - 1) / o.Batch
	budget := make(chan struct{}, requests)
	for range requests {
		budget <- struct{}{}
	}
	close(budget)
	var interval time.Duration
	if o.RatePerS > 0 {
		interval = time.Duration(float64(o.Workers) / o.RatePerS * 1e9)
	}
	tallies := make([]tally, o.Workers)
	errs := make([]error, o.Workers)
	cpu0 := cpuSeconds(o.CPUPids)
	began := time.Now()
	var wg sync.WaitGroup
	for w := range o.Workers {
		wg.Go(func() {
			// The workers' schedules are staggered evenly over one interval.
			p := &pacer{budget: budget, stopAt: began.Add(o.Duration), interval: interval,
				due: began.Add(interval * time.Duration(w) / time.Duration(o.Workers))}
			tallies[w], errs[w] = work(w, p)
		})
	}
	wg.Wait()
	elapsed := time.Since(began).Seconds()
	cpu := cpuSeconds(o.CPUPids) - cpu0
	for _, err := range errs {
		if err != nil {
			return Result{}, err
		}
	}
	res := Result{RPC: rpc, Hops: o.Hops, Workers: o.Workers, Batch: o.Batch, RatePerS: o.RatePerS, Seconds: elapsed}
	var lat []time.Duration
	for _, t := range tallies {
		lat = append(lat, t.lat...)
		res.Accesses += t.accesses
		res.MeasuredHops += t.hops
		res.UnexpectedOut += t.bad
	}
	slices.Sort(lat)
	res.Requests = len(lat)
	if n := len(lat); n > 0 {
		var sum time.Duration
		for _, l := range lat {
			sum += l
		}
		q := func(f float64) float64 { return ms(lat[min(n-1, int(float64(n)*f))]) }
		res.PerSecond = float64(res.Accesses) / elapsed
		res.P50Ms, res.P90Ms, res.P99Ms, res.P999Ms = q(0.5), q(0.9), q(0.99), q(0.999)
		res.MeanMs = ms(sum / time.Duration(n))
		res.CPUMicrosPerAccess = cpu / float64(res.Accesses) * 1e6
	}
	return res, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// session is one worker's session, ready to ping-pong between a and b.
type session struct {
	id             string
	serving, other uint32
	tok            func(string) string
}

func open(ctx context.Context, pool peers.Dialer, id string, pair [2]uint32, o Options, data []byte) (*session, error) {
	a := pair[0]
	ctx = withToken(ctx, o, id)
	pa, err := pool.Page(a)
	if err != nil {
		return nil, err
	}
	sa, err := pool.Satellite(a)
	if err != nil {
		return nil, err
	}
	if _, err := sa.OpenSession(ctx, &satpagev1.OpenSessionRequest{SessionId: id}); err != nil {
		return nil, fmt.Errorf("open %s at %d: %w", id, a, err)
	}
	ss := &session{id: id, serving: a, other: pair[1], tok: o.Token}
	for p := range uint32(o.Pages) {
		if _, err := pa.WritePage(ctx, &satpagev1.WritePageRequest{SessionId: id, Page: p, Data: data}); err != nil {
			return ss, fmt.Errorf("write page %d at %d: %w", p, a, err)
		}
	}
	return ss, nil
}

func (ss *session) end(pool peers.Dialer) {
	if c, err := pool.Page(ss.serving); err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		ctx = withToken(ctx, Options{Token: ss.tok}, ss.id)
		_, _ = c.EndSession(ctx, &satpagev1.EndSessionRequest{SessionId: ss.id})
		cancel()
	}
}

// run reads the session's pages in requests of o.Batch, handing over between
// rounds (not timed), until the pacer stops it.
func (ss *session) run(ctx context.Context, pool peers.Dialer, o Options, dataLen int, pace *pacer) (tally, error) {
	var t tally
	ctx = withToken(ctx, o, ss.id)
	want := satpagev1.Outcome_OUTCOME_MOVED
	if o.Hops == 0 {
		want = satpagev1.Outcome_OUTCOME_LOCAL
	}
	count := func(r *satpagev1.ReadPageResponse) {
		t.hops += uint64(r.Hops)
		if r.Outcome != want || int(r.Hops) != o.Hops || len(r.Data) != dataLen {
			t.bad++
		}
	}
	pages := make([]uint32, o.Pages)
	for i := range pages {
		pages[i] = uint32(i)
	}
	times := make([]int64, o.Batch)
	var streams *readStreams
	if o.ReadStream && o.Batch == 1 {
		streams = newReadStreams(ctx)
		defer streams.close()
	}
	sent := 0
	rid := func() string {
		if !o.RequestIDs {
			return ""
		}
		sent++
		return fmt.Sprintf("load/%d", sent)
	}
	for {
		if o.Hops > 0 {
			s, err := pool.Satellite(ss.serving)
			if err != nil {
				return t, err
			}
			if _, err := s.HandOver(ctx, &satpagev1.HandOverRequest{SessionId: ss.id, ToSatellite: ss.other}); err != nil {
				return t, fmt.Errorf("handover %d -> %d: %w", ss.serving, ss.other, err)
			}
			ss.serving, ss.other = ss.other, ss.serving
			pace.restart()
		}
		c, err := pool.Page(ss.serving)
		if err != nil {
			return t, err
		}
		for chunk := range slices.Chunk(pages, o.Batch) {
			t0, ok := pace.next()
			if !ok {
				return t, nil
			}
			if len(chunk) == 1 {
				req := &satpagev1.ReadPageRequest{SessionId: ss.id, Page: chunk[0], RequestId: rid()}
				var resp *satpagev1.ReadPageResponse
				var err error
				if streams != nil {
					resp, err = streams.read(pool, ss.serving, req)
				} else {
					resp, err = c.ReadPage(ctx, req)
				}
				if err != nil {
					return t, fmt.Errorf("read page %d at %d: %w", chunk[0], ss.serving, err)
				}
				count(resp)
			} else {
				resp, err := c.ReadPages(ctx, &satpagev1.ReadPagesRequest{SessionId: ss.id, Pages: chunk,
					ScenarioTimeNs: times[:len(chunk)], RequestId: rid()})
				if err != nil {
					return t, fmt.Errorf("read pages %d-%d at %d: %w", chunk[0], chunk[len(chunk)-1], ss.serving, err)
				}
				if len(resp.Results) != len(chunk) {
					t.bad += len(chunk)
				}
				for _, r := range resp.Results {
					count(r)
				}
			}
			t.lat = append(t.lat, time.Since(t0))
			t.accesses += len(chunk)
		}
	}
}

// cpuSeconds is utime + stime of pids (from /proc; Linux clock ticks of 1/100 s)
// plus this process's own CPU time.
func cpuSeconds(pids []int) float64 {
	total := 0.0
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		f := strings.Fields(string(b[i+2:]))
		if len(f) > 12 {
			u, _ := strconv.ParseFloat(f[11], 64)
			s, _ := strconv.ParseFloat(f[12], 64)
			total += (u + s) / 100
		}
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		total += float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
	}
	return total
}
