// Package floor is the floor under a one-page one-hop page fault: a
// satellite's services with none of the page logic in them (cmd/floornode;
// docs/services.md, "The floor, measured as the fault is").
//
// A read is fetched over the fetch stream from the satellite the session was
// handed over from (before any handover, the satellite's first ISL
// neighbour), hop by hop on the shortest path as a satnode routes it; the
// owner's FetchPages answers with a page of zeros (--page-bytes long) from
// memory. A handover sends the new satellite one routed AcceptTable naming
// the old one, the least a handover can move. Nothing is stored, moved,
// counted or admitted beyond the access policy's interceptors on each call
// and stream. The load generator (bin/satload) drives it exactly as it
// drives satnodes: the same sessions, handovers, read streams and outcome
// checks, over any number of hops. What a fault costs above this floor is
// what satpage's page tables, durability, access policy per message and
// metrics add to chained gRPC calls between the same kind of processes.
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
	first    uint32 // the first ISL neighbour: the owner of a session never handed over here
	grid     *constellation.Grid
	peers    peers.Dialer
	page     []byte
	draining chan struct{}
	drain    sync.Once

	mu     sync.Mutex
	owners map[string]uint32 // session -> the satellite it was handed over from
}

// New is satellite self's floor; its reads fetch pages of pageBytes bytes
// through p, routed on grid.
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
	return &Server{self: self, first: nb[0], grid: grid, peers: p, page: make([]byte, pageBytes),
		draining: make(chan struct{}), owners: make(map[string]uint32)}, nil
}

// Register registers both services on s.
func (f *Server) Register(s grpc.ServiceRegistrar) {
	satpagev1.RegisterPageServiceServer(s, pageServer{f: f})
	satpagev1.RegisterSatelliteServiceServer(s, satServer{f: f})
}

// Drain ends the streams the server serves (daemon.Options.Drain).
func (f *Server) Drain() { f.drain.Do(func() { close(f.draining) }) }

// owner is where session's pages are fetched from.
func (f *Server) owner(session string) uint32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if o, ok := f.owners[session]; ok {
		return o
	}
	return f.first
}

// originate is the first hop towards dest and a route from here to it.
func (f *Server) originate(dest uint32) (satpagev1.SatelliteServiceClient, *satpagev1.Route, error) {
	r := &satpagev1.Route{Origin: f.self, Destination: dest}
	c, err := f.forward(r)
	return c, r, err
}

// forward is the next hop of r on the shortest path, r advanced past this
// satellite (as a satnode's relay advances it).
func (f *Server) forward(r *satpagev1.Route) (satpagev1.SatelliteServiceClient, error) {
	next, err := f.grid.NextHop(f.self, r.Destination, r.ScenarioTimeNs)
	if err != nil {
		return nil, err
	}
	c, err := f.peers.Satellite(next)
	if err != nil {
		return nil, err
	}
	r.Hops++
	r.Path = append(r.Path, f.self)
	return c, nil
}

// read fetches req's page from its owner: one FetchPages of one page.
func (f *Server) read(ctx context.Context, req *satpagev1.ReadPageRequest) (*satpagev1.ReadPageResponse, error) {
	owner := f.owner(req.SessionId)
	if owner == f.self {
		return &satpagev1.ReadPageResponse{Data: f.page, Outcome: satpagev1.Outcome_OUTCOME_LOCAL, Satellite: f.self}, nil
	}
	c, r, err := f.originate(owner)
	if err != nil {
		return nil, err
	}
	resp, err := c.FetchPages(ctx, &satpagev1.FetchPagesRequest{SessionId: req.SessionId, Pages: []uint32{req.Page}, Route: r})
	if err != nil {
		return nil, err
	}
	if len(resp.Pages) != 1 {
		return nil, fmt.Errorf("satellite %d returned %d pages for 1: %w", owner, len(resp.Pages), errs.ErrUnavailable)
	}
	return &satpagev1.ReadPageResponse{Data: resp.Pages[0].Data, Outcome: satpagev1.Outcome_OUTCOME_MOVED,
		Hops: resp.Hops, Satellite: f.self, PreviousOwner: owner}, nil
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

func (s pageServer) EndSession(_ context.Context, req *satpagev1.EndSessionRequest) (*satpagev1.EndSessionResponse, error) {
	s.f.mu.Lock()
	delete(s.f.owners, req.SessionId)
	s.f.mu.Unlock()
	return &satpagev1.EndSessionResponse{}, nil
}

type satServer struct {
	satpagev1.UnimplementedSatelliteServiceServer
	f *Server
}

func (satServer) OpenSession(context.Context, *satpagev1.OpenSessionRequest) (*satpagev1.OpenSessionResponse, error) {
	return &satpagev1.OpenSessionResponse{}, nil
}

// HandOver tells the new satellite where the session's pages are: one
// routed AcceptTable naming this one.
func (s satServer) HandOver(ctx context.Context, req *satpagev1.HandOverRequest) (*satpagev1.HandOverResponse, error) {
	if err := s.f.grid.Check(req.ToSatellite); err != nil {
		return nil, errs.Status(err)
	}
	if req.ToSatellite == s.f.self {
		return &satpagev1.HandOverResponse{}, nil
	}
	c, r, err := s.f.originate(req.ToSatellite)
	if err != nil {
		return nil, errs.Status(err)
	}
	resp, err := c.AcceptTable(ctx, &satpagev1.AcceptTableRequest{Route: r, SessionId: req.SessionId,
		Entries: []*satpagev1.TableEntry{{Page: 0, Owner: s.f.self}}})
	if err != nil {
		return nil, err
	}
	return &satpagev1.HandOverResponse{Hops: resp.Hops}, nil
}

// AcceptTable keeps the route's origin as the session's owner, or passes
// the table on.
func (s satServer) AcceptTable(ctx context.Context, req *satpagev1.AcceptTableRequest) (*satpagev1.AcceptTableResponse, error) {
	if req.Route == nil {
		return nil, errs.Status(fmt.Errorf("a table names its route: %w", errs.ErrInvalid))
	}
	if req.Route.Destination != s.f.self {
		c, err := s.f.forward(req.Route)
		if err != nil {
			return nil, errs.Status(err)
		}
		return c.AcceptTable(ctx, req)
	}
	if err := s.f.grid.Check(req.Route.Origin); err != nil {
		return nil, errs.Status(err)
	}
	s.f.mu.Lock()
	s.f.owners[req.SessionId] = req.Route.Origin
	s.f.mu.Unlock()
	return &satpagev1.AcceptTableResponse{Hops: req.Route.Hops}, nil
}

// FetchPages answers from memory at the route's destination, or passes the
// fetch on.
func (s satServer) FetchPages(ctx context.Context, req *satpagev1.FetchPagesRequest) (*satpagev1.FetchPagesResponse, error) {
	if req.Route == nil || len(req.Pages) == 0 {
		return nil, errs.Status(fmt.Errorf("a fetch names its route and pages: %w", errs.ErrInvalid))
	}
	if req.Route.Destination != s.f.self {
		c, err := s.f.forward(req.Route)
		if err != nil {
			return nil, errs.Status(err)
		}
		return c.FetchPages(ctx, req)
	}
	pages := make([]*satpagev1.Page, len(req.Pages))
	for i, p := range req.Pages {
		pages[i] = &satpagev1.Page{Page: p, Data: s.f.page}
	}
	return &satpagev1.FetchPagesResponse{Pages: pages, Hops: req.Route.Hops}, nil
}

// FetchStream answers each message as FetchPages, each in a goroutine of
// its own (as a satnode does): a fetch passed on waits for the next hop and
// must not hold up the others.
func (s satServer) FetchStream(st grpc.BidiStreamingServer[satpagev1.FetchStreamRequest, satpagev1.FetchStreamResponse]) error {
	return streams.Serve(st, s.f.draining, true, func(ctx context.Context, m *satpagev1.FetchStreamRequest) *satpagev1.FetchStreamResponse {
		var resp *satpagev1.FetchPagesResponse
		err := streams.NoRequest(m.Id, m.Request)
		if err == nil {
			resp, err = s.FetchPages(ctx, m.Request)
		}
		return &satpagev1.FetchStreamResponse{Id: m.Id, Response: resp, Status: errs.StatusBytes(errs.Status(err))}
	})
}
