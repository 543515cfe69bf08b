// Command satload is a bounded page-fault load generator for a running cluster
// (wiring only; logic in internal/load). It prints one JSON object per hop count.
// bench/bench_services.py runs it; it is not part of the deployment.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/satpage/satpage/services/internal/auth"
	"github.com/satpage/satpage/services/internal/config"
	"github.com/satpage/satpage/services/internal/constellation"
	"github.com/satpage/satpage/services/internal/load"
	"github.com/satpage/satpage/services/internal/peers"
	"github.com/satpage/satpage/services/internal/tlsconf"
)

func main() {
	c := config.DefaultConfig()
	fs := flag.NewFlagSet("satload", flag.ExitOnError)
	fs.StringVar(&c.Constellation, "constellation", c.Constellation, "constellation spec")
	fs.StringVar(&c.PeerTemplate, "peer-template", c.PeerTemplate, "address of satellite i")
	fs.IntVar(&c.PeerPortBase, "peer-port-base", c.PeerPortBase, "port of satellite 0")
	hops := fs.String("hops", "0,1,2,4,8", `comma-separated hop counts; "echo" measures a bare gRPC health Check instead`)
	workers := fs.Int("workers", 16, "concurrent sessions")
	pages := fs.Int("pages", 64, "pages per session")
	pageBytes := fs.Int("page-bytes", 4096, "bytes per page")
	duration := fs.Duration("duration", 5*time.Second, "measuring time per hop count (bounded)")
	maxFaults := fs.Int("max-accesses", 200000, "stop a hop count after this many accesses")
	batch := fs.Int("batch", 1, "pages per request (1: ReadPage, more: ReadPages)")
	rate := fs.Float64("rate", 0, "open-loop aggregate requests per second (0: closed loop, as fast as replies come)")
	requestIDs := fs.Bool("request-ids", false, "give every read a request_id (exactly-once, as the gateway sends them)")
	interleave := fs.Bool("interleave", false, "with --rate and several hop counts: measure them at once, each at rate/N requests/s for N x --duration (as many requests per hop count; a stall of the machine falls on all alike); CPU not metered")
	readStream := fs.Bool("read-stream", false, "with --batch 1: each read a message of a read stream per session and satellite (PageService.ReadStream), not a ReadPage call")
	pidsFile := fs.String("cpu-pids", "", "file of cluster pids (one per line) whose CPU time to meter")
	fs.StringVar(&c.TLSDir, "tls-dir", "", "TLS material of a secure cluster: satload acts with the gateway's certificate and token signing key (docs/security.md)")
	fs.BoolVar(&c.Insecure, "insecure", false, "plain text (a cluster started --insecure)")
	gatewayAddr := fs.String("gateway", "", "load the gateway at this address instead of the satellites (--mode, --workers, --pages, --batch, --duration)")
	mode := fs.String("mode", "replay", "with --gateway: replay (RegisterSession, scenario times) or live (OpenLiveSession by location, the gateway's clock)")
	_ = fs.Parse(os.Args[1:])
	if *duration > 2*time.Minute || *workers < 1 || *workers > 512 || *pages < 1 || *pageBytes > config.MaxPageBytes {
		fmt.Fprintln(os.Stderr, "satload: --duration <= 2m, 1 <= --workers <= 512, --pages >= 1, --page-bytes <= 1 MiB")
		os.Exit(2)
	}
	if *readStream && (*batch != 1 || *gatewayAddr != "") {
		fmt.Fprintf(os.Stderr, "satload: --read-stream reads one page per message from the satellites: not with --batch %d or --gateway %q\n", *batch, *gatewayAddr)
		os.Exit(2)
	}
	spec, err := constellation.ParseSpec(c.Constellation)
	if err != nil {
		fmt.Fprintln(os.Stderr, "satload:", err)
		os.Exit(2)
	}
	g, _ := constellation.NewGrid(spec)
	var pids []int
	if *pidsFile != "" {
		raw, err := os.ReadFile(*pidsFile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "satload:", err)
			os.Exit(2)
		}
		for _, f := range strings.Fields(string(raw)) {
			if p, err := strconv.Atoi(f); err == nil {
				pids = append(pids, p)
			}
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if *gatewayAddr != "" {
		if *mode != "replay" && *mode != "live" {
			fmt.Fprintf(os.Stderr, "satload: --mode %q is not replay or live\n", *mode)
			os.Exit(2)
		}
		os.Exit(runGateway(ctx, *gatewayAddr, c, load.GatewayOptions{Live: *mode == "live", Workers: *workers,
			Pages: *pages, PageBytes: *pageBytes, Batch: *batch, Duration: *duration, MaxAccesses: *maxFaults,
			Satellites: spec.Satellites}))
	}
	var tok func(string) string
	pool := peers.NewPool(c.PeerAddr)
	if !c.Insecure {
		if c.TLSDir == "" {
			fmt.Fprintln(os.Stderr, "satload: --tls-dir (or --insecure for a cluster started --insecure)")
			os.Exit(2)
		}
		c.Index = 0
		sec, err := auth.Load(c, config.Gateway, slog.New(slog.DiscardHandler), nil)
		if err != nil {
			fmt.Fprintln(os.Stderr, "satload:", err)
			os.Exit(2)
		}
		pool = sec.Pool(c.PeerAddr)
		tok = func(s string) string { t, _ := sec.Issuer.Issue(s, uint32(*pages)); return t }
	}
	defer pool.Close()
	enc := json.NewEncoder(os.Stdout)
	if *interleave {
		os.Exit(runInterleaved(ctx, g, pool, *hops, load.Options{Workers: *workers, Pages: *pages, PageBytes: *pageBytes,
			Duration: *duration, MaxFaults: *maxFaults, Batch: *batch, RatePerS: *rate, Seed: 1, Token: tok,
			RequestIDs: *requestIDs, ReadStream: *readStream}, enc))
	}
	for _, h := range strings.Split(*hops, ",") {
		o := load.Options{Workers: *workers, Pages: *pages, PageBytes: *pageBytes, Duration: *duration,
			MaxFaults: *maxFaults, Batch: *batch, RatePerS: *rate, Seed: 1, CPUPids: pids, Token: tok,
			RequestIDs: *requestIDs, ReadStream: *readStream}
		var res load.Result
		if h = strings.TrimSpace(h); h == "echo" {
			res, err = load.Echo(ctx, g, pool, o)
		} else if o.Hops, err = strconv.Atoi(h); err != nil {
			fmt.Fprintf(os.Stderr, "satload: hop count %q is not an integer or \"echo\"\n", h)
			os.Exit(2)
		} else {
			res, err = load.Run(ctx, g, pool, o)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "satload:", err)
			os.Exit(1)
		}
		_ = enc.Encode(res)
	}
}

// runInterleaved measures the hop counts of hops at once (load.Interleaved),
// each at o's rate over their number for that many times o's duration, and
// prints one JSON object per hop count.
func runInterleaved(ctx context.Context, g *constellation.Grid, pool *peers.Pool, hops string, o load.Options, enc *json.Encoder) int {
	fields := strings.Split(hops, ",")
	if o.RatePerS <= 0 || len(fields) < 2 {
		fmt.Fprintf(os.Stderr, "satload: --interleave wants --rate > 0 and two or more hop counts (--rate %g, --hops %q)\n", o.RatePerS, hops)
		return 2
	}
	runs := make([]load.Options, len(fields))
	for i, h := range fields {
		h = strings.TrimSpace(h)
		n, err := strconv.Atoi(h)
		if err != nil {
			fmt.Fprintf(os.Stderr, "satload: --interleave: hop count %q is not an integer\n", h)
			return 2
		}
		runs[i] = o
		runs[i].Hops = n
		runs[i].RatePerS = o.RatePerS / float64(len(fields))
		runs[i].Duration = o.Duration * time.Duration(len(fields))
	}
	res, err := load.Interleaved(ctx, g, pool, runs)
	if err != nil {
		fmt.Fprintln(os.Stderr, "satload:", err)
		return 1
	}
	for _, r := range res {
		_ = enc.Encode(r)
	}
	return 0
}

// runGateway loads the gateway at addr as a client would (its certificate from
// the TLS directory) and prints one JSON object.
func runGateway(ctx context.Context, addr string, c config.Config, o load.GatewayOptions) int {
	creds := insecure.NewCredentials()
	if !c.Insecure {
		m, err := tlsconf.LoadClient(c.TLSDir)
		if err != nil {
			fmt.Fprintln(os.Stderr, "satload:", err)
			return 2
		}
		creds = credentials.NewTLS(m.Client(tlsconf.GatewayName()))
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		fmt.Fprintln(os.Stderr, "satload:", err)
		return 2
	}
	defer conn.Close()
	res, err := load.Gateway(ctx, conn, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "satload:", err)
		return 1
	}
	_ = json.NewEncoder(os.Stdout).Encode(res)
	return 0
}
