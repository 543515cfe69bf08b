package auth_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/auth"
	"github.com/satpage/satpage/services/internal/config"
	"github.com/satpage/satpage/services/internal/limits"
	"github.com/satpage/satpage/services/internal/tlsconf"
	"github.com/satpage/satpage/services/internal/tlsconf/tlstest"
	"github.com/satpage/satpage/services/internal/token"
)

func TestAClientOverItsRateGetsResourceExhaustedAndNothingRuns(t *testing.T) {
	_, k, _ := ed25519.GenerateKey(rand.Reader)
	tok, _ := token.NewIssuer(k, time.Hour).Issue("s", 10)
	p := &auth.Policy{Verifier: token.NewVerifier(k.Public().(ed25519.PublicKey)), Rate: limits.NewRate(1, 3), Denied: auth.Counter()}
	ran := 0
	h := func(ctx context.Context, req any) (any, error) { ran++; return nil, nil }
	info := &grpc.UnaryServerInfo{FullMethod: "/satpage.v1.PageService/ReadPage"}
	call := func(ip string) error {
		ctx := peer.NewContext(context.Background(), &peer.Peer{Addr: &net.TCPAddr{IP: net.ParseIP(ip), Port: 5000}})
		ctx = metadata.NewIncomingContext(ctx, metadata.Pairs(token.MetadataKey, tok))
		_, err := p.Unary()(ctx, &satpagev1.ReadPageRequest{SessionId: "s", Page: 1}, info, h)
		return err
	}
	var exhausted int
	for range 10 {
		if err := call("10.0.0.1"); status.Code(err) == codes.ResourceExhausted {
			exhausted++
		} else if err != nil {
			t.Fatalf("got %v, want OK or ResourceExhausted", err)
		}
	}
	if exhausted != 7 || ran != 3 {
		t.Errorf("10 calls at a burst of 3: got %d refused and %d run, want 7 and 3", exhausted, ran)
	}
	if err := call("10.0.0.2"); err != nil {
		t.Errorf("another caller: got %v, want its own bucket", err)
	}
}

func TestInsecureWarnsAtEveryStart(t *testing.T) {
	for range 2 {
		var buf bytes.Buffer
		cfg := config.DefaultConfig()
		cfg.Insecure, cfg.Index = true, 0
		sec, err := auth.Load(cfg, config.Satnode, slog.New(slog.NewTextHandler(&buf, nil)), nil)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(buf.String(), "level=WARN") || !strings.Contains(buf.String(), "INSECURE") || sec.Material != nil {
			t.Errorf("got log %q, want an INSECURE warning and no TLS", buf.String())
		}
	}
}

func TestASatelliteRefusesAPrivateTokenKeyAndOnlyTheGatewayIssues(t *testing.T) {
	dir := t.TempDir()
	tlstest.Write(t, dir, 4)
	cfg := config.DefaultConfig()
	cfg.Index, cfg.TLSDir = 3, dir
	sat, err := auth.Load(cfg, config.Satnode, slog.New(slog.DiscardHandler), nil)
	if err != nil || sat.Issuer != nil || sat.Policy.Verifier == nil {
		t.Fatalf("satellite with a public verify key: got issuer %v, %v; want a verifier and no issuer", sat, err)
	}
	gw, err := auth.Load(cfg, config.Gateway, slog.New(slog.DiscardHandler), nil)
	if err != nil || gw.Issuer == nil {
		t.Fatalf("gateway: got %v, want an issuer", err)
	}
	// The verify file holding the signing key (what the chart generated before
	// per-pod keys): a satellite refuses to start, the gateway accepts it.
	sign, _ := os.ReadFile(filepath.Join(dir, tlsconf.TokenSigningKey))
	if err := os.WriteFile(filepath.Join(dir, tlsconf.TokenVerifyKeys), sign, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := auth.Load(cfg, config.Satnode, slog.New(slog.DiscardHandler), nil); err == nil ||
		!strings.Contains(err.Error(), "a satellite holds verify keys only") || !strings.Contains(err.Error(), tlsconf.TokenVerifyKeys) {
		t.Errorf("satellite with a private key to verify with: got %v, want a refusal naming the file", err)
	}
	if _, err := auth.Load(cfg, config.Gateway, slog.New(slog.DiscardHandler), nil); err != nil {
		t.Errorf("gateway with its private key to verify with: got %v, want it accepted", err)
	}
}

func TestSecureByDefaultWithoutMaterialFailsNamingTheFile(t *testing.T) {
	cfg := config.DefaultConfig()
	cfg.Index, cfg.TLSDir = 3, t.TempDir()
	_, err := auth.Load(cfg, config.Satnode, slog.New(slog.DiscardHandler), nil)
	if err == nil || !strings.Contains(err.Error(), "ca.pem") {
		t.Errorf("got %v, want an error naming ca.pem", err)
	}
}

// fakeStream is a server stream with only a context (the interceptor's view).
type fakeStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s fakeStream) Context() context.Context { return s.ctx }

func TestAStreamsMessagesShareTheRateOfTheCallerThatOpenedIt(t *testing.T) {
	_, k, _ := ed25519.GenerateKey(rand.Reader)
	tok, _ := token.NewIssuer(k, time.Hour).Issue("s", 10)
	p := &auth.Policy{Verifier: token.NewVerifier(k.Public().(ed25519.PublicKey)), Rate: limits.NewRate(1, 4), Denied: auth.Counter()}
	read := "/satpage.v1.PageService/ReadPage"
	info := &grpc.StreamServerInfo{FullMethod: "/satpage.v1.PageService/ReadStream", IsClientStream: true, IsServerStream: true}
	from := func(ip string) context.Context {
		ctx := peer.NewContext(context.Background(), &peer.Peer{Addr: &net.TCPAddr{IP: net.ParseIP(ip), Port: 5000}})
		return metadata.NewIncomingContext(ctx, metadata.Pairs(token.MetadataKey, tok))
	}
	var admitted, exhausted int
	h := func(srv any, ss grpc.ServerStream) error {
		for range 10 {
			req := &satpagev1.ReadPageRequest{SessionId: "s", Page: 1}
			_, err := p.AdmitMessage(ss.Context(), read, req, req)
			switch status.Code(err) {
			case codes.OK:
				admitted++
			case codes.ResourceExhausted:
				exhausted++
			default:
				t.Fatalf("message: got %v, want OK or ResourceExhausted", err)
			}
		}
		return nil
	}
	if err := p.Stream()(nil, fakeStream{ctx: from("10.0.0.1")}, info, h); err != nil {
		t.Fatal(err)
	}
	// A burst of 4: the stream's opening takes one, its messages the rest.
	if admitted != 3 || exhausted != 7 {
		t.Errorf("10 messages after the opening, burst 4: got %d admitted and %d refused, want 3 and 7", admitted, exhausted)
	}
	req := &satpagev1.ReadPageRequest{SessionId: "s", Page: 1}
	if _, err := p.AdmitMessage(from("10.0.0.1"), read, req, req); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("a call from the stream's caller: got %v, want ResourceExhausted (the same bucket)", err)
	}
	admitted, exhausted = 0, 0
	if err := p.Stream()(nil, fakeStream{ctx: from("10.0.0.2")}, info, h); err != nil {
		t.Fatal(err)
	}
	if admitted != 3 {
		t.Errorf("another caller's stream: got %d admitted, want 3 (its own bucket)", admitted)
	}
}
