package gateway_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/clustertest"
	"github.com/satpage/satpage/services/internal/errs"
	"github.com/satpage/satpage/services/internal/tlsconf"
	"github.com/satpage/satpage/services/internal/tlsconf/tlstest"
	"github.com/satpage/satpage/services/internal/token"
)

// A session registered at one gateway is served by another that never saw
// it (a second replica, or the first one restarted): the request carries
// the session's ticket, and the gateway finds the session at the satellite
// serving it, also when that satellite is dead (a takeover), and goes on
// through its handovers; a gateway that had the session where it no longer
// is finds it again. Every page reads back. Without the ticket, or with
// another session's, the gateway does not know the session.
func TestASessionRegisteredAtOneGatewayIsServedByAnotherFromItsTicket(t *testing.T) {
	dir := t.TempDir()
	tlstest.Write(t, dir, 30)
	c := clustertest.New(t, failSpec, clustertest.Options{TLSDir: dir, Replicas: 2})
	bg := context.Background()
	reg, err := c.Control.RegisterSession(bg, &satpagev1.RegisterSessionRequest{SessionId: "s", Visits: []*satpagev1.Visit{
		{Satellite: 7, StartNs: 0}, {Satellite: 6, StartNs: 100}, {Satellite: 20, StartNs: 200}}})
	if err != nil {
		t.Fatal(err)
	}
	if reg.Ticket == "" {
		t.Fatal("RegisterSession returned no ticket")
	}
	other, err := c.Control.RegisterSession(bg, &satpagev1.RegisterSessionRequest{SessionId: "other",
		Visits: []*satpagev1.Visit{{Satellite: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	withToken := metadata.AppendToOutgoingContext(bg, token.MetadataKey, reg.Token)
	ctx := metadata.AppendToOutgoingContext(withToken, token.TicketMetadataKey, reg.Ticket)
	want := map[uint32]string{}
	writeAt := func(pc satpagev1.PageServiceClient, page uint32, tNs int64, v string) {
		t.Helper()
		if _, err := pc.WritePage(ctx, &satpagev1.WritePageRequest{SessionId: "s", Page: page, Data: []byte(v),
			ScenarioTimeNs: tNs, RequestId: fmt.Sprintf("w-%d-%d", page, tNs)}); err != nil {
			t.Fatalf("write page %d at %d ns: %v", page, tNs, err)
		}
		want[page] = v
	}
	readAll := func(pc satpagev1.PageServiceClient, tNs int64) {
		t.Helper()
		for p, v := range want {
			r, err := pc.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: "s", Page: p, ScenarioTimeNs: tNs})
			if err != nil || string(r.Data) != v {
				t.Fatalf("page %d at %d ns: got %q, %v, want %q", p, tNs, r.GetData(), err, v)
			}
		}
	}
	for p := range uint32(6) {
		writeAt(c.Gateway, p, 10, fmt.Sprintf("a-%d", p))
	}
	writeAt(c.Gateway, 2, 150, "a-2-after-handover") // the first gateway hands the session to 6

	gb, conn := c.AddGateway(t, "b", nil)
	b := satpagev1.NewPageServiceClient(conn)
	_, err = b.ReadPage(withToken, &satpagev1.ReadPageRequest{SessionId: "s", Page: 1, ScenarioTimeNs: 160})
	if !errs.Has(err, errs.ErrUnknownSession) {
		t.Fatalf("no ticket: got %v, want UNKNOWN_SESSION", err)
	}
	forged := metadata.AppendToOutgoingContext(withToken, token.TicketMetadataKey, other.Ticket)
	_, err = b.ReadPage(forged, &satpagev1.ReadPageRequest{SessionId: "s", Page: 1, ScenarioTimeNs: 160})
	if status.Code(err) != codes.PermissionDenied {
		t.Fatalf("another session's ticket: got %v, want PERMISSION_DENIED", err)
	}
	readAll(b, 160)
	writeAt(b, 4, 160, "b-4")
	if n := gb.RebuiltTotal(); n != 1 {
		t.Fatalf("gateway b rebuilt %v sessions, want 1", n)
	}

	// The serving satellite dies; a third gateway finds no satellite serving
	// the session and has the one holding satellite 6's copy take it over.
	c.Kill(6)
	gc, conn := c.AddGateway(t, "c", nil)
	cc := satpagev1.NewPageServiceClient(conn)
	readAll(cc, 170)
	writeAt(cc, 5, 170, "c-5")
	// Satellite 6 comes back empty; gateway b, which had the session there,
	// hears it does not know the session and looks it up again.
	c.Restart(t, 6)
	readAll(b, 175)
	if n := gb.RebuiltTotal(); n != 2 {
		t.Fatalf("gateway b rebuilt or relocated %v sessions, want 2", n)
	}
	writeAt(cc, 0, 250, "c-0-in-the-other-plane") // handover to 20 from the stand-in
	readAll(cc, 260)
	if n := gc.RebuiltTotal(); n != 1 {
		t.Fatalf("gateway c rebuilt %v sessions, want 1", n)
	}
}

// A serving satellite cut off from the ground (SetFaults ground_cut) and from
// its ISL neighbours both ways, as the chaos partition does, refuses the
// gateway, and acknowledges nothing while cut: it still answers its
// replicas' health checks (the fault layer cuts routes, not the probes), so
// no satellite takes the session over, and the session waits for the cut to
// heal, then goes on there with every page as acknowledged.
func TestASatelliteCutOffFromTheGroundAcknowledgesNothingUntilTheCutHeals(t *testing.T) {
	dir := t.TempDir()
	tlstest.Write(t, dir, 30)
	c := clustertest.New(t, failSpec, clustertest.Options{TLSDir: dir, Replicas: 2})
	bg := context.Background()
	reg, err := c.Control.RegisterSession(bg, &satpagev1.RegisterSessionRequest{SessionId: "s",
		Visits: []*satpagev1.Visit{{Satellite: 7, StartNs: 0}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := metadata.AppendToOutgoingContext(bg, token.MetadataKey, reg.Token)
	gm, err := tlsconf.LoadGateway(dir)
	if err != nil {
		t.Fatal(err)
	}
	ground := make([]satpagev1.SatelliteServiceClient, 30) // the ground segment's control, as `cluster chaos`'s
	for i := range ground {
		conn := c.DialAs(t, fmt.Sprintf("sat-%d", i), credentials.NewTLS(gm.Client(tlsconf.SatelliteName(uint32(i)))))
		defer conn.Close()
		ground[i] = satpagev1.NewSatelliteServiceClient(conn)
	}
	var cut []*satpagev1.Link
	for _, nb := range c.Grid.Neighbors(7, 0) {
		cut = append(cut, &satpagev1.Link{A: min(7, nb), B: max(7, nb)})
	}
	setFaults := func(cut []*satpagev1.Link, groundCut bool) {
		t.Helper()
		for i, g := range ground {
			if _, err := g.SetFaults(bg, &satpagev1.SetFaultsRequest{Cut: cut, GroundCut: groundCut && i == 7}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for p := range uint32(4) {
		if _, err := c.Gateway.WritePage(ctx, &satpagev1.WritePageRequest{SessionId: "s", Page: p, Data: []byte{'a', byte(p)}, ScenarioTimeNs: 1}); err != nil {
			t.Fatal(err)
		}
	}
	setFaults(nil, true)
	// Straight to the cut satellite with the gateway's certificate: refused.
	if _, err := ground[7].SessionFrames(bg, &satpagev1.SessionFramesRequest{SessionId: "s"}); status.Code(err) != codes.Unavailable {
		t.Fatalf("SessionFrames at a satellite cut off from the ground: %v, want UNAVAILABLE", err)
	}
	setFaults(cut, true)
	for _, rid := range []string{"w1", "w2"} { // the second after the gateway's failed takeover
		short, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err = c.Gateway.WritePage(short, &satpagev1.WritePageRequest{SessionId: "s", Page: 1, Data: []byte("cut-" + rid),
			ScenarioTimeNs: 2, RequestId: rid})
		cancel()
		if status.Code(err) != codes.Unavailable {
			t.Fatalf("write %s while the serving satellite is cut off: %v, want UNAVAILABLE", rid, err)
		}
	}
	setFaults(nil, false)
	r, err := c.Gateway.WritePage(ctx, &satpagev1.WritePageRequest{SessionId: "s", Page: 1, Data: []byte("healed"),
		ScenarioTimeNs: 3, RequestId: "w3"})
	if err != nil || r.Satellite != 7 {
		t.Fatalf("write after the cut healed: at %d, %v; want at 7", r.GetSatellite(), err)
	}
	for p, want := range map[uint32]string{0: "a\x00", 1: "healed", 2: "a\x02", 3: "a\x03"} {
		got, err := c.Gateway.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: "s", Page: p, ScenarioTimeNs: 4})
		if err != nil || string(got.Data) != want || got.Satellite != 7 {
			t.Fatalf("page %d after the cut healed: %q at %d, %v; want %q at 7", p, got.GetData(), got.GetSatellite(), err, want)
		}
	}
}

// A gateway whose session went on through another one (it moved on from
// where this one has it) does not end it when it finds it idle: it forgets
// it, and the session goes on at the other gateway with every page.
func TestAGatewayDoesNotEndASessionThatWentOnThroughAnother(t *testing.T) {
	dir := t.TempDir()
	tlstest.Write(t, dir, 30)
	c := clustertest.New(t, failSpec, clustertest.Options{TLSDir: dir, Replicas: 2})
	bg := context.Background()
	reg, err := c.Control.RegisterSession(bg, &satpagev1.RegisterSessionRequest{SessionId: "s",
		Visits: []*satpagev1.Visit{{Satellite: 7, StartNs: 0}, {Satellite: 6, StartNs: 100}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := metadata.AppendToOutgoingContext(bg, token.MetadataKey, reg.Token, token.TicketMetadataKey, reg.Ticket)
	if _, err := c.Gateway.WritePage(ctx, &satpagev1.WritePageRequest{SessionId: "s", Page: 1, Data: []byte("a"), ScenarioTimeNs: 10}); err != nil {
		t.Fatal(err)
	}
	_, conn := c.AddGateway(t, "b", nil)
	b := satpagev1.NewPageServiceClient(conn)
	if _, err := b.WritePage(ctx, &satpagev1.WritePageRequest{SessionId: "s", Page: 2, Data: []byte("b"), ScenarioTimeNs: 150}); err != nil {
		t.Fatal(err) // b hands the session over to 6; the first gateway still has it at 7
	}
	if n := c.GatewayImpl.ExpireAt(bg, time.Now().Add(time.Hour)); n != 1 {
		t.Fatalf("expired %d sessions, want 1", n)
	}
	if n := c.GatewayImpl.Sessions(); n != 0 {
		t.Fatalf("the first gateway still holds %d sessions", n)
	}
	for p, want := range map[uint32]string{1: "a", 2: "b"} {
		r, err := b.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: "s", Page: p, ScenarioTimeNs: 160})
		if err != nil || string(r.Data) != want {
			t.Fatalf("page %d through the other gateway after the first one's expiry: %q, %v; want %q", p, r.GetData(), err, want)
		}
	}
}
