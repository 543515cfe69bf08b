package gateway_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/clustertest"
	"github.com/satpage/satpage/services/internal/tlsconf/tlstest"
	"github.com/satpage/satpage/services/internal/token"
)

// FuzzGateway decodes arbitrary bytes as a schedule and as a batch of accesses
// and sends both through the gateway of a 15-satellite in-process cluster,
// secure as deployed (mutual TLS, the batch carrying the token its registration
// returned): no panic, no Unknown or Internal status, and a fixed session stays
// readable.
func FuzzGateway(f *testing.F) {
	reg := func(m *satpagev1.RegisterSessionRequest) []byte { b, _ := proto.Marshal(m); return b }
	acc := func(m *satpagev1.ReadPagesRequest) []byte { b, _ := proto.Marshal(m); return b }
	f.Add(reg(&satpagev1.RegisterSessionRequest{SessionId: "a", Visits: []*satpagev1.Visit{{Satellite: 0}, {Satellite: 1, StartNs: 10}}}),
		acc(&satpagev1.ReadPagesRequest{SessionId: "a", Pages: []uint32{1, 2, 1}, ScenarioTimeNs: []int64{0, 5, 11}}))
	f.Add(reg(&satpagev1.RegisterSessionRequest{SessionId: "b", Visits: []*satpagev1.Visit{{Satellite: 14}, {Satellite: 3, StartNs: 1}},
		Strategy: satpagev1.Strategy_STRATEGY_PROACTIVE}),
		acc(&satpagev1.ReadPagesRequest{SessionId: "b", Pages: []uint32{9}, ScenarioTimeNs: []int64{-1}}))
	f.Add(reg(&satpagev1.RegisterSessionRequest{SessionId: "c", Visits: []*satpagev1.Visit{{Satellite: 99}}}),
		acc(&satpagev1.ReadPagesRequest{SessionId: "fixed", Pages: []uint32{1}, ScenarioTimeNs: []int64{0}}))
	dir := f.TempDir()
	tlstest.Write(f, dir, 15)
	c := clustertest.New(f, "walker-star:15/1/0:500:87", clustertest.Options{TLSDir: dir})
	fixed, err := c.Control.RegisterSession(context.Background(), &satpagev1.RegisterSessionRequest{SessionId: "fixed",
		Visits: []*satpagev1.Visit{{Satellite: 2}}})
	if err != nil {
		f.Fatal(err)
	}
	ctx := metadata.AppendToOutgoingContext(context.Background(), token.MetadataKey, fixed.Token)
	if _, err := c.Gateway.WritePage(ctx, &satpagev1.WritePageRequest{SessionId: "fixed", Page: 1, Data: []byte("keep")}); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, regBytes, accBytes []byte) {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		check := func(what string, err error) {
			if code := status.Code(err); code == codes.Unknown || code == codes.Internal {
				t.Fatalf("%s: got %v, want a specific code", what, err)
			}
		}
		var r satpagev1.RegisterSessionRequest
		tok := ""
		if proto.Unmarshal(regBytes, &r) == nil && r.SessionId != "fixed" {
			reg, err := c.Control.RegisterSession(cctx, &r)
			check("RegisterSession", err)
			if err == nil {
				tok = reg.Token
			}
		}
		var a satpagev1.ReadPagesRequest
		if proto.Unmarshal(accBytes, &a) == nil && a.SessionId != "fixed" {
			actx := metadata.AppendToOutgoingContext(context.Background(), token.MetadataKey, tok)
			actx, cancel := context.WithTimeout(actx, 2*time.Second)
			defer cancel()
			_, err := c.Gateway.ReadPages(actx, &a)
			check("ReadPages", err)
		}
		got, err := c.Gateway.ReadPage(cctx, &satpagev1.ReadPageRequest{SessionId: "fixed", Page: 1})
		if err != nil || string(got.Data) != "keep" {
			t.Fatalf("the fixed session's page: got %v, %v, want \"keep\"", got, err)
		}
	})
}
