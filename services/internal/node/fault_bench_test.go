package node_test

import (
	"context"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/clustertest"
	"github.com/satpage/satpage/services/internal/errs"
	"github.com/satpage/satpage/services/internal/store"
	"github.com/satpage/satpage/services/internal/tlsconf"
	"github.com/satpage/satpage/services/internal/tlsconf/tlstest"
	"github.com/satpage/satpage/services/internal/token"
)

// The benchmarks below measure the work of a one-page one-hop fault and of a
// bare gRPC round trip in one process: the satellites of a secure clustertest
// (mutual TLS over bufconn, access policy, session tokens, the satnode's cache
// in front of an in-memory store), no kernel between them and no process to
// wake. Their ratio is what a fault costs beyond the wake-ups and system calls
// that a cluster of processes adds to every message (docs/services.md, "The
// gRPC side of a one-page fault"). Run with GOMAXPROCS=1, as a satnode runs.

// cpuTime is this process's user + system CPU time.
func cpuTime(b *testing.B) time.Duration {
	var r syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &r); err != nil {
		b.Fatal(err)
	}
	return time.Duration(r.Utime.Nano() + r.Stime.Nano())
}

// secureCluster is a secure in-process cluster of spec and a connection to
// satellite i as the gateway (a satellite and gateway certificate may call
// OpenSession and HandOver; page requests need the session's token).
func secureCluster(b *testing.B, spec string, satellites int, streams bool) (func(i int) *grpc.ClientConn, *token.Issuer) {
	dir := b.TempDir()
	tlstest.Write(b, dir, satellites)
	c := clustertest.New(b, spec, clustertest.Options{TLSDir: dir, FetchStreams: streams,
		Store: func(testing.TB, int) store.PageStore { return store.WithCache(store.NewMemory(), 64<<20) }})
	gm, err := tlsconf.LoadGateway(dir)
	if err != nil {
		b.Fatal(err)
	}
	key, err := token.LoadSigningKey(filepath.Join(dir, tlsconf.TokenSigningKey))
	if err != nil {
		b.Fatal(err)
	}
	dial := func(i int) *grpc.ClientConn {
		conn := c.DialAs(b, fmt.Sprint("sat-", i), credentials.NewTLS(gm.Client(tlsconf.SatelliteName(uint32(i)))))
		b.Cleanup(func() { conn.Close() })
		return conn
	}
	return dial, token.NewIssuer(key, time.Hour)
}

// BenchmarkOneHopFaultInProcess: one session's 64 pages of 4 KiB ping-pong
// between two neighbours, one ReadPage each, every read a one-hop fault
// (FetchPages a unary call). The handover after each 64 reads is left out of
// the CPU per read.
func BenchmarkOneHopFaultInProcess(b *testing.B) { benchOneHopFault(b, false, false) }

// BenchmarkOneHopFaultOverStreamInProcess: the same with the fetches on a
// fetch stream per neighbour, as a satnode without link emulation sends them.
func BenchmarkOneHopFaultOverStreamInProcess(b *testing.B) { benchOneHopFault(b, true, false) }

// BenchmarkOneHopFaultOverReadStreamInProcess: the same with the reads too
// on a stream (PageService.ReadStream, one per satellite).
func BenchmarkOneHopFaultOverReadStreamInProcess(b *testing.B) { benchOneHopFault(b, true, true) }

func benchOneHopFault(b *testing.B, streams, readStream bool) {
	const pages = 64
	dial, iss := secureCluster(b, benchSpec, 30, streams)
	tok, _ := iss.Issue("s", pages)
	ctx := metadata.AppendToOutgoingContext(context.Background(), token.MetadataKey, tok)
	var pc [2]satpagev1.PageServiceClient
	var sc [2]satpagev1.SatelliteServiceClient
	for i := range 2 {
		conn := dial(i)
		pc[i], sc[i] = satpagev1.NewPageServiceClient(conn), satpagev1.NewSatelliteServiceClient(conn)
	}
	if _, err := sc[0].OpenSession(ctx, &satpagev1.OpenSessionRequest{SessionId: "s"}); err != nil {
		b.Fatal(err)
	}
	for p := range uint32(pages) {
		if _, err := pc[0].WritePage(ctx, &satpagev1.WritePageRequest{SessionId: "s", Page: p, Data: make([]byte, 4096)}); err != nil {
			b.Fatal(err)
		}
	}
	at := 0
	var handovers time.Duration
	handOver := func() {
		h0 := cpuTime(b)
		if _, err := sc[at].HandOver(ctx, &satpagev1.HandOverRequest{SessionId: "s", ToSatellite: uint32(1 - at)}); err != nil {
			b.Fatal(err)
		}
		at = 1 - at
		handovers += cpuTime(b) - h0
	}
	handOver()
	handovers = 0
	var rs [2]satpagev1.PageService_ReadStreamClient
	if readStream {
		for i := range 2 {
			var err error
			if rs[i], err = pc[i].ReadStream(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	readPage := func(req *satpagev1.ReadPageRequest) (*satpagev1.ReadPageResponse, error) {
		if !readStream {
			return pc[at].ReadPage(ctx, req)
		}
		if err := rs[at].Send(&satpagev1.ReadStreamRequest{Id: 1, Request: req}); err != nil {
			return nil, err
		}
		m, err := rs[at].Recv()
		if err != nil {
			return nil, err
		}
		return errs.Answer(m.Response, m.Status)
	}
	read := 0
	t0 := cpuTime(b)
	for b.Loop() {
		r, err := readPage(&satpagev1.ReadPageRequest{SessionId: "s", Page: uint32(read % pages)})
		if err != nil || r.Outcome != satpagev1.Outcome_OUTCOME_MOVED || r.Hops != 1 || len(r.Data) != 4096 {
			b.Fatalf("read %d: got %v, %v, want a one-hop move of 4096 bytes", read, r, err)
		}
		if read++; read%pages == 0 {
			handOver()
		}
	}
	b.ReportMetric(float64((cpuTime(b)-t0-handovers).Nanoseconds())/1e3/float64(b.N), "cpu-us/op")
}

// BenchmarkHealthCheckInProcess: the bare round trip of make bench-services
// (health Check) to a satellite of the same cluster.
func BenchmarkHealthCheckInProcess(b *testing.B) {
	dial, _ := secureCluster(b, benchSpec, 30, false)
	h := healthpb.NewHealthClient(dial(0))
	ctx := context.Background()
	if _, err := h.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		b.Fatal(err) // the connection's handshake, outside the measurement
	}
	t0 := cpuTime(b)
	for b.Loop() {
		r, err := h.Check(ctx, &healthpb.HealthCheckRequest{})
		if err != nil || r.Status != healthpb.HealthCheckResponse_SERVING {
			b.Fatalf("health check: got %v, %v, want SERVING", r, err)
		}
	}
	b.ReportMetric(float64((cpuTime(b)-t0).Nanoseconds())/1e3/float64(b.N), "cpu-us/op")
}

const benchSpec = "walker-star:30/2/1:500:87"

// BenchmarkLocalReadInProcess: one-page reads of pages the serving satellite
// holds (no fault): the work of a ReadPage at S around the fetch, against the
// health Check's round trip.
func BenchmarkLocalReadInProcess(b *testing.B) {
	const pages = 64
	dial, iss := secureCluster(b, benchSpec, 30, false)
	tok, _ := iss.Issue("s", pages)
	ctx := metadata.AppendToOutgoingContext(context.Background(), token.MetadataKey, tok)
	conn := dial(0)
	pc, sc := satpagev1.NewPageServiceClient(conn), satpagev1.NewSatelliteServiceClient(conn)
	if _, err := sc.OpenSession(ctx, &satpagev1.OpenSessionRequest{SessionId: "s"}); err != nil {
		b.Fatal(err)
	}
	for p := range uint32(pages) {
		if _, err := pc.WritePage(ctx, &satpagev1.WritePageRequest{SessionId: "s", Page: p, Data: make([]byte, 4096)}); err != nil {
			b.Fatal(err)
		}
	}
	read := 0
	t0 := cpuTime(b)
	for b.Loop() {
		r, err := pc.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: "s", Page: uint32(read % pages)})
		if err != nil || r.Outcome != satpagev1.Outcome_OUTCOME_LOCAL || r.Hops != 0 || len(r.Data) != 4096 {
			b.Fatalf("read %d: got %v, %v, want a local read of 4096 bytes", read, r, err)
		}
		read++
	}
	b.ReportMetric(float64((cpuTime(b)-t0).Nanoseconds())/1e3/float64(b.N), "cpu-us/op")
}
