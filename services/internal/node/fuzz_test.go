package node

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/constellation"
	"github.com/satpage/satpage/services/internal/errs"
	"github.com/satpage/satpage/services/internal/store"
)

// noPeers fails every dial: a fuzzed request that wants a relay gets Unavailable.
type noPeers struct{}

func (noPeers) Satellite(i uint32) (satpagev1.SatelliteServiceClient, error) {
	return nil, fmt.Errorf("satellite %d: no network in the fuzz test: %w", i, errs.ErrUnavailable)
}
func (noPeers) Page(i uint32) (satpagev1.PageServiceClient, error) {
	return nil, fmt.Errorf("satellite %d: no network in the fuzz test: %w", i, errs.ErrUnavailable)
}
func (noPeers) Close() error { return nil }

// fuzzNode is satellite 3 of a 30-satellite constellation holding session "s"
// with pages 0..9 (0..4 here, 5..9 owned by satellite 4).
func fuzzNode(t testing.TB) (*Node, *store.Memory) {
	spec, _ := constellation.ParseSpec("walker-star:30/2/1:500:87")
	g, _ := constellation.NewGrid(spec)
	st := store.NewMemory()
	n, err := New(Options{Index: 3, Grid: g, Store: st, Peers: noPeers{}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_ = st.OpenTable(ctx, "s")
	for p := range uint32(10) {
		owner := uint32(3)
		if p >= 5 {
			owner = 4
		}
		_ = st.SetOwner(ctx, "s", []uint32{p}, owner)
		if owner == 3 {
			_ = st.PutFrames(ctx, "s", []store.Frame{{Page: p, Data: []byte{byte(p)}}})
		}
	}
	return n, st
}

// fuzzRequests are the decoders and handlers fuzzed: the request type a message
// is decoded as, and the handler it goes to.
var fuzzRequests = []struct {
	name string
	msg  func() proto.Message
	call func(ctx context.Context, n *Node, m proto.Message) error
}{
	{"ReadPage", func() proto.Message { return &satpagev1.ReadPageRequest{} }, func(ctx context.Context, n *Node, m proto.Message) error {
		_, err := (&pageServer{n: n}).ReadPage(ctx, m.(*satpagev1.ReadPageRequest))
		return err
	}},
	{"ReadPages", func() proto.Message { return &satpagev1.ReadPagesRequest{} }, func(ctx context.Context, n *Node, m proto.Message) error {
		_, err := (&pageServer{n: n}).ReadPages(ctx, m.(*satpagev1.ReadPagesRequest))
		return err
	}},
	{"WritePage", func() proto.Message { return &satpagev1.WritePageRequest{} }, func(ctx context.Context, n *Node, m proto.Message) error {
		_, err := (&pageServer{n: n}).WritePage(ctx, m.(*satpagev1.WritePageRequest))
		return err
	}},
	{"FetchPages", func() proto.Message { return &satpagev1.FetchPagesRequest{} }, func(ctx context.Context, n *Node, m proto.Message) error {
		_, err := (&satServer{n: n}).FetchPages(ctx, m.(*satpagev1.FetchPagesRequest))
		return err
	}},
	{"ReleasePages", func() proto.Message { return &satpagev1.ReleasePagesRequest{} }, func(ctx context.Context, n *Node, m proto.Message) error {
		_, err := (&satServer{n: n}).ReleasePages(ctx, m.(*satpagev1.ReleasePagesRequest))
		return err
	}},
	{"AcceptTable", func() proto.Message { return &satpagev1.AcceptTableRequest{} }, func(ctx context.Context, n *Node, m proto.Message) error {
		_, err := (&satServer{n: n}).AcceptTable(ctx, m.(*satpagev1.AcceptTableRequest))
		return err
	}},
	{"HandOver", func() proto.Message { return &satpagev1.HandOverRequest{} }, func(ctx context.Context, n *Node, m proto.Message) error {
		_, err := (&satServer{n: n}).HandOver(ctx, m.(*satpagev1.HandOverRequest))
		return err
	}},
	{"MovePages", func() proto.Message { return &satpagev1.MovePagesRequest{} }, func(ctx context.Context, n *Node, m proto.Message) error {
		_, err := (&satServer{n: n}).MovePages(ctx, m.(*satpagev1.MovePagesRequest))
		return err
	}},
	{"DropSession", func() proto.Message { return &satpagev1.DropSessionRequest{} }, func(ctx context.Context, n *Node, m proto.Message) error {
		_, err := (&satServer{n: n}).DropSession(ctx, m.(*satpagev1.DropSessionRequest))
		return err
	}},
}

// seedRequests are valid requests, one per handler (also written as the seed corpus).
func seedRequests() []struct {
	which uint8
	msg   proto.Message
} {
	here := &satpagev1.Route{Origin: 3, Destination: 3}
	return []struct {
		which uint8
		msg   proto.Message
	}{
		{0, &satpagev1.ReadPageRequest{SessionId: "s", Page: 1}},
		{0, &satpagev1.ReadPageRequest{SessionId: "s", Page: 7}},
		{1, &satpagev1.ReadPagesRequest{SessionId: "s", Pages: []uint32{1, 2, 42}, ScenarioTimeNs: []int64{0, 1, 2}}},
		{2, &satpagev1.WritePageRequest{SessionId: "s", Page: 3, Data: []byte("abc")}},
		{3, &satpagev1.FetchPagesRequest{Route: here, SessionId: "s", Pages: []uint32{0, 1}}},
		{3, &satpagev1.FetchPagesRequest{Route: &satpagev1.Route{Origin: 5, Destination: 3, Hops: 2, Path: []uint32{5, 4}}, SessionId: "s", Pages: []uint32{2}}},
		{4, &satpagev1.ReleasePagesRequest{Route: here, SessionId: "s", Pages: []uint32{4}, NewOwner: 7}},
		{5, &satpagev1.AcceptTableRequest{Route: here, SessionId: "t", Entries: []*satpagev1.TableEntry{{Page: 1, Owner: 2}}}},
		{6, &satpagev1.HandOverRequest{SessionId: "s", ToSatellite: 3}},
		{7, &satpagev1.MovePagesRequest{SessionId: "s"}},
		{8, &satpagev1.DropSessionRequest{Route: here, SessionId: "s"}},
	}
}

// noPageLost: every page the table says this node owns has its frame here.
func noPageLost(t *testing.T, st *store.Memory) {
	ctx := context.Background()
	tab, err := st.GetTable(ctx, "s")
	if err != nil {
		return // a fuzzed DropSession/HandOver may legitimately remove the session
	}
	for p, o := range tab {
		if o != 3 {
			continue
		}
		if _, err := st.GetFrames(ctx, "s", []uint32{p}); err != nil {
			t.Fatalf("page %d is owned here by the table but its frame is gone: %v", p, err)
		}
	}
}

func FuzzHandlers(f *testing.F) {
	for _, s := range seedRequests() {
		b, err := proto.Marshal(s.msg)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(s.which, b)
	}
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		r := fuzzRequests[int(which)%len(fuzzRequests)]
		m := r.msg()
		if err := proto.Unmarshal(data, m); err != nil {
			return // the gRPC codec would have refused it with Internal before any handler
		}
		n, st := fuzzNode(t)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		err := r.call(ctx, n, m)
		if code := status.Code(err); code == codes.Unknown || code == codes.Internal {
			t.Fatalf("%s(%v): got %v, want a specific code", r.name, m, err)
		}
		noPageLost(t, st)
	})
}

// TestWriteSeedCorpus writes the seeds as files under testdata/fuzz (run with
// SATPAGE_WRITE_CORPUS=1 after changing the requests; the files are committed).
func TestWriteSeedCorpus(t *testing.T) {
	if os.Getenv("SATPAGE_WRITE_CORPUS") == "" {
		t.Skip("set SATPAGE_WRITE_CORPUS=1 to rewrite testdata/fuzz/FuzzHandlers")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzHandlers")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, s := range seedRequests() {
		b, _ := proto.Marshal(s.msg)
		body := fmt.Sprintf("go test fuzz v1\nbyte(%q)\n[]byte(%q)\n", rune(s.which), b)
		name := fmt.Sprintf("seed-%02d-%s", i, fuzzRequests[s.which].name)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
