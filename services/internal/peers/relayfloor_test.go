package peers

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	testpb "google.golang.org/grpc/interop/grpc_testing"

	"github.com/satpage/satpage/services/internal/tlsconf"
	"github.com/satpage/satpage/services/internal/tlsconf/tlstest"
)

// BenchmarkRelayFloor is the floor under a one-page one-hop fault between
// processes on this machine: what two chained gRPC calls cost with nothing of
// satpage's in them. It starts floorServers processes (40, or
// SATPAGE_RELAY_FLOOR_SERVERS; this test binary, as
// TestRelayFloorServer) with the daemons' transport options, mutual TLS and
// GOMAXPROCS=1, as the local cluster runs satnodes; from this process, 32
// workers in a closed loop each send, for floorSeconds per run:
//
//   - bare: a health Check to server w (the bare round trip of make bench-services);
//   - relay: a request to server a, whose handler makes one unary call to
//     server b for a 4 KiB answer and returns it (S and O of a fault, no page table);
//   - stream: the same, with a's call to b one message each way on a stream
//     per peer, as the fetch stream carries FetchPages;
//   - session stream: as stream, and the worker's requests to a are messages
//     of one stream per worker too (what a client's session stream would save).
//
// Each round runs the four; relay_vs_bare and stream_vs_bare are the medians of
// the rounds' rate ratios, *_cpu the CPU per request of all the processes in
// bare round trips (docs/services.md, "The fetch stream"). One iteration:
//
//	go test -run '^$' -bench RelayFloor -benchtime 1x ./internal/peers
func BenchmarkRelayFloor(b *testing.B) {
	floorServers := floorServersDefault
	if s := os.Getenv("SATPAGE_RELAY_FLOOR_SERVERS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 2 || n > 1000 {
			b.Fatalf("SATPAGE_RELAY_FLOOR_SERVERS=%q: want 2 to 1000 servers", s)
		}
		floorServers = n
	}
	b.Logf("%d server processes, %d workers, %d rounds of %d s", floorServers, floorWorkers, floorRounds, floorSeconds)
	dir := b.TempDir()
	tlstest.Write(b, dir, floorServers)
	var pids []int
	for i := range floorServers {
		c := exec.Command(os.Args[0], "-test.run", "^TestRelayFloorServer$")
		c.Env = append(os.Environ(), "SATPAGE_RELAY_FLOOR="+dir+","+strconv.Itoa(i),
			"GOMAXPROCS=1", "GOGC=200")
		c.Stdout, c.Stderr = os.Stderr, os.Stderr
		if err := c.Start(); err != nil {
			b.Fatal(err)
		}
		pids = append(pids, c.Process.Pid)
		b.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	}
	gw, err := tlsconf.LoadGateway(dir)
	if err != nil {
		b.Fatal(err)
	}
	conns := make([]*grpc.ClientConn, floorServers)
	for i := range floorServers {
		conns[i] = floorDial(b, gw, i)
	}
	r := rand.New(rand.NewPCG(1, 2))
	pairs := make([][2]int, floorWorkers)
	for w := range pairs {
		a := r.IntN(floorServers)
		o := r.IntN(floorServers - 1)
		if o >= a {
			o++
		}
		pairs[w] = [2]int{a, o}
	}
	ctx := context.Background()
	// sessions: each worker's stream to its S (floorSession), opened on first use.
	sessions := make([]testpb.BenchmarkService_StreamingCallClient, floorWorkers)
	call := func(w int, mode byte) error {
		if mode == floorBare {
			_, err := healthpb.NewHealthClient(conns[w%floorServers]).Check(ctx, &healthpb.HealthCheckRequest{})
			return err
		}
		a, o := pairs[w][0], pairs[w][1]
		var resp *testpb.SimpleResponse
		var err error
		if mode == floorSession {
			if sessions[w] == nil {
				if sessions[w], err = testpb.NewBenchmarkServiceClient(conns[a]).StreamingCall(ctx); err != nil {
					return err
				}
			}
			if err = sessions[w].Send(floorRequest(mode, o)); err == nil {
				resp, err = sessions[w].Recv()
			}
			if err != nil {
				sessions[w] = nil
			}
		} else {
			resp, err = testpb.NewBenchmarkServiceClient(conns[a]).UnaryCall(ctx, floorRequest(mode, o))
		}
		if err == nil && len(resp.GetPayload().GetBody()) != floorPage {
			err = fmt.Errorf("answer of %d bytes, want %d", len(resp.GetPayload().GetBody()), floorPage)
		}
		return err
	}
	// Every connection up and every stream open before the clock starts.
	deadline := time.Now().Add(30 * time.Second)
	for w := range floorWorkers {
		for _, mode := range []byte{floorBare, floorRelay, floorStream, floorSession} {
			for err := call(w, mode); err != nil; err = call(w, mode) {
				if time.Now().After(deadline) {
					b.Fatalf("servers not up: %v", err)
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
	}
	run := func(mode byte) (perS, cpuUs float64) {
		var wg sync.WaitGroup
		counts := make([]int, floorWorkers)
		errs := make([]error, floorWorkers)
		c0 := procCPU(append(pids, os.Getpid()))
		t0 := time.Now()
		stop := t0.Add(floorSeconds * time.Second)
		for w := range floorWorkers {
			wg.Go(func() {
				for time.Now().Before(stop) && errs[w] == nil {
					errs[w] = call(w, mode)
					counts[w]++
				}
			})
		}
		wg.Wait()
		elapsed := time.Since(t0).Seconds()
		cpu := procCPU(append(pids, os.Getpid())) - c0
		n := 0
		for w, c := range counts {
			if errs[w] != nil {
				b.Fatal(errs[w])
			}
			n += c
		}
		return float64(n) / elapsed, cpu / float64(n) * 1e6
	}
	var relay, stream, session, relayCPU, streamCPU, sessionCPU []float64
	for round := range floorRounds {
		bare, bareCPU := run(floorBare)
		rel, relCPU := run(floorRelay)
		str, strCPU := run(floorStream)
		ses, sesCPU := run(floorSession)
		relay, stream, session = append(relay, rel/bare), append(stream, str/bare), append(session, ses/bare)
		relayCPU, streamCPU = append(relayCPU, relCPU/bareCPU), append(streamCPU, strCPU/bareCPU)
		sessionCPU = append(sessionCPU, sesCPU/bareCPU)
		b.Logf("round %d: bare %.0f/s (%.0f us CPU); relay %.0f/s (%.0f us): %.3f of bare; stream %.0f/s (%.0f us): %.3f; session stream %.0f/s (%.0f us): %.3f",
			round+1, bare, bareCPU, rel, relCPU, rel/bare, str, strCPU, str/bare, ses, sesCPU, ses/bare)
	}
	b.ReportMetric(median(relay), "relay_vs_bare")
	b.ReportMetric(median(stream), "stream_vs_bare")
	b.ReportMetric(median(session), "session_vs_bare")
	b.ReportMetric(median(relayCPU), "relay_cpu")
	b.ReportMetric(median(streamCPU), "stream_cpu")
	b.ReportMetric(median(sessionCPU), "session_cpu")
}

const (
	// as bench_services.py --only-single-page's constellation; make
	// bench-services runs 150 (SATPAGE_RELAY_FLOOR_SERVERS sets it)
	floorServersDefault = 40
	floorWorkers        = 32
	floorRounds         = 5
	floorSeconds        = 3
	floorPage           = 4096

	floorBare   byte = 0 // modes, the first byte of a request's body
	floorRelay  byte = 1
	floorStream byte = 2
	floorAnswer byte = 3 // at O: answer with the page
	// floorSession: stream as floorStream, and the worker's requests to S are
	// messages of one stream per worker too (a client's session stream)
	floorSession byte = 4
)

func floorPort(i int) int { return 47000 + i }

func floorRequest(mode byte, to int) *testpb.SimpleRequest {
	body := make([]byte, 13)
	body[0] = mode
	binary.LittleEndian.PutUint32(body[1:], uint32(to))
	return &testpb.SimpleRequest{Payload: &testpb.Payload{Body: body}}
}

func floorDial(b testing.TB, m *tlsconf.Material, i int) *grpc.ClientConn {
	cc, err := grpc.NewClient(fmt.Sprintf("127.0.0.1:%d", floorPort(i)),
		grpc.WithTransportCredentials(credentials.NewTLS(m.Client(tlsconf.SatelliteName(uint32(i))))),
		grpc.WithInitialWindowSize(streamWindowBytes), grpc.WithInitialConnWindowSize(connWindowBytes),
		grpc.WithWriteBufferSize(bufferBytes), grpc.WithReadBufferSize(bufferBytes))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cc.Close() })
	return cc
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// procCPU is the user + system CPU seconds of pids (/proc, clock ticks of 1/100 s).
func procCPU(pids []int) float64 {
	total := 0.0
	for _, p := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndex(s, ")")+2:])
		u, _ := strconv.ParseFloat(f[11], 64)
		st, _ := strconv.ParseFloat(f[12], 64)
		total += (u + st) / 100
	}
	return total
}

// TestRelayFloorServer is one server of BenchmarkRelayFloor (skipped unless it
// started it). It ends when its parent does.
func TestRelayFloorServer(t *testing.T) {
	env := os.Getenv("SATPAGE_RELAY_FLOOR")
	if env == "" {
		t.Skip("a server of BenchmarkRelayFloor")
	}
	parts := strings.Split(env, ",")
	dir := parts[0]
	i, _ := strconv.Atoi(parts[1])
	m, err := tlsconf.LoadSatellite(dir, uint32(i))
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(append(ServerOptions(), grpc.Creds(credentials.NewTLS(m.Server())))...)
	healthpb.RegisterHealthServer(srv, health.NewServer())
	testpb.RegisterBenchmarkServiceServer(srv, &floorServer{m: m, page: make([]byte, floorPage+8),
		conns: map[int]*grpc.ClientConn{}, streams: map[int]*relayStream{}})
	lis, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", floorPort(i)))
	if err != nil {
		t.Fatal(err)
	}
	go func() { // orphaned when the benchmark dies: stop with it
		for os.Getppid() != 1 {
			time.Sleep(time.Second)
		}
		os.Exit(0)
	}()
	_ = srv.Serve(lis)
}

type floorServer struct {
	testpb.UnimplementedBenchmarkServiceServer
	m    *tlsconf.Material
	page []byte // 8 bytes of id, then the page

	mu      sync.Mutex
	conns   map[int]*grpc.ClientConn
	streams map[int]*relayStream
}

func (s *floorServer) conn(o int) *grpc.ClientConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.conns[o]; ok {
		return c
	}
	c, err := grpc.NewClient(fmt.Sprintf("127.0.0.1:%d", floorPort(o)),
		grpc.WithTransportCredentials(credentials.NewTLS(s.m.Client(tlsconf.SatelliteName(uint32(o))))),
		grpc.WithInitialWindowSize(streamWindowBytes), grpc.WithInitialConnWindowSize(connWindowBytes),
		grpc.WithWriteBufferSize(bufferBytes), grpc.WithReadBufferSize(bufferBytes))
	if err != nil {
		panic(err)
	}
	s.conns[o] = c
	return c
}

func (s *floorServer) UnaryCall(ctx context.Context, req *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	body := req.GetPayload().GetBody()
	if len(body) < 5 {
		return nil, fmt.Errorf("floor: short request")
	}
	to := int(binary.LittleEndian.Uint32(body[1:]))
	switch body[0] {
	case floorAnswer:
		return &testpb.SimpleResponse{Payload: &testpb.Payload{Body: s.page[8:]}}, nil
	case floorRelay:
		return testpb.NewBenchmarkServiceClient(s.conn(to)).UnaryCall(ctx, floorRequest(floorAnswer, to))
	case floorStream:
		st, err := s.stream(to)
		if err != nil {
			return nil, err
		}
		page, err := st.call(ctx)
		if err != nil {
			return nil, err
		}
		return &testpb.SimpleResponse{Payload: &testpb.Payload{Body: page}}, nil
	}
	return nil, fmt.Errorf("floor: mode %d", body[0])
}

// StreamingCall is O's end of a stream (each message answered with its id
// and the page) or S's end of a worker's session stream (each message a
// floorRequest: relayed to O on the stream to it, answered with the page).
func (s *floorServer) StreamingCall(st testpb.BenchmarkService_StreamingCallServer) error {
	out := slices.Clone(s.page)
	for {
		req, err := st.Recv()
		if err != nil {
			return nil
		}
		if body := req.GetPayload().GetBody(); len(body) == 13 && body[0] == floorSession {
			to, err := s.stream(int(binary.LittleEndian.Uint32(body[1:])))
			if err != nil {
				return err
			}
			page, err := to.call(st.Context())
			if err != nil {
				return err
			}
			if err := st.Send(&testpb.SimpleResponse{Payload: &testpb.Payload{Body: page}}); err != nil {
				return err
			}
			continue
		}
		copy(out, req.GetPayload().GetBody())
		if err := st.Send(&testpb.SimpleResponse{Payload: &testpb.Payload{Body: out}}); err != nil {
			return err
		}
	}
}

func (s *floorServer) stream(o int) (*relayStream, error) {
	c := s.conn(o)
	s.mu.Lock()
	defer s.mu.Unlock()
	if f, ok := s.streams[o]; ok {
		return f, nil
	}
	st, err := testpb.NewBenchmarkServiceClient(c).StreamingCall(context.Background())
	if err != nil {
		return nil, err
	}
	f := &relayStream{st: st, waiting: map[uint64]chan []byte{}}
	s.streams[o] = f
	go f.read()
	return f, nil
}

// relayStream carries calls to one peer, each a message answered by id (as peers.fetchStream).
type relayStream struct {
	sendMu  sync.Mutex
	st      testpb.BenchmarkService_StreamingCallClient
	mu      sync.Mutex
	next    uint64
	waiting map[uint64]chan []byte
}

func (f *relayStream) call(ctx context.Context) ([]byte, error) {
	ch := make(chan []byte, 1)
	f.mu.Lock()
	f.next++
	id := f.next
	f.waiting[id] = ch
	f.mu.Unlock()
	body := make([]byte, 8)
	binary.LittleEndian.PutUint64(body, id)
	f.sendMu.Lock()
	err := f.st.Send(&testpb.SimpleRequest{Payload: &testpb.Payload{Body: body}})
	f.sendMu.Unlock()
	if err != nil {
		return nil, err
	}
	select {
	case b := <-ch:
		return b[8:], nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (f *relayStream) read() {
	for {
		r, err := f.st.Recv()
		if err != nil {
			return
		}
		body := r.GetPayload().GetBody()
		id := binary.LittleEndian.Uint64(body)
		f.mu.Lock()
		ch := f.waiting[id]
		delete(f.waiting, id)
		f.mu.Unlock()
		if ch != nil {
			ch <- body
		}
	}
}
