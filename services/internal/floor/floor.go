// Package floor is the floor under a one-page one-hop page fault: a
// satellite's services with none of the page logic in them (cmd/floornode;
// docs/services.md, "The floor, measured as the fault is").
//
// A read is relayed over the fetch stream to the satellite's first ISL
// neighbour, whose FetchPages answers with a page of zeros (--page-bytes
// long) from memory; nothing is stored, moved, counted or admitted beyond the
// access policy's interceptors on each call and stream. The load generator (bin/satload)
// drives it exactly as it drives satnodes: the same sessions, handovers, read
// streams and outcome checks. What a fault costs above this floor is what
// satpage's page tables, durability, access policy per message and metrics
// add to two chained gRPC calls between the same kind of processes.
package floor

import (
	"context"
	"fmt"
	"sync"

	"google.golang.org/grpc"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/constellation"
	"github.com/satpage/satpage/services/internal/errs"
	"github.com/satpage/satpage/services/internal/peers"
	"github.com/satpage/satpage/services/internal/streams"
)

// Server serves PageService and SatelliteService as the floor.
type Server struct {
	self     uint32
	owner    uint32 // the first ISL neighbour: every read's page is fetched from it
	peers    peers.Dialer
	page     []byte
	draining chan struct{}
	drain    sync.Once
}

// New is satellite self's floor; its reads fetch pages of pageBytes bytes
// from its first ISL neighbour in grid through p.
func New(self uint32, grid *constellation.Grid, p peers.Dialer, pageBytes int) (*Server, error) {
	if err := grid.Check(self); err != nil {
		return nil, err
	}
	nb := grid.Neighbors(self, 0)
	if len(nb) == 0 {
		return nil, fmt.Errorf("satellite %d has no ISL neighbour to fetch from", self)
	}
	if pageBytes < 1 {
		return nil, fmt.Errorf("page of %d bytes: want >= 1", pageBytes)
	}
	return &Server{self: self, owner: nb[0], peers: p, page: make([]byte, pageBytes), draining: make(chan struct{})}, nil
}

// Register registers both services on s.
func (f *Server) Register(s grpc.ServiceRegistrar) {
	satpagev1.RegisterPageServiceServer(s, pageServer{f: f})
	satpagev1.RegisterSatelliteServiceServer(s, satServer{f: f})
}

// Drain ends the streams the server serves (daemon.Options.Drain).
func (f *Server) Drain() { f.drain.Do(func() { close(f.draining) }) }

// read fetches req's page from the owner: one FetchPages of one page, one hop.
func (f *Server) read(ctx context.Context, req *satpagev1.ReadPageRequest) (*satpagev1.ReadPageResponse, error) {
	c, err := f.peers.Satellite(f.owner)
	if err != nil {
		return nil, err
	}
	resp, err := c.FetchPages(ctx, &satpagev1.FetchPagesRequest{SessionId: req.SessionId, Pages: []uint32{req.Page},
		Route: &satpagev1.Route{Origin: f.self, Destination: f.owner, Hops: 1, Path: []uint32{f.self}}})
	if err != nil {
		return nil, err
	}
	if len(resp.Pages) != 1 {
		return nil, fmt.Errorf("satellite %d returned %d pages for 1: %w", f.owner, len(resp.Pages), errs.ErrUnavailable)
	}
	return &satpagev1.ReadPageResponse{Data: resp.Pages[0].Data, Outcome: satpagev1.Outcome_OUTCOME_MOVED,
		Hops: resp.Hops, Satellite: f.self, PreviousOwner: f.owner}, nil
}

type pageServer struct {
	satpagev1.UnimplementedPageServiceServer
	f *Server
}

func (s pageServer) ReadPage(ctx context.Context, req *satpagev1.ReadPageRequest) (*satpagev1.ReadPageResponse, error) {
	resp, err := s.f.read(ctx, req)
	return resp, errs.Status(err)
}

// ReadStream answers each message as ReadPage, in order (as a satnode does).
func (s pageServer) ReadStream(st grpc.BidiStreamingServer[satpagev1.ReadStreamRequest, satpagev1.ReadStreamResponse]) error {
	return streams.Serve(st, s.f.draining, false, func(ctx context.Context, m *satpagev1.ReadStreamRequest) *satpagev1.ReadStreamResponse {
		ctx, cancel := streams.WithTimeout(ctx, m.TimeoutNs)
		defer cancel()
		var resp *satpagev1.ReadPageResponse
		err := streams.NoRequest(m.Id, m.Request)
		if err == nil {
			resp, err = s.f.read(ctx, m.Request)
		}
		return &satpagev1.ReadStreamResponse{Id: m.Id, Response: resp, Status: errs.StatusBytes(errs.Status(err))}
	})
}

// WritePage keeps nothing: every read answers the floor's own page.
func (pageServer) WritePage(context.Context, *satpagev1.WritePageRequest) (*satpagev1.WritePageResponse, error) {
	return &satpagev1.WritePageResponse{}, nil
}

func (pageServer) EndSession(context.Context, *satpagev1.EndSessionRequest) (*satpagev1.EndSessionResponse, error) {
	return &satpagev1.EndSessionResponse{}, nil
}

type satServer struct {
	satpagev1.UnimplementedSatelliteServiceServer
	f *Server
}

func (satServer) OpenSession(context.Context, *satpagev1.OpenSessionRequest) (*satpagev1.OpenSessionResponse, error) {
	return &satpagev1.OpenSessionResponse{}, nil
}

// HandOver moves nothing: the next satellite's reads fetch from its own neighbour.
func (satServer) HandOver(context.Context, *satpagev1.HandOverRequest) (*satpagev1.HandOverResponse, error) {
	return &satpagev1.HandOverResponse{}, nil
}

func (s satServer) FetchPages(_ context.Context, req *satpagev1.FetchPagesRequest) (*satpagev1.FetchPagesResponse, error) {
	if req.Route == nil || len(req.Pages) == 0 {
		return nil, errs.Status(fmt.Errorf("a fetch names its route and pages: %w", errs.ErrInvalid))
	}
	pages := make([]*satpagev1.Page, len(req.Pages))
	for i, p := range req.Pages {
		pages[i] = &satpagev1.Page{Page: p, Data: s.f.page}
	}
	return &satpagev1.FetchPagesResponse{Pages: pages, Hops: req.Route.Hops}, nil
}

// FetchStream answers each message as FetchPages, in order: the answer
// waits for nothing.
func (s satServer) FetchStream(st grpc.BidiStreamingServer[satpagev1.FetchStreamRequest, satpagev1.FetchStreamResponse]) error {
	return streams.Serve(st, s.f.draining, false, func(ctx context.Context, m *satpagev1.FetchStreamRequest) *satpagev1.FetchStreamResponse {
		var resp *satpagev1.FetchPagesResponse
		err := streams.NoRequest(m.Id, m.Request)
		if err == nil {
			resp, err = s.FetchPages(ctx, m.Request)
		}
		return &satpagev1.FetchStreamResponse{Id: m.Id, Response: resp, Status: errs.StatusBytes(errs.Status(err))}
	})
}
