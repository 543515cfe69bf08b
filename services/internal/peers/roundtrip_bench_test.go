package peers

import (
	"context"
	"net"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	testpb "google.golang.org/grpc/interop/grpc_testing"

	"github.com/satpage/satpage/services/internal/tlsconf"
	"github.com/satpage/satpage/services/internal/tlsconf/tlstest"
)

// What a long-lived stream per peer would save against the unary call each
// relayed fetch makes: the same request and 4 KiB answer as a unary call and
// as one message each way on an open bidirectional stream, between two
// satellites' certificates over loopback TCP with mutual TLS and the daemons'
// transport options, client and server in this process. cpu-us/op is both
// ends' CPU per round trip (docs/services.md, "The gRPC side of a one-page
// fault"). Run with GOMAXPROCS=1, as a satnode runs.

type echoServer struct {
	testpb.UnimplementedBenchmarkServiceServer
	answer []byte
}

func (e *echoServer) UnaryCall(context.Context, *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	return &testpb.SimpleResponse{Payload: &testpb.Payload{Body: e.answer}}, nil
}

func (e *echoServer) StreamingCall(s testpb.BenchmarkService_StreamingCallServer) error {
	for {
		if _, err := s.Recv(); err != nil {
			return nil // the client closed the stream
		}
		if err := s.Send(&testpb.SimpleResponse{Payload: &testpb.Payload{Body: e.answer}}); err != nil {
			return err
		}
	}
}

func cpuTime(b *testing.B) time.Duration {
	var r syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &r); err != nil {
		b.Fatal(err)
	}
	return time.Duration(r.Utime.Nano() + r.Stime.Nano())
}

// echoPeer serves satellite 1 on loopback and returns satellite 0's client of it.
func echoPeer(b *testing.B) testpb.BenchmarkServiceClient {
	dir := b.TempDir()
	tlstest.Write(b, dir, 2)
	s0, err := tlsconf.LoadSatellite(dir, 0)
	if err != nil {
		b.Fatal(err)
	}
	s1, err := tlsconf.LoadSatellite(dir, 1)
	if err != nil {
		b.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := grpc.NewServer(append(ServerOptions(), grpc.Creds(credentials.NewTLS(s1.Server())))...)
	testpb.RegisterBenchmarkServiceServer(srv, &echoServer{answer: make([]byte, 4096)})
	served := make(chan struct{})
	go func() { defer close(served); _ = srv.Serve(lis) }()
	b.Cleanup(func() { srv.Stop(); <-served })
	p := NewPool(func(uint32) string { return lis.Addr().String() },
		grpc.WithTransportCredentials(credentials.NewTLS(s0.Client(tlsconf.SatelliteName(1)))))
	b.Cleanup(func() { _ = p.Close() })
	cc, err := p.conn(1)
	if err != nil {
		b.Fatal(err)
	}
	return testpb.NewBenchmarkServiceClient(cc)
}

func BenchmarkRoundTripUnary(b *testing.B) {
	c := echoPeer(b)
	ctx := context.Background()
	req := &testpb.SimpleRequest{ResponseSize: 4096}
	if _, err := c.UnaryCall(ctx, req); err != nil {
		b.Fatal(err) // the handshake, outside the measurement
	}
	t0 := cpuTime(b)
	for b.Loop() {
		if r, err := c.UnaryCall(ctx, req); err != nil || len(r.Payload.Body) != 4096 {
			b.Fatalf("got %v, %v, want 4096 bytes", r, err)
		}
	}
	b.ReportMetric(float64((cpuTime(b)-t0).Nanoseconds())/1e3/float64(b.N), "cpu-us/op")
}

func BenchmarkRoundTripStream(b *testing.B) {
	c := echoPeer(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := c.StreamingCall(ctx)
	if err != nil {
		b.Fatal(err)
	}
	req := &testpb.SimpleRequest{ResponseSize: 4096}
	t0 := cpuTime(b)
	for b.Loop() {
		if err := s.Send(req); err != nil {
			b.Fatal(err)
		}
		if r, err := s.Recv(); err != nil || len(r.Payload.Body) != 4096 {
			b.Fatalf("got %v, %v, want 4096 bytes", r, err)
		}
	}
	b.ReportMetric(float64((cpuTime(b)-t0).Nanoseconds())/1e3/float64(b.N), "cpu-us/op")
	_ = s.CloseSend()
}
