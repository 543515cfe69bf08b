package node_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/clustertest"
)

func TestBadRequestsGetTheRightCodeAndNameTheValue(t *testing.T) {
	c := clustertest.New(t, "walker-star:30/2/1:500:87", clustertest.Options{})
	ctx := context.Background()
	p, s := c.Satellite(t, 0)
	if _, err := s.OpenSession(ctx, &satpagev1.OpenSessionRequest{SessionId: "known"}); err != nil {
		t.Fatal(err)
	}
	expired, cancel := context.WithDeadline(ctx, time.Now().Add(-time.Second))
	defer cancel()
	tests := []struct {
		name     string
		call     func() error
		wantCode codes.Code
		wantText string
	}{
		{"oversize page", func() error {
			_, err := p.WritePage(ctx, &satpagev1.WritePageRequest{SessionId: "known", Page: 1, Data: make([]byte, 4097)})
			return err
		}, codes.InvalidArgument, "4097"},
		{"unknown session", func() error {
			_, err := p.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: "nobody", Page: 1})
			return err
		}, codes.NotFound, `"nobody"`},
		{"missing session id", func() error {
			_, err := p.ReadPage(ctx, &satpagev1.ReadPageRequest{Page: 1})
			return err
		}, codes.InvalidArgument, "session_id"},
		{"handover to a satellite out of range", func() error {
			_, err := s.HandOver(ctx, &satpagev1.HandOverRequest{SessionId: "known", ToSatellite: 30})
			return err
		}, codes.OutOfRange, "30"},
		{"missing route", func() error {
			_, err := s.FetchPages(ctx, &satpagev1.FetchPagesRequest{SessionId: "known", Pages: []uint32{1}})
			return err
		}, codes.InvalidArgument, "route"},
		{"route to a satellite out of range", func() error {
			_, err := s.FetchPages(ctx, &satpagev1.FetchPagesRequest{SessionId: "known", Pages: []uint32{1},
				Route: &satpagev1.Route{Destination: 1000}})
			return err
		}, codes.OutOfRange, "1000"},
		{"a relay loop", func() error {
			_, err := s.FetchPages(ctx, &satpagev1.FetchPagesRequest{SessionId: "known", Pages: []uint32{1},
				Route: &satpagev1.Route{Origin: 2, Destination: 5, Hops: 2, Path: []uint32{0, 1}}})
			return err
		}, codes.Aborted, "twice"},
		{"a hop that is not an ISL", func() error {
			_, err := s.FetchPages(ctx, &satpagev1.FetchPagesRequest{SessionId: "known", Pages: []uint32{1},
				Route: &satpagev1.Route{Origin: 7, Destination: 5, Hops: 1, Path: []uint32{7}}})
			return err
		}, codes.Aborted, "not its ISL neighbour"},
		{"hops that disagree with the path", func() error {
			_, err := s.FetchPages(ctx, &satpagev1.FetchPagesRequest{SessionId: "known", Pages: []uint32{1},
				Route: &satpagev1.Route{Origin: 1, Destination: 0, Hops: 5, Path: []uint32{1}}})
			return err
		}, codes.InvalidArgument, "hops 5"},
		{"a page its owner does not hold", func() error {
			_, err := s.FetchPages(ctx, &satpagev1.FetchPagesRequest{SessionId: "known", Pages: []uint32{99},
				Route: &satpagev1.Route{Origin: 0, Destination: 0}})
			return err
		}, codes.NotFound, "page 99"},
		{"an expired deadline", func() error {
			_, err := p.ReadPage(expired, &satpagev1.ReadPageRequest{SessionId: "known", Page: 1})
			return err
		}, codes.DeadlineExceeded, ""},
		{"a session opened twice", func() error {
			_, err := s.OpenSession(ctx, &satpagev1.OpenSessionRequest{SessionId: "known"})
			return err
		}, codes.AlreadyExists, `"known"`},
		{"a batch with mismatched times", func() error {
			_, err := p.ReadPages(ctx, &satpagev1.ReadPagesRequest{SessionId: "known", Pages: []uint32{1, 2}, ScenarioTimeNs: []int64{0}})
			return err
		}, codes.InvalidArgument, "2 pages but 1"},
		{"an oversize session id", func() error {
			_, err := p.ReadPage(ctx, &satpagev1.ReadPageRequest{SessionId: strings.Repeat("x", 300), Page: 1})
			return err
		}, codes.InvalidArgument, "300 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			st := status.Convert(err)
			if st.Code() != tt.wantCode || !strings.Contains(st.Message(), tt.wantText) {
				t.Errorf("got %v: %q, want %v naming %q", st.Code(), st.Message(), tt.wantCode, tt.wantText)
			}
		})
	}
}
