package node_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/clustertest"
	"github.com/satpage/satpage/services/internal/errs"
)

func TestProactiveMovesBringEveryPageToTheServingSatellite(t *testing.T) {
	c := clustertest.New(t, "walker-star:30/2/1:500:87", clustertest.Options{})
	ctx := context.Background()
	p0, s0 := c.Satellite(t, 0)
	if _, err := s0.OpenSession(ctx, &satpagev1.OpenSessionRequest{SessionId: "s"}); err != nil {
		t.Fatal(err)
	}
	for pg := range uint32(300) {
		if _, err := p0.WritePage(ctx, &satpagev1.WritePageRequest{SessionId: "s", Page: pg, Data: []byte(fmt.Sprint(pg))}); err != nil {
			t.Fatal(err)
		}
	}
	h, err := s0.HandOver(ctx, &satpagev1.HandOverRequest{SessionId: "s", ToSatellite: 17})
	if err != nil || h.TablePages != 300 || h.Hops != 3 {
		t.Fatalf("HandOver: got %v, %v, want 300 pages over 3 hops", h, err)
	}
	if _, err := c.Stores[0].GetTable(ctx, "s"); !errors.Is(err, errs.ErrUnknownSession) {
		t.Errorf("table at the old satellite: got %v, want none", err)
	}
	_, s17 := c.Satellite(t, 17)
	m, err := s17.MovePages(ctx, &satpagev1.MovePagesRequest{SessionId: "s"})
	if err != nil || m.Moved != 300 || m.PageHops != 900 {
		t.Fatalf("MovePages: got %v, %v, want 300 pages, 900 page-hops", m, err)
	}
	got, err := c.Stores[17].GetFrames(ctx, "s", []uint32{0, 299})
	if err != nil || string(got[1].Data) != "299" {
		t.Errorf("frames at the new satellite: got %v, %v", got, err)
	}
	if n, _ := c.Stores[0].CountFrames(ctx, "s"); n != 0 {
		t.Errorf("frames left behind: got %d, want 0", n)
	}
	p17, _ := c.Satellite(t, 17)
	e, err := p17.EndSession(ctx, &satpagev1.EndSessionRequest{SessionId: "s"})
	if err != nil || e.PagesDeleted != 300 {
		t.Errorf("EndSession: got %v, %v, want 300 deleted", e, err)
	}
}
