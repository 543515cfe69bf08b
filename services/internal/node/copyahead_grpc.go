package node

// The handlers of the staged push-ahead (copyahead.go): they decode and
// validate, call Node and map errors to codes through observe.

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/errs"
)

func (s *satServer) CopyAhead(ctx context.Context, req *satpagev1.CopyAheadRequest) (*satpagev1.CopyAheadResponse, error) {
	start := time.Now()
	if err := checkPages(req.Pages); err != nil {
		return nil, s.n.observe(ctx, "CopyAhead", start, err)
	}
	copied, hops, err := s.n.CopyAhead(ctx, req.SessionId, req.ToSatellite, req.ScenarioTimeNs, req.Pages)
	if err != nil {
		return nil, s.n.observe(ctx, "CopyAhead", start, err)
	}
	return &satpagev1.CopyAheadResponse{Copied: copied, PageHops: hops}, s.n.observe(ctx, "CopyAhead", start, nil)
}

func (s *satServer) StagePages(ctx context.Context, req *satpagev1.StagePagesRequest) (*satpagev1.StagePagesResponse, error) {
	start := time.Now()
	err := s.routed(req.Route, req.SessionId, func() error {
		if len(req.Pages) > MaxReadPages {
			return fmt.Errorf("%d pages in one StagePages exceed %d: %w", len(req.Pages), MaxReadPages, errs.ErrInvalid)
		}
		return nil
	})
	if err != nil {
		return nil, s.n.observe(ctx, "StagePages", start, err)
	}
	if req.Route.Destination != s.n.self {
		resp, err := relay(ctx, s.n, req.Route, "StagePages", func(c satpagev1.SatelliteServiceClient) (*satpagev1.StagePagesResponse, error) {
			return c.StagePages(ctx, req)
		})
		return resp, s.n.observe(ctx, "StagePages", start, err)
	}
	k, err := s.n.StageHere(ctx, req.SessionId, req.Pages)
	if err != nil {
		return nil, s.n.observe(ctx, "StagePages", start, err)
	}
	return &satpagev1.StagePagesResponse{Staged: uint32(k), Hops: req.Route.Hops}, s.n.observe(ctx, "StagePages", start, nil)
}

func (s *satServer) ClaimPages(ctx context.Context, req *satpagev1.ClaimPagesRequest) (*satpagev1.ClaimPagesResponse, error) {
	start := time.Now()
	if err := checkPages(req.Pages); err != nil {
		return nil, s.n.observe(ctx, "ClaimPages", start, err)
	}
	claimed, moved, hops, err := s.n.ClaimPages(ctx, req.SessionId, req.FromSatellite, req.ScenarioTimeNs, req.Pages)
	if err != nil {
		return nil, s.n.observe(ctx, "ClaimPages", start, err)
	}
	return &satpagev1.ClaimPagesResponse{Claimed: uint32(claimed), Moved: uint32(moved), PageHops: hops},
		s.n.observe(ctx, "ClaimPages", start, nil)
}

func (l localClient) CopyAhead(ctx context.Context, in *satpagev1.CopyAheadRequest, _ ...grpc.CallOption) (*satpagev1.CopyAheadResponse, error) {
	return l.srv().CopyAhead(ctx, in)
}
func (l localClient) StagePages(ctx context.Context, in *satpagev1.StagePagesRequest, _ ...grpc.CallOption) (*satpagev1.StagePagesResponse, error) {
	return l.srv().StagePages(ctx, in)
}
func (l localClient) ClaimPages(ctx context.Context, in *satpagev1.ClaimPagesRequest, _ ...grpc.CallOption) (*satpagev1.ClaimPagesResponse, error) {
	return l.srv().ClaimPages(ctx, in)
}
