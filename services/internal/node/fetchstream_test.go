package node_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/clustertest"
	"github.com/satpage/satpage/services/internal/errs"
	"github.com/satpage/satpage/services/internal/leakcheck"
	"github.com/satpage/satpage/services/internal/peers"
	"github.com/satpage/satpage/services/internal/tlsconf"
	"github.com/satpage/satpage/services/internal/tlsconf/tlstest"
)

// unaryFetches is an Options.Interceptor counting the unary FetchPages the
// satellites serve.
func unaryFetches(n *atomic.Int64) func(int) grpc.UnaryServerInterceptor {
	return func(int) grpc.UnaryServerInterceptor {
		return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if info.FullMethod == satpagev1.SatelliteService_FetchPages_FullMethodName {
				n.Add(1)
			}
			return h(ctx, req)
		}
	}
}

// tour writes 8 pages at satellite 0, then hands the session to satellites
// 1, 3 and 17 in turn (one hop and more from the last) and reads them there,
// one by one and as one ReadPages; it returns what every read reported.
func tour(t *testing.T, c *clustertest.Cluster, session string) []string {
	t.Helper()
	return tourReading(t, c, session, func(_ int, p satpagev1.PageServiceClient, req *satpagev1.ReadPageRequest) (*satpagev1.ReadPageResponse, error) {
		return p.ReadPage(context.Background(), req)
	})
}

// tourReading is tour with its one-by-one reads at satellite i made by read.
func tourReading(t *testing.T, c *clustertest.Cluster, session string,
	read func(i int, p satpagev1.PageServiceClient, req *satpagev1.ReadPageRequest) (*satpagev1.ReadPageResponse, error)) []string {
	t.Helper()
	ctx := context.Background()
	p, s := c.Satellite(t, 0)
	if _, err := s.OpenSession(ctx, &satpagev1.OpenSessionRequest{SessionId: session}); err != nil {
		t.Fatal(err)
	}
	for pg := range uint32(8) {
		if _, err := p.WritePage(ctx, &satpagev1.WritePageRequest{SessionId: session, Page: pg, Data: []byte(fmt.Sprint("page ", pg))}); err != nil {
			t.Fatal(err)
		}
	}
	var out []string
	report := func(r *satpagev1.ReadPageResponse) {
		out = append(out, fmt.Sprintf("%s at %d: %v, %d hops from %d", r.Data, r.Satellite, r.Outcome, r.Hops, r.PreviousOwner))
	}
	at := 0
	for _, next := range []int{1, 3, 17} {
		_, s := c.Satellite(t, at)
		if _, err := s.HandOver(ctx, &satpagev1.HandOverRequest{SessionId: session, ToSatellite: uint32(next)}); err != nil {
			t.Fatal(err)
		}
		at = next
		p, _ := c.Satellite(t, at)
		if next == 3 {
			r, err := p.ReadPages(ctx, &satpagev1.ReadPagesRequest{SessionId: session, Pages: []uint32{0, 1, 2, 3, 4, 5, 6, 7},
				ScenarioTimeNs: make([]int64, 8)})
			if err != nil {
				t.Fatal(err)
			}
			for _, x := range r.Results {
				report(x)
			}
			continue
		}
		for pg := range uint32(8) {
			r, err := read(at, p, &satpagev1.ReadPageRequest{SessionId: session, Page: pg})
			if err != nil {
				t.Fatal(err)
			}
			report(r)
		}
	}
	return out
}

func TestFaultsOverFetchStreamsAreTheFaultsOfUnaryCalls(t *testing.T) {
	const spec = "walker-star:30/2/1:500:87"
	var overStreams, overCalls atomic.Int64
	withStreams := clustertest.New(t, spec, clustertest.Options{FetchStreams: true, Interceptor: unaryFetches(&overStreams)})
	withCalls := clustertest.New(t, spec, clustertest.Options{Interceptor: unaryFetches(&overCalls)})
	// The first fetch to a satellite whose connection is not up yet is a
	// unary call (it waits for the connection within its own deadline);
	// every one after it takes the stream.
	for _, session := range []string{"first", "second"} {
		overStreams.Store(0)
		streamed, called := tour(t, withStreams, session), tour(t, withCalls, session)
		if !slices.Equal(streamed, called) {
			t.Errorf("session %s: reads over fetch streams:\n%v\nover unary calls:\n%v", session, streamed, called)
		}
	}
	if overCalls.Load() == 0 {
		t.Fatal("no unary FetchPages without streams: the tour moved nothing")
	}
	if n := overStreams.Load(); n != 0 {
		t.Errorf("%d unary FetchPages with fetch streams, want every fetch on a stream", n)
	}
}

func TestABatchAboveTheStreamBoundIsAUnaryCall(t *testing.T) {
	var unary atomic.Int64
	c := clustertest.New(t, "walker-star:30/2/1:500:87", clustertest.Options{FetchStreams: true, Interceptor: unaryFetches(&unary)})
	ctx := context.Background()
	const pages = 3*peers.StreamMaxPages + 1
	op, os := c.Satellite(t, 0)
	if _, err := os.OpenSession(ctx, &satpagev1.OpenSessionRequest{SessionId: "s"}); err != nil {
		t.Fatal(err)
	}
	for pg := range uint32(pages) {
		if _, err := op.WritePage(ctx, &satpagev1.WritePageRequest{SessionId: "s", Page: pg, Data: []byte(fmt.Sprint("page ", pg))}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.HandOver(ctx, &satpagev1.HandOverRequest{SessionId: "s", ToSatellite: 1}); err != nil {
		t.Fatal(err)
	}
	p, _ := c.Satellite(t, 1)
	read := func(pgs ...uint32) {
		t.Helper()
		r, err := p.ReadPages(ctx, &satpagev1.ReadPagesRequest{SessionId: "s", Pages: pgs, ScenarioTimeNs: make([]int64, len(pgs))})
		if err != nil {
			t.Fatal(err)
		}
		for i, x := range r.Results {
			if x.Outcome != satpagev1.Outcome_OUTCOME_MOVED || string(x.Data) != fmt.Sprint("page ", pgs[i]) {
				t.Fatalf("page %d: %v %q, want moved from satellite 0", pgs[i], x.Outcome, x.Data)
			}
		}
	}
	read(0) // the connection to satellite 0 comes up (a unary call)
	// That call returns once the connection's picker is ready, but grpc-go
	// turns the connection's state Ready just after (ccBalancerWrapper.UpdateState
	// updates the picker first), and until then a fetch is a unary call by
	// design: wait for the state the pool decides on (seen in CI under -race).
	ready, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := c.Pools[1].Reconnect(ready, 0); err != nil {
		t.Fatalf("satellite 1's connection to satellite 0 not ready 5 s after a call over it: %v", err)
	}
	unary.Store(0)
	at := func(from, n uint32) []uint32 {
		out := make([]uint32, n)
		for i := range out {
			out[i] = from + uint32(i)
		}
		return out
	}
	read(at(1, peers.StreamMaxPages)...)
	if n := unary.Load(); n != 0 {
		t.Fatalf("a fetch of %d pages (the bound) made %d unary FetchPages, want it on the stream", peers.StreamMaxPages, n)
	}
	read(at(1+peers.StreamMaxPages, pages-1-peers.StreamMaxPages)...)
	if n := unary.Load(); n != 1 {
		t.Fatalf("a fetch of %d pages (above the bound) made %d unary FetchPages, want 1", pages-1-peers.StreamMaxPages, n)
	}
}

func TestAFetchStreamCarriesTheOwnersErrorAsTheUnaryCallDoes(t *testing.T) {
	ctx := context.Background()
	fail := func(streams bool) error {
		c := clustertest.New(t, "walker-star:30/2/1:500:87", clustertest.Options{FetchStreams: streams})
		placePage(t, c, "s", 0, 2, []byte("payload"))
		if _, err := c.Stores[0].DeleteFrames(ctx, "s", []uint32{7}); err != nil {
			t.Fatal(err)
		}
		p, _ := c.Satellite(t, 2)
		_, err := p.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: "s", Page: 7})
		return err
	}
	streamed, called := fail(true), fail(false)
	if called == nil {
		t.Fatal("a read of a page its owner lost succeeded over a unary call")
	}
	if status.Code(streamed) != status.Code(called) || errs.Reason(streamed) != errs.Reason(called) {
		t.Errorf("over a stream: %v (reason %q); over a unary call: %v (reason %q)",
			streamed, errs.Reason(streamed), called, errs.Reason(called))
	}
}

// A relay that dies ends the streams through it: the fetches on them fail
// Unavailable, the origin sends them again around it, and nothing is lost;
// once it is back, fetches through it take a new stream.
func TestAFetchStreamThatEndsLosesNoFetch(t *testing.T) {
	c := clustertest.New(t, "walker-star:15/1/0:500:87", clustertest.Options{FetchStreams: true})
	ctx := context.Background()
	p0, s0 := c.Satellite(t, 0)
	if _, err := s0.OpenSession(ctx, &satpagev1.OpenSessionRequest{SessionId: "s"}); err != nil {
		t.Fatal(err)
	}
	for pg := range uint32(3) {
		if _, err := p0.WritePage(ctx, &satpagev1.WritePageRequest{SessionId: "s", Page: pg, Data: []byte(fmt.Sprint("page ", pg))}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s0.HandOver(ctx, &satpagev1.HandOverRequest{SessionId: "s", ToSatellite: 2}); err != nil {
		t.Fatal(err)
	}
	p2, _ := c.Satellite(t, 2)
	read := func(pg uint32, hops ...uint32) {
		t.Helper()
		r, err := p2.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: "s", Page: pg})
		if err != nil || string(r.Data) != fmt.Sprint("page ", pg) || !slices.Contains(hops, r.Hops) {
			t.Fatalf("read of page %d: got %v, %v, want it over %v hops", pg, r, err, hops)
		}
	}
	read(0, 2) // 0-1-2: the streams 2->1 and 1->0 open
	c.Kill(1)
	read(1, 13) // the other way round the plane
	c.Restart(t, 1)
	read(2, 2, 13) // through 1 again once the detector holds it alive, else around
}

// Drain ends the fetch streams a node serves (a daemon's graceful stop would
// otherwise wait for them), after answering what they carried.
func TestDrainEndsTheFetchStreamsANodeServes(t *testing.T) {
	c := clustertest.New(t, "walker-star:30/2/1:500:87", clustertest.Options{FetchStreams: true})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, s := c.Satellite(t, 0)
	st, err := s.FetchStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(&satpagev1.FetchStreamRequest{Id: 7, Request: &satpagev1.FetchPagesRequest{SessionId: "nobody", Pages: []uint32{0},
		Route: &satpagev1.Route{Origin: 1, Destination: 0, Hops: 1, Path: []uint32{1}}}}); err != nil {
		t.Fatal(err)
	}
	m, err := st.Recv()
	if err != nil || m.Id != 7 || len(m.Status) == 0 {
		t.Fatalf("a fetch of an unknown session: got %v, %v, want answer 7 with an error", m, err)
	}
	c.Nodes[0].Drain()
	if m, err := st.Recv(); err == nil {
		t.Fatalf("after Drain: got answer %v, want the stream ended", m)
	} else if ctx.Err() != nil {
		t.Fatal("the stream outlived Drain until the deadline")
	}
}

// The access policy admits each message of a stream as the unary FetchPages:
// a gateway cannot open one, and a satellite cannot pass a fetch off as
// another's.
func TestTheAccessPolicyAdmitsEachMessageOfAFetchStream(t *testing.T) {
	dir := t.TempDir()
	tlstest.Write(t, dir, 30)
	c := clustertest.New(t, "walker-star:30/2/1:500:87", clustertest.Options{TLSDir: dir, FetchStreams: true})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	open := func(m *tlsconf.Material) (grpc.BidiStreamingClient[satpagev1.FetchStreamRequest, satpagev1.FetchStreamResponse], error) {
		conn := c.DialAs(t, "sat-0", credentials.NewTLS(m.Client(tlsconf.SatelliteName(0))))
		t.Cleanup(func() { conn.Close() })
		st, err := satpagev1.NewSatelliteServiceClient(conn).FetchStream(ctx)
		if err != nil {
			return nil, err
		}
		// A refused stream fails Send with io.EOF: its status comes with Recv.
		_ = st.Send(&satpagev1.FetchStreamRequest{Id: 1, Request: &satpagev1.FetchPagesRequest{SessionId: "s", Pages: []uint32{0},
			Route: &satpagev1.Route{Origin: 2, Destination: 0, Hops: 1, Path: []uint32{2}}}})
		return st, nil
	}
	gw, err := tlsconf.LoadGateway(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := open(gw); err == nil {
		_, err = st.Recv()
		if status.Code(err) != codes.PermissionDenied {
			t.Errorf("a gateway's fetch stream: got %v, want PermissionDenied", err)
		}
	} else if status.Code(err) != codes.PermissionDenied {
		t.Errorf("a gateway's fetch stream: got %v, want PermissionDenied", err)
	}
	// Satellite 1 is a neighbour of 0, but the route says satellite 2 sent it.
	s1, err := tlsconf.LoadSatellite(dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	st, err := open(s1)
	if err != nil {
		t.Fatal(err)
	}
	m, err := st.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Status) == 0 || m.Id != 1 {
		t.Fatalf("a forged route: got answer %d with pages %v, want answer 1 refused", m.Id, m.Response)
	}
	if sp, err := statusOf(m.Status); err != nil || sp.Code() != codes.PermissionDenied {
		t.Errorf("a forged route: got %v, %v, want PermissionDenied", sp, err)
	}
}

// TestAPoolClosesItsFetchStreamsAndTheirReaders: after the cluster (its pools
// and servers) is closed, no goroutine of satpage's code is left.
func TestAPoolClosesItsFetchStreamsAndTheirReaders(t *testing.T) {
	before := leakcheck.Snapshot()
	t.Run("cluster", func(t *testing.T) {
		c := clustertest.New(t, "walker-star:30/2/1:500:87", clustertest.Options{FetchStreams: true})
		tour(t, c, "s")
	})
	leakcheck.Check(t, before, 5*time.Second)
}

// statusOf decodes a FetchStreamResponse's status.
func statusOf(b []byte) (*status.Status, error) {
	var sp spb.Status
	if err := proto.Unmarshal(b, &sp); err != nil {
		return nil, err
	}
	return status.FromProto(&sp), nil
}
