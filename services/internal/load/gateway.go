package load

// Load through the gateway in either mode, for the live-vs-replay row of
// bench/bench_services.py: the same sessions, the same reads, only how the
// sessions are opened differs (RegisterSession with a schedule and scenario
// times on every request, or OpenLiveSession by location and the gateway's clock).

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
)

// GatewayOptions describe one gateway run.
type GatewayOptions struct {
	Live        bool // OpenLiveSession by location; else RegisterSession with one visit
	Workers     int  // concurrent sessions, closed loop
	Pages       int  // pages per session (written first, then read at random)
	PageBytes   int
	Batch       int // pages per ReadPages
	Duration    time.Duration
	MaxAccesses int
	Satellites  int // constellation size (checked)
}

// GatewayResult is what one run measured (accesses are page reads).
type GatewayResult struct {
	Mode         string  `json:"mode"`
	Sessions     int     `json:"sessions"`
	Accesses     int     `json:"accesses"`
	Requests     int     `json:"requests"`
	Seconds      float64 `json:"seconds"`
	AccessesPerS float64 `json:"accesses_per_s"`
	P50Ms        float64 `json:"p50_ms"`
	P99Ms        float64 `json:"p99_ms"`
	Moved        int     `json:"moved"`   // reads that faulted (handovers in live mode)
	Limited      int     `json:"limited"` // requests refused by the gateway's per-client rate limit
}

// Gateway runs the load against the gateway behind conn, which must be in live
// mode (replay sessions borrow the serving satellite of a live one).
func Gateway(ctx context.Context, conn *grpc.ClientConn, o GatewayOptions) (GatewayResult, error) {
	if o.Workers < 1 || o.Pages < 1 || o.Batch < 1 || o.Duration <= 0 || o.Satellites < 1 {
		return GatewayResult{}, fmt.Errorf("gateway load: workers %d, pages %d, batch %d, duration %v, satellites %d must be positive",
			o.Workers, o.Pages, o.Batch, o.Duration, o.Satellites)
	}
	pages := satpagev1.NewPageServiceClient(conn)
	control := satpagev1.NewGatewayServiceClient(conn)
	mode := map[bool]string{true: "live", false: "replay"}[o.Live]
	prefix := fmt.Sprintf("bench-%s-%d", mode, time.Now().UnixNano())
	data := make([]byte, o.PageBytes)
	type out struct {
		lat     []time.Duration
		n, m, r int
		limited int
		err     error
	}
	outs := make([]out, o.Workers)
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	var begin time.Time
	for w := range o.Workers {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			res := &outs[w]
			// Places spread over the globe. A replay session is served by the satellite
			// the live session of the same place gets, so both modes load the same satellites.
			var r *satpagev1.OpenLiveSessionResponse
			id, tok, err := "", "", error(nil)
			err = limited(ctx, func() (err error) {
				r, err = control.OpenLiveSession(ctx, &satpagev1.OpenLiveSessionRequest{LatDeg: float64(-60 + (w*37)%120),
					LonDeg: float64((w * 53) % 360), Strategy: satpagev1.Strategy_STRATEGY_ON_DEMAND})
				return err
			})
			if err == nil {
				id, tok = r.SessionId, r.Token
			}
			if err == nil && !o.Live {
				lctx := metadata.AppendToOutgoingContext(ctx, "satpage-token", tok)
				_ = limited(ctx, func() error {
					_, err := pages.EndSession(lctx, &satpagev1.EndSessionRequest{SessionId: id})
					return err
				})
				id = fmt.Sprintf("%s-%d", prefix, w)
				var rr *satpagev1.RegisterSessionResponse
				err = limited(ctx, func() (err error) {
					rr, err = control.RegisterSession(ctx, &satpagev1.RegisterSessionRequest{SessionId: id,
						Visits: []*satpagev1.Visit{{Satellite: r.Satellite}}, Strategy: satpagev1.Strategy_STRATEGY_ON_DEMAND})
					return err
				})
				if err == nil {
					tok = rr.Token
				}
			}
			if err != nil {
				res.err = fmt.Errorf("open %s session %d: %w", mode, w, err)
				ready.Done()
				return
			}
			sctx := ctx
			if tok != "" {
				sctx = metadata.AppendToOutgoingContext(ctx, "satpage-token", tok)
			}
			defer func() {
				_, _ = pages.EndSession(sctx, &satpagev1.EndSessionRequest{SessionId: id, ScenarioTimeNs: int64(res.r + 1)})
			}()
			// One write (the page table exists, the first reads create the other pages):
			// a client's requests are rate-limited (--rate-limit), so no write storm before the clock starts.
			if err := limited(sctx, func() error {
				_, err := pages.WritePage(sctx, &satpagev1.WritePageRequest{SessionId: id, Page: 0, Data: data})
				return err
			}); err != nil {
				res.err = fmt.Errorf("write %s session %d: %w", mode, w, err)
				ready.Done()
				return
			}
			ready.Done()
			<-start
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			req := &satpagev1.ReadPagesRequest{SessionId: id, Pages: make([]uint32, o.Batch)}
			if !o.Live {
				req.ScenarioTimeNs = make([]int64, o.Batch)
			}
			for time.Since(begin) < o.Duration && res.n < o.MaxAccesses/o.Workers+o.Batch {
				for i := range req.Pages {
					req.Pages[i] = uint32(rng.IntN(o.Pages))
				}
				for i := range req.ScenarioTimeNs {
					req.ScenarioTimeNs[i] = int64(res.r + 1) // replay: time moves on by 1 ns a request
				}
				t0 := time.Now()
				r, err := pages.ReadPages(sctx, req)
				if status.Code(err) == codes.ResourceExhausted { // the per-client rate limit: counted, not fatal
					res.limited++
					time.Sleep(5 * time.Millisecond)
					continue
				}
				if err != nil {
					res.err = fmt.Errorf("read %s session %d: %w", mode, w, err)
					return
				}
				res.lat = append(res.lat, time.Since(t0))
				res.n += len(r.Results)
				res.r++
				for _, x := range r.Results {
					if x.Outcome == satpagev1.Outcome_OUTCOME_MOVED {
						res.m++
					}
				}
			}
		}()
	}
	ready.Wait()
	begin = time.Now()
	close(start)
	done.Wait()
	secs := time.Since(begin).Seconds()
	g := GatewayResult{Mode: mode, Sessions: o.Workers, Seconds: secs}
	var lat []time.Duration
	for _, r := range outs {
		if r.err != nil {
			return g, r.err
		}
		g.Accesses += r.n
		g.Requests += r.r
		g.Moved += r.m
		g.Limited += r.limited
		lat = append(lat, r.lat...)
	}
	g.AccessesPerS = float64(g.Accesses) / secs
	if len(lat) > 0 {
		slices.Sort(lat)
		g.P50Ms = ms(lat[len(lat)/2])
		g.P99Ms = ms(lat[min(len(lat)-1, len(lat)*99/100)])
	}
	return g, nil
}

// limited runs call until it is not refused by the gateway's per-client rate
// limit (ResourceExhausted), pausing between tries, for at most 10 s: the
// set-up of a run that follows another starts with that run's bucket empty.
func limited(ctx context.Context, call func() error) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := call()
		if status.Code(err) != codes.ResourceExhausted || time.Now().After(deadline) {
			return err
		}
		select {
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
			return err
		}
	}
}
