package floor

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/clustertest"
	"github.com/satpage/satpage/services/internal/constellation"
	"github.com/satpage/satpage/services/internal/errs"
	"github.com/satpage/satpage/services/internal/peers"
)

// floors starts a floor server for every satellite of spec on loopback, each
// dialling the others through a pool of its own with fetch streams on, and
// counts the unary FetchPages they serve.
func floors(t *testing.T, spec string, pageBytes int) (*constellation.Grid, []string, []*peers.Pool, *atomic.Int64) {
	t.Helper()
	s, err := constellation.ParseSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	g, err := constellation.NewGrid(s)
	if err != nil {
		t.Fatal(err)
	}
	n := g.Satellites()
	lis := make([]net.Listener, n)
	addrs := make([]string, n)
	for i := range lis {
		if lis[i], err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
		addrs[i] = lis[i].Addr().String()
	}
	var unary atomic.Int64
	count := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if info.FullMethod == satpagev1.SatelliteService_FetchPages_FullMethodName {
			unary.Add(1)
		}
		return h(ctx, req)
	}
	pools := make([]*peers.Pool, n)
	for i := range n {
		pools[i] = peers.NewPool(func(j uint32) string { return addrs[j] }, grpc.WithTransportCredentials(insecure.NewCredentials()))
		pools[i].StreamFetches()
		f, err := New(uint32(i), g, pools[i], pageBytes)
		if err != nil {
			t.Fatal(err)
		}
		srv := grpc.NewServer(append(peers.ServerOptions(), grpc.ChainUnaryInterceptor(count))...)
		f.Register(srv)
		go func() { _ = srv.Serve(lis[i]) }()
		t.Cleanup(func() { f.Drain(); srv.Stop(); _ = pools[i].Close() })
	}
	return g, addrs, pools, &unary
}

func dial(t *testing.T, addr string) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

func TestAFloorReadIsOneHopFromTheFirstNeighbourOverItsFetchStream(t *testing.T) {
	const pageBytes = 4096
	g, addrs, pools, unary := floors(t, "walker-star:6/2/1:500:87", pageBytes)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for s := range uint32(g.Satellites()) {
		owner := g.Neighbors(s, 0)[0]
		if h, err := g.Hops(s, owner, 0); err != nil || h != 1 {
			t.Fatalf("satellite %d's first neighbour %d is %d hops away (%v), want 1", s, owner, h, err)
		}
		page := satpagev1.NewPageServiceClient(dial(t, addrs[s]))
		check := func(how string, r *satpagev1.ReadPageResponse) {
			t.Helper()
			if r.Outcome != satpagev1.Outcome_OUTCOME_MOVED || r.Hops != 1 || r.PreviousOwner != owner ||
				r.Satellite != s || len(r.Data) != pageBytes {
				t.Fatalf("%s at satellite %d: outcome %v, %d hops, from %d at %d, %d bytes; want moved 1 hop from %d at %d, %d bytes",
					how, s, r.Outcome, r.Hops, r.PreviousOwner, r.Satellite, len(r.Data), owner, s, pageBytes)
			}
		}
		r, err := page.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: "s", Page: 3})
		if err != nil {
			t.Fatal(err)
		}
		check("ReadPage", r)
		// The first fetch may go unary while the connection turns Ready (peers.Pool).
		if err := pools[s].Reconnect(ctx, owner); err != nil {
			t.Fatal(err)
		}
		unary.Store(0)
		st, err := page.ReadStream(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for id := uint64(1); id <= 5; id++ {
			resp, err := clustertest.ReadOver(t, st, id, &satpagev1.ReadPageRequest{SessionId: "s", Page: uint32(id)})
			if err != nil {
				t.Fatal(err)
			}
			check("read stream", resp)
		}
		if n := unary.Load(); n != 0 {
			t.Fatalf("satellite %d's stream reads made %d unary FetchPages, want every fetch on its fetch stream", s, n)
		}
		_ = st.CloseSend()
	}
}

func TestAFloorStreamMessageWithoutARequestIsInvalidAndTheStreamGoesOn(t *testing.T) {
	_, addrs, _, _ := floors(t, "walker-star:6/2/1:500:87", 16)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := satpagev1.NewPageServiceClient(dial(t, addrs[0])).ReadStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for id, req := range []*satpagev1.ReadPageRequest{nil, {SessionId: "s", Page: 1}} {
		if err := st.Send(&satpagev1.ReadStreamRequest{Id: uint64(id + 1), Request: req}); err != nil {
			t.Fatal(err)
		}
		m, err := st.Recv()
		if err != nil {
			t.Fatal(err)
		}
		_, err = errs.Answer(m.Response, m.Status)
		if want := map[bool]codes.Code{true: codes.InvalidArgument, false: codes.OK}[req == nil]; status.Code(err) != want {
			t.Fatalf("message %d (request %v): %v, want %v", id+1, req, err, want)
		}
	}
}

func TestANewFloorRefusesASatelliteOutsideTheGridAndAnEmptyPage(t *testing.T) {
	s, _ := constellation.ParseSpec("walker-star:6/2/1:500:87")
	g, _ := constellation.NewGrid(s)
	if _, err := New(6, g, nil, 4096); err == nil {
		t.Fatal("New(6) of a 6-satellite grid: no error")
	}
	if _, err := New(0, g, nil, 0); err == nil {
		t.Fatal("New with pages of 0 bytes: no error")
	}
}

func TestAFloorReadAfterAHandOverComesFromTheOldSatelliteOverEveryHopBetween(t *testing.T) {
	const pageBytes = 4096
	g, addrs, _, unary := floors(t, "walker-star:24/4/1:500:87", pageBytes)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sats := make([]satpagev1.SatelliteServiceClient, g.Satellites())
	pages := make([]satpagev1.PageServiceClient, g.Satellites())
	for i, a := range addrs {
		cc := dial(t, a)
		sats[i], pages[i] = satpagev1.NewSatelliteServiceClient(cc), satpagev1.NewPageServiceClient(cc)
	}
	seen := map[int]bool{}
	for to := range uint32(g.Satellites()) {
		if to == 0 {
			continue
		}
		want, err := g.Hops(0, to, 0)
		if err != nil {
			t.Fatal(err)
		}
		seen[want] = true
		session := fmt.Sprintf("s-%d", to)
		ho, err := sats[0].HandOver(ctx, &satpagev1.HandOverRequest{SessionId: session, ToSatellite: to})
		if err != nil {
			t.Fatalf("handover 0 -> %d: %v", to, err)
		}
		if int(ho.Hops) != want {
			t.Fatalf("handover 0 -> %d: the table travelled %d hops, want %d", to, ho.Hops, want)
		}
		// The first fetches may go unary while the connections turn Ready (peers.Pool).
		if _, err := pages[to].ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: session, Page: 1}); err != nil {
			t.Fatal(err)
		}
		unary.Store(0)
		st, err := pages[to].ReadStream(ctx)
		if err != nil {
			t.Fatal(err)
		}
		r, err := clustertest.ReadOver(t, st, 1, &satpagev1.ReadPageRequest{SessionId: session, Page: 2})
		if err != nil {
			t.Fatal(err)
		}
		_ = st.CloseSend()
		if r.Outcome != satpagev1.Outcome_OUTCOME_MOVED || int(r.Hops) != want || r.PreviousOwner != 0 ||
			r.Satellite != to || len(r.Data) != pageBytes {
			t.Fatalf("read at %d after a handover from 0: outcome %v, %d hops, from %d at %d, %d bytes; want moved %d hops from 0, %d bytes",
				to, r.Outcome, r.Hops, r.PreviousOwner, r.Satellite, len(r.Data), want, pageBytes)
		}
		if n := unary.Load(); n != 0 {
			t.Fatalf("a %d-hop stream read made %d unary FetchPages, want every hop on its fetch stream", want, n)
		}
		// The session's end forgets the owner: reads fetch from the first neighbour again.
		if _, err := pages[to].EndSession(ctx, &satpagev1.EndSessionRequest{SessionId: session}); err != nil {
			t.Fatal(err)
		}
		r, err = pages[to].ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: session, Page: 3})
		if err != nil {
			t.Fatal(err)
		}
		if first := g.Neighbors(to, 0)[0]; r.Hops != 1 || r.PreviousOwner != first {
			t.Fatalf("read at %d after the session ended: %d hops from %d, want 1 from %d", to, r.Hops, r.PreviousOwner, first)
		}
	}
	if !seen[1] || !seen[2] || !seen[3] {
		t.Fatalf("hop counts covered: %v, want at least 1 to 3", seen)
	}
}

func TestAFloorHandOverToASatelliteOutsideTheGridIsOutOfRange(t *testing.T) {
	_, addrs, _, _ := floors(t, "walker-star:6/2/1:500:87", 16)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := satpagev1.NewSatelliteServiceClient(dial(t, addrs[0])).HandOver(ctx,
		&satpagev1.HandOverRequest{SessionId: "s", ToSatellite: 6})
	if status.Code(err) != codes.OutOfRange {
		t.Fatalf("handover to satellite 6 of 6: %v, want OutOfRange (as a satnode answers)", err)
	}
}
