package auth_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/clustertest"
	"github.com/satpage/satpage/services/internal/errs"
	"github.com/satpage/satpage/services/internal/tlsconf"
	"github.com/satpage/satpage/services/internal/tlsconf/tlstest"
	"github.com/satpage/satpage/services/internal/token"
)

// spec: 8 satellites in 2 planes; the tests' sessions are served by satellite 0.
const spec = "walker-star:8/2/0:500:87"

// lockedBuffer is a log sink safe for the cluster's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

type env struct {
	c       *clustertest.Cluster
	dir     string
	logs    *lockedBuffer
	control satpagev1.GatewayServiceClient // with the client certificate
	gw      satpagev1.PageServiceClient
	signer  *token.Issuer // the gateway's key with a clock 48 h back (expired tokens)
}

func secureCluster(t testing.TB) *env {
	t.Helper()
	dir := t.TempDir()
	tlstest.Write(t, dir, 8)
	logs := &lockedBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c := clustertest.New(t, spec, clustertest.Options{TLSDir: dir, Logger: log})
	k, err := token.LoadSigningKey(filepath.Join(dir, tlsconf.TokenSigningKey))
	if err != nil {
		t.Fatal(err)
	}
	past := token.NewIssuer(k, time.Hour).WithClock(func() time.Time { return time.Now().Add(-48 * time.Hour) })
	return &env{c: c, dir: dir, logs: logs, control: c.Control, gw: c.Gateway, signer: past}
}

// register opens a session served by satellite 0 (then 1), writes page 0 and returns its token.
func (e *env) register(t testing.TB, id string, data []byte) string {
	t.Helper()
	ctx := context.Background()
	r, err := e.control.RegisterSession(ctx, &satpagev1.RegisterSessionRequest{SessionId: id, TablePages: 16,
		Visits: []*satpagev1.Visit{{Satellite: 0, StartNs: 0}, {Satellite: 1, StartNs: 1 << 40}}})
	if err != nil {
		t.Fatalf("register %s: %v", id, err)
	}
	if r.Token == "" || r.TablePages != 16 {
		t.Fatalf("register %s: got token %q, %d pages; want a token for 16 pages", id, r.Token, r.TablePages)
	}
	ctx = metadata.AppendToOutgoingContext(ctx, token.MetadataKey, r.Token)
	if _, err := e.gw.WritePage(ctx, &satpagev1.WritePageRequest{SessionId: id, Page: 0, Data: data}); err != nil {
		t.Fatalf("write %s: %v", id, err)
	}
	return r.Token
}

// intact checks that session id still has page 0 with data, at satellite 0.
func (e *env) intact(t *testing.T, id, tok string, data []byte) {
	t.Helper()
	ctx := metadata.AppendToOutgoingContext(context.Background(), token.MetadataKey, tok)
	r, err := e.gw.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: id, Page: 0})
	if err != nil {
		t.Fatalf("session %s after a refused request: %v", id, err)
	}
	if !bytes.Equal(r.Data, data) || r.Outcome != satpagev1.Outcome_OUTCOME_LOCAL || r.Satellite != 0 {
		t.Fatalf("session %s after a refused request: got %d bytes, %v at satellite %d; want its page at satellite 0",
			id, len(r.Data), r.Outcome, r.Satellite)
	}
}

// caller kinds of the table.
type caller struct {
	name   string
	creds  func(e *env, server string) credentials.TransportCredentials
	token  func(e *env, own, other string, id string) string
	anyone bool // no verified certificate
}

func tlsAs(certFile, keyFile string) func(e *env, server string) credentials.TransportCredentials {
	return func(e *env, server string) credentials.TransportCredentials {
		m, err := tlsconf.Load(e.dir, certFile, keyFile)
		if err != nil {
			panic(err)
		}
		return credentials.NewTLS(m.Client(server))
	}
}

func anonymous(e *env, server string) credentials.TransportCredentials {
	m, err := tlsconf.LoadClient(e.dir)
	if err != nil {
		panic(err)
	}
	return credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS13, RootCAs: m.CA, ServerName: server})
}

var (
	noToken    = func(*env, string, string, string) string { return "" }
	ownToken   = func(_ *env, own, _, _ string) string { return own }
	otherToken = func(_ *env, _, other, _ string) string { return other }
	oldToken   = func(e *env, _, _, id string) string { t, _ := e.signer.Issue(id, 16); return t }
)

var callers = []caller{
	{name: "none", creds: anonymous, token: noToken, anyone: true},
	{name: "plain text", creds: func(*env, string) credentials.TransportCredentials { return insecure.NewCredentials() }, token: noToken},
	{name: "client with token", creds: anonymous, token: ownToken, anyone: true},
	{name: "client with another session's token", creds: anonymous, token: otherToken, anyone: true},
	{name: "expired token", creds: anonymous, token: oldToken, anyone: true},
	{name: "client certificate", creds: tlsAs(tlsconf.ClientCert, tlsconf.ClientKey), token: noToken},
	{name: "satellite", creds: tlsAs(tlsconf.SatelliteCert(1), tlsconf.SatelliteKey(1)), token: noToken},
	{name: "gateway", creds: tlsAs(tlsconf.GatewayCert, tlsconf.GatewayKey), token: noToken},
}

// pass: the request got past access control (any code but the refusals).
const pass codes.Code = 1000

type rpc struct {
	name   string
	target string // "gateway" or "sat-0"
	call   func(ctx context.Context, conn *grpc.ClientConn, id string) error
	// want by caller name; missing = the default of the RPC's rule.
	want map[string]codes.Code
}

func pageRPCs(target string) []rpc {
	page := func(conn *grpc.ClientConn) satpagev1.PageServiceClient { return satpagev1.NewPageServiceClient(conn) }
	return []rpc{
		{"ReadPage", target, func(ctx context.Context, c *grpc.ClientConn, id string) error {
			_, err := page(c).ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: id, Page: 0})
			return err
		}, nil},
		{"ReadPages", target, func(ctx context.Context, c *grpc.ClientConn, id string) error {
			_, err := page(c).ReadPages(ctx, &satpagev1.ReadPagesRequest{SessionId: id, Pages: []uint32{0, 1}, ScenarioTimeNs: []int64{0, 0}})
			return err
		}, nil},
		{"WritePage", target, func(ctx context.Context, c *grpc.ClientConn, id string) error {
			_, err := page(c).WritePage(ctx, &satpagev1.WritePageRequest{SessionId: id, Page: 0, Data: []byte("overwritten")})
			return err
		}, nil},
		{"EndSession", target, func(ctx context.Context, c *grpc.ClientConn, id string) error {
			_, err := page(c).EndSession(ctx, &satpagev1.EndSessionRequest{SessionId: id})
			return err
		}, nil},
	}
}

// readStream is a ReadPage of page 0 as a message of a read stream (satnodes
// only): refused per message as the unary call is.
func readStream() rpc {
	return rpc{"ReadStream", "sat-0", func(ctx context.Context, c *grpc.ClientConn, id string) error {
		st, err := satpagev1.NewPageServiceClient(c).ReadStream(ctx)
		if err != nil {
			return err
		}
		defer func() { _ = st.CloseSend() }()
		if err := st.Send(&satpagev1.ReadStreamRequest{Id: 1, Request: &satpagev1.ReadPageRequest{SessionId: id, Page: 0}}); err != nil {
			return err
		}
		m, err := st.Recv()
		if err != nil {
			return err
		}
		if m.Id != 1 {
			return fmt.Errorf("answer to %d, want 1", m.Id)
		}
		_, err = errs.Answer(m.Response, m.Status)
		return err
	}, nil}
}

// session-rule expectations.
var sessionWant = map[string]codes.Code{
	"none": codes.Unauthenticated, "plain text": codes.Unavailable, "client with token": pass,
	"client with another session's token": codes.PermissionDenied, "expired token": codes.Unauthenticated,
	"client certificate": codes.Unauthenticated, "satellite": codes.Unauthenticated, "gateway": codes.Unauthenticated,
}

func peerWant(gatewayToo bool) map[string]codes.Code {
	w := map[string]codes.Code{
		"none": codes.Unauthenticated, "plain text": codes.Unavailable, "client with token": codes.Unauthenticated,
		"client with another session's token": codes.Unauthenticated, "expired token": codes.Unauthenticated,
		"client certificate": codes.PermissionDenied, "satellite": pass, "gateway": codes.PermissionDenied,
	}
	if gatewayToo {
		w["gateway"] = pass
	}
	return w
}

func satRPCs() []rpc {
	sat := func(conn *grpc.ClientConn) satpagev1.SatelliteServiceClient {
		return satpagev1.NewSatelliteServiceClient(conn)
	}
	route := func() *satpagev1.Route {
		return &satpagev1.Route{Origin: 1, Destination: 0, Hops: 1, Path: []uint32{1}}
	}
	return []rpc{
		{"OpenSession", "sat-0", func(ctx context.Context, c *grpc.ClientConn, id string) error {
			_, err := sat(c).OpenSession(ctx, &satpagev1.OpenSessionRequest{SessionId: id + "-new"})
			return err
		}, peerWant(true)},
		{"FetchPages", "sat-0", func(ctx context.Context, c *grpc.ClientConn, id string) error {
			_, err := sat(c).FetchPages(ctx, &satpagev1.FetchPagesRequest{Route: route(), SessionId: id, Pages: []uint32{0}})
			return err
		}, peerWant(false)},
		{"ReleasePages", "sat-0", func(ctx context.Context, c *grpc.ClientConn, id string) error {
			_, err := sat(c).ReleasePages(ctx, &satpagev1.ReleasePagesRequest{Route: route(), SessionId: id, Pages: []uint32{0}, NewOwner: 1})
			return err
		}, peerWant(false)},
		{"HandOver", "sat-0", func(ctx context.Context, c *grpc.ClientConn, id string) error {
			_, err := sat(c).HandOver(ctx, &satpagev1.HandOverRequest{SessionId: id + "-unknown", ToSatellite: 1})
			return err
		}, peerWant(true)},
		{"AcceptTable", "sat-0", func(ctx context.Context, c *grpc.ClientConn, id string) error {
			_, err := sat(c).AcceptTable(ctx, &satpagev1.AcceptTableRequest{Route: route(), SessionId: id + "-accepted"})
			return err
		}, peerWant(false)},
		{"MovePages", "sat-0", func(ctx context.Context, c *grpc.ClientConn, id string) error {
			_, err := sat(c).MovePages(ctx, &satpagev1.MovePagesRequest{SessionId: id})
			return err
		}, peerWant(true)},
		{"SessionFrames", "sat-0", func(ctx context.Context, c *grpc.ClientConn, id string) error {
			_, err := sat(c).SessionFrames(ctx, &satpagev1.SessionFramesRequest{SessionId: id})
			return err
		}, peerWant(true)},
		{"Replicate", "sat-0", func(ctx context.Context, c *grpc.ClientConn, id string) error {
			_, err := sat(c).Replicate(ctx, &satpagev1.ReplicateRequest{Route: route(), Namespace: 1})
			return err
		}, peerWant(false)},
		{"InstallSnapshot", "sat-0", func(ctx context.Context, c *grpc.ClientConn, id string) error {
			_, err := sat(c).InstallSnapshot(ctx, &satpagev1.InstallSnapshotRequest{Route: route(), Namespace: 1})
			return err
		}, peerWant(false)},
		{"ReplicaState", "sat-0", func(ctx context.Context, c *grpc.ClientConn, id string) error {
			_, err := sat(c).ReplicaState(ctx, &satpagev1.ReplicaStateRequest{Namespace: 1})
			return err
		}, peerWant(false)},
		{"RequestSync", "sat-0", func(ctx context.Context, c *grpc.ClientConn, id string) error {
			_, err := sat(c).RequestSync(ctx, &satpagev1.RequestSyncRequest{Replica: 1})
			return err
		}, peerWant(false)},
		{"SetFaults", "sat-0", func(ctx context.Context, c *grpc.ClientConn, id string) error {
			_, err := sat(c).SetFaults(ctx, &satpagev1.SetFaultsRequest{})
			return err
		}, peerWant(true)},
		{"DropSession", "sat-0", func(ctx context.Context, c *grpc.ClientConn, id string) error {
			_, err := sat(c).DropSession(ctx, &satpagev1.DropSessionRequest{Route: route(), SessionId: id})
			return err
		}, peerWant(true)},
	}
}

func gatewayRPCs() []rpc {
	gw := func(conn *grpc.ClientConn) satpagev1.GatewayServiceClient {
		return satpagev1.NewGatewayServiceClient(conn)
	}
	return []rpc{
		{"RegisterSession", "gateway", func(ctx context.Context, c *grpc.ClientConn, id string) error {
			_, err := gw(c).RegisterSession(ctx, &satpagev1.RegisterSessionRequest{SessionId: id + "-reg",
				Visits: []*satpagev1.Visit{{Satellite: 2}}})
			return err
		}, map[string]codes.Code{
			"none": codes.Unauthenticated, "plain text": codes.Unavailable, "client with token": codes.Unauthenticated,
			"client with another session's token": codes.Unauthenticated, "expired token": codes.Unauthenticated,
			"client certificate": pass, "satellite": codes.PermissionDenied, "gateway": pass,
		}},
		{"SessionStats", "gateway", func(ctx context.Context, c *grpc.ClientConn, id string) error {
			_, err := gw(c).SessionStats(ctx, &satpagev1.SessionStatsRequest{SessionId: id})
			return err
		}, nil},
		{"OpenLiveSession", "gateway", func(ctx context.Context, c *grpc.ClientConn, id string) error {
			_, err := gw(c).OpenLiveSession(ctx, &satpagev1.OpenLiveSessionRequest{LatDeg: 59.9, LonDeg: 10.7})
			return err
		}, map[string]codes.Code{
			"none": codes.Unauthenticated, "plain text": codes.Unavailable, "client with token": codes.Unauthenticated,
			"client with another session's token": codes.Unauthenticated, "expired token": codes.Unauthenticated,
			"client certificate": pass, "satellite": codes.PermissionDenied, "gateway": pass,
		}},
		{"Clock", "gateway", func(ctx context.Context, c *grpc.ClientConn, id string) error {
			_, err := gw(c).Clock(ctx, &satpagev1.ClockRequest{})
			return err
		}, map[string]codes.Code{
			"none": codes.Unauthenticated, "plain text": codes.Unavailable, "client with token": codes.Unauthenticated,
			"client with another session's token": codes.Unauthenticated, "expired token": codes.Unauthenticated,
			"client certificate": pass, "satellite": pass, "gateway": pass,
		}},
	}
}

func TestEveryRPCAgainstEveryKindOfCaller(t *testing.T) {
	e := secureCluster(t)
	var all []rpc
	all = append(all, pageRPCs("gateway")...)
	all = append(all, gatewayRPCs()...)
	all = append(all, pageRPCs("sat-0")...)
	all = append(all, readStream())
	all = append(all, satRPCs()...)
	n := 0
	for _, r := range all {
		for _, cl := range callers {
			n++
			name := fmt.Sprintf("%s at %s/%s", r.name, r.target, cl.name)
			t.Run(name, func(t *testing.T) {
				id := fmt.Sprintf("victim-%d", n)
				data := []byte(fmt.Sprintf("secret page of %s", id))
				own := e.register(t, id, data)
				other := e.register(t, id+"-other", []byte("other"))
				server := tlsconf.GatewayName()
				if r.target != "gateway" {
					server = tlsconf.SatelliteName(0)
				}
				conn := e.c.DialAs(t, r.target, cl.creds(e, server))
				defer conn.Close()
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				if tok := cl.token(e, own, other, id); tok != "" {
					ctx = metadata.AppendToOutgoingContext(ctx, token.MetadataKey, tok)
				}
				err := r.call(ctx, conn, id)
				got := status.Code(err)
				want, ok := r.want[cl.name]
				if !ok {
					want = sessionWant[cl.name]
				}
				refused := got == codes.Unauthenticated || got == codes.PermissionDenied || got == codes.Unavailable
				if want == pass {
					if refused || got == codes.Internal {
						t.Fatalf("got %v (%v), want past access control", got, err)
					}
					return
				}
				if got != want {
					t.Fatalf("got %v (%v), want %v", got, err, want)
				}
				e.intact(t, id, own, data)
				if err != nil && strings.Contains(err.Error(), string(data)) {
					t.Errorf("error %q quotes page data", err)
				}
			})
		}
	}
	// Every refusal past the transport was logged with the caller, naming the reason.
	logs := e.logs.String()
	for _, want := range []string{`"msg":"denied"`, `"reason":"unauthenticated"`, `"reason":"permission_denied"`, `"caller":"client"`, `"caller":"satellite 1"`} {
		if !strings.Contains(logs, want) {
			t.Errorf("logs lack %s", want)
		}
	}
	if strings.Contains(logs, "secret page of") {
		t.Error("a page's content appears in the logs")
	}
}

func TestPagesOutsideTheSessionsTableAreRefusedAndNothingIsCreated(t *testing.T) {
	e := secureCluster(t)
	tok := e.register(t, "small", []byte("x"))
	ctx := metadata.AppendToOutgoingContext(context.Background(), token.MetadataKey, tok)
	for _, target := range []string{"gateway", "sat-0"} {
		server := tlsconf.GatewayName()
		if target != "gateway" {
			server = tlsconf.SatelliteName(0)
		}
		conn := e.c.DialAs(t, target, anonymous(e, server))
		pc := satpagev1.NewPageServiceClient(conn)
		for _, page := range []uint32{16, 999_999, 4_294_967_295} {
			_, err := pc.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: "small", Page: page})
			if status.Code(err) != codes.OutOfRange || !strings.Contains(err.Error(), fmt.Sprintf("page %d outside the session's table of 16 pages", page)) {
				t.Errorf("%s: ReadPage %d: got %v, want OutOfRange naming the page and the table", target, page, err)
			}
		}
		_, err := pc.ReadPages(ctx, &satpagev1.ReadPagesRequest{SessionId: "small", Pages: []uint32{1, 20}, ScenarioTimeNs: []int64{0, 0}})
		if status.Code(err) != codes.OutOfRange || !strings.Contains(err.Error(), "pages[1]: page 20") {
			t.Errorf("%s: ReadPages: got %v, want OutOfRange naming pages[1]", target, err)
		}
		conn.Close()
	}
	n, err := e.c.Stores[0].CountFrames(context.Background(), "small")
	if err != nil || n != 1 {
		t.Errorf("frames of the session at satellite 0: got %d, %v; want the 1 page written", n, err)
	}
}

// rawCodec sends bytes as they are (a hostile client's wire data).
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error)      { return v.([]byte), nil }
func (rawCodec) Unmarshal(data []byte, v any) error { *(v.(*[]byte)) = data; return nil }
func (rawCodec) Name() string                       { return "proto" }

func TestMalformedMessagesGetInvalidArgumentNamingTheField(t *testing.T) {
	e := secureCluster(t)
	tok := e.register(t, "s", []byte("x"))
	ctx := metadata.AppendToOutgoingContext(context.Background(), token.MetadataKey, tok)
	minusOne := protowire.AppendVarint(nil, uint64(1<<64-1)) // int64(-1) as a varint
	tests := []struct {
		name, method string
		body         []byte
		want         string
	}{
		{"garbage", "/satpage.v1.PageService/ReadPage", []byte{0xff, 0xff, 0xff, 0xff}, "malformed"},
		{"page -1", "/satpage.v1.PageService/ReadPage",
			append([]byte{0x0a, 1, 's', 0x10}, minusOne...), "page: value -1 (as int64) does not fit in uint32"},
		{"bad UTF-8 session", "/satpage.v1.PageService/ReadPage", []byte{0x0a, 2, 0xc3, 0x28}, "session_id: not valid UTF-8"},
		{"truncated bytes", "/satpage.v1.PageService/WritePage", []byte{0x0a, 1, 's', 0x22, 50, 1, 2}, "data: malformed value"},
		{"truncated unknown field", "/satpage.v1.PageService/ReadPage", []byte{0x0a, 1, 's', 0x7a, 50, 1}, "field 15: malformed value"},
		{"packed page -1", "/satpage.v1.PageService/ReadPages",
			append([]byte{0x0a, 1, 's', 0x12, byte(len(minusOne))}, minusOne...), "pages: value -1"},
		{"nested route", "/satpage.v1.SatelliteService/FetchPages",
			append([]byte{0x0a, byte(1 + len(minusOne)), 0x08}, minusOne...), "route.origin: value -1"},
	}
	for _, target := range []string{"gateway", "sat-0"} {
		server := tlsconf.GatewayName()
		if target != "gateway" {
			server = tlsconf.SatelliteName(0)
		}
		conn := e.c.DialAs(t, target, anonymous(e, server))
		defer conn.Close()
		for _, tt := range tests {
			if target == "gateway" && strings.Contains(tt.method, "SatelliteService") {
				continue // not served there
			}
			t.Run(target+"/"+tt.name, func(t *testing.T) {
				var out []byte
				err := conn.Invoke(ctx, tt.method, tt.body, &out, grpc.ForceCodec(rawCodec{}))
				if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), tt.want) {
					t.Errorf("got %v, want InvalidArgument with %q", err, tt.want)
				}
			})
		}
	}
	e.intact(t, "s", tok, []byte("x"))
}

// FuzzWire sends arbitrary bytes, as they come off the wire, to every RPC of
// a secure satellite and gateway, once with a valid token and once with none:
// no panic, never Unknown or Internal (a malformed message is INVALID_ARGUMENT
// naming the field), and a session the fuzzed requests may legitimately change
// (they carry its token) still answers.
func FuzzWire(f *testing.F) {
	for _, b := range [][]byte{{}, {0xff, 0xff}, {0x0a, 1, 's', 0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
		{0x0a, 2, 0xc3, 0x28}, {0x0a, 1, 's', 0x12, 2, 1, 2}, {0x0a, 4, 0x08, 1, 0x10, 0}} {
		for m := range uint8(18) {
			f.Add(m, b)
		}
	}
	e := secureCluster(f)
	tok := e.register(f, "s", []byte("keep"))
	gw := e.c.DialAs(f, "gateway", anonymous(e, tlsconf.GatewayName()))
	sat, err := tlsconf.LoadSatellite(e.dir, 1)
	if err != nil {
		f.Fatal(err)
	}
	sat0 := e.c.DialAs(f, "sat-0", credentials.NewTLS(sat.Client(tlsconf.SatelliteName(0))))
	methods := []string{"/satpage.v1.PageService/ReadPage", "/satpage.v1.PageService/ReadPages",
		"/satpage.v1.PageService/WritePage", "/satpage.v1.PageService/EndSession",
		"/satpage.v1.GatewayService/RegisterSession", "/satpage.v1.GatewayService/SessionStats"}
	satMethods := []string{"OpenSession", "FetchPages", "ReleasePages", "HandOver", "AcceptTable", "MovePages",
		"SessionFrames", "DropSession", "ReadPage", "ReadPages", "WritePage", "EndSession"}
	f.Fuzz(func(t *testing.T, m uint8, body []byte) {
		conn, method := gw, methods[int(m)%len(methods)]
		if int(m)%18 >= len(methods) {
			name := satMethods[int(m)%len(satMethods)]
			svc := "SatelliteService"
			if strings.HasPrefix(name, "Read") || strings.HasPrefix(name, "Write") || name == "EndSession" {
				svc = "PageService"
			}
			conn, method = sat0, "/satpage.v1."+svc+"/"+name
		}
		for _, tk := range []string{tok, ""} {
			ctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(context.Background(), token.MetadataKey, tk), 2*time.Second)
			var out []byte
			err := conn.Invoke(ctx, method, body, &out, grpc.ForceCodec(rawCodec{}))
			cancel()
			if c := status.Code(err); c == codes.Unknown || c == codes.Internal {
				t.Fatalf("%s with %d bytes: got %v, want a specific code", method, len(body), err)
			}
		}
		ctx := metadata.AppendToOutgoingContext(context.Background(), token.MetadataKey, tok)
		_, err := e.gw.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: "s", Page: 0})
		if c := status.Code(err); c == codes.Unknown || c == codes.Internal {
			t.Fatalf("the fixed session: %v", err)
		}
	})
}

func TestASatelliteCannotPassItsRequestOffAsAnothers(t *testing.T) {
	e := secureCluster(t)
	tok := e.register(t, "s", []byte("keep"))
	m, err := tlsconf.LoadSatellite(e.dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	conn := e.c.DialAs(t, "sat-0", credentials.NewTLS(m.Client(tlsconf.SatelliteName(0))))
	sc := satpagev1.NewSatelliteServiceClient(conn)
	// Satellite 1 claims the request was relayed by satellite 2 (also a neighbour of 0).
	for _, path := range [][]uint32{{2}, {}, {1, 2}} {
		_, err := sc.ReleasePages(context.Background(), &satpagev1.ReleasePagesRequest{SessionId: "s", Pages: []uint32{0}, NewOwner: 2,
			Route: &satpagev1.Route{Origin: 2, Destination: 0, Hops: uint32(len(path)), Path: path}})
		if status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), "does not end with the sender") {
			t.Errorf("path %v: got %v, want PermissionDenied", path, err)
		}
	}
	e.intact(t, "s", tok, []byte("keep"))
}
