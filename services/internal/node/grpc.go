package node

// The gRPC handlers: each decodes and validates its wire message, calls Node,
// and maps the sentinel errors (internal/errs) to status codes in observe.
// Routed requests not addressed here are passed on to the next hop.

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/errs"
	"github.com/satpage/satpage/services/internal/store"
)

// Register puts the node's PageService and SatelliteService on s.
func (n *Node) Register(s grpc.ServiceRegistrar) {
	satpagev1.RegisterPageServiceServer(s, &pageServer{n: n})
	satpagev1.RegisterSatelliteServiceServer(s, &satServer{n: n})
}

// observe times a handler and maps its error to a gRPC status (the only place errors become codes).
func (n *Node) observe(ctx context.Context, rpc string, start time.Time, err error) error {
	n.m.RPCSecondsOf.Of(rpc).Observe(time.Since(start).Seconds())
	if err == nil {
		return nil
	}
	st := errs.Status(err)
	n.log.DebugContext(ctx, "rpc failed", "rpc", rpc, "err", err)
	return st
}

type pageServer struct {
	satpagev1.UnimplementedPageServiceServer
	n *Node
}

func accessResponse(n *Node, a Access, omitData bool) *satpagev1.ReadPageResponse {
	r := &satpagev1.ReadPageResponse{Hops: a.Hops, Outcome: a.Outcome, Satellite: n.self, PreviousOwner: a.PreviousOwner,
		FaultNs: int64(a.Fault)}
	if !omitData {
		r.Data = a.Data
	}
	return r
}

func (s *pageServer) ReadPage(ctx context.Context, req *satpagev1.ReadPageRequest) (*satpagev1.ReadPageResponse, error) {
	start := time.Now()
	out := &satpagev1.ReadPageResponse{}
	if ok, err := s.n.recall(ctx, req.SessionId, req.RequestId, out); ok || err != nil {
		return nilIf(out, err), s.n.observe(ctx, "ReadPage", start, err)
	}
	var k *keep // only a request with an id keeps its answer (two allocations a read otherwise)
	if req.RequestId != "" {
		k = &keep{rid: req.RequestId, reply: func(as []Access) proto.Message { return accessResponse(s.n, as[0], false) }}
	}
	as, err := s.n.access(ctx, req.SessionId, req.Page, req.ScenarioTimeNs, nil, k)
	if err != nil {
		return nil, s.n.observe(ctx, "ReadPage", start, err)
	}
	return accessResponse(s.n, as[0], false), s.n.observe(ctx, "ReadPage", start, nil)
}

// nilIf is resp, or nil with an error.
func nilIf[T any](resp *T, err error) *T {
	if err != nil {
		return nil
	}
	return resp
}

func (s *pageServer) ReadPages(ctx context.Context, req *satpagev1.ReadPagesRequest) (*satpagev1.ReadPagesResponse, error) {
	start := time.Now()
	if err := CheckBatch(req); err != nil {
		return nil, s.n.observe(ctx, "ReadPages", start, err)
	}
	kept := &satpagev1.ReadPagesResponse{}
	if ok, err := s.n.recall(ctx, req.SessionId, req.RequestId, kept); ok || err != nil {
		return nilIf(kept, err), s.n.observe(ctx, "ReadPages", start, err)
	}
	reply := func(as []Access) proto.Message {
		out := &satpagev1.ReadPagesResponse{Results: make([]*satpagev1.ReadPageResponse, len(as))}
		for i, a := range as {
			out.Results[i] = accessResponse(s.n, a, req.OmitData)
		}
		return out
	}
	as, err := s.n.readPages(ctx, req.SessionId, req.Pages, req.ScenarioTimeNs, &keep{rid: req.RequestId, reply: reply})
	if err != nil {
		return nil, s.n.observe(ctx, "ReadPages", start, err)
	}
	return reply(as).(*satpagev1.ReadPagesResponse), s.n.observe(ctx, "ReadPages", start, nil)
}

// CheckBatch validates a ReadPages request (shared with the gateway).
func CheckBatch(req *satpagev1.ReadPagesRequest) error {
	if len(req.Pages) != len(req.ScenarioTimeNs) {
		return fmt.Errorf("%d pages but %d scenario times: %w", len(req.Pages), len(req.ScenarioTimeNs), errs.ErrInvalid)
	}
	if len(req.Pages) > MaxReadPages {
		return fmt.Errorf("%d accesses in one ReadPages exceed %d: %w", len(req.Pages), MaxReadPages, errs.ErrInvalid)
	}
	for i := 1; i < len(req.ScenarioTimeNs); i++ {
		if req.ScenarioTimeNs[i] < req.ScenarioTimeNs[i-1] {
			return fmt.Errorf("scenario time %d of access %d is before %d of access %d: %w",
				req.ScenarioTimeNs[i], i, req.ScenarioTimeNs[i-1], i-1, errs.ErrInvalid)
		}
	}
	return nil
}

func (s *pageServer) WritePage(ctx context.Context, req *satpagev1.WritePageRequest) (*satpagev1.WritePageResponse, error) {
	start := time.Now()
	data := req.Data
	if data == nil {
		data = []byte{}
	}
	out := &satpagev1.WritePageResponse{}
	if ok, err := s.n.recall(ctx, req.SessionId, req.RequestId, out); ok || err != nil {
		return nilIf(out, err), s.n.observe(ctx, "WritePage", start, err)
	}
	reply := func(as []Access) proto.Message {
		return &satpagev1.WritePageResponse{Hops: as[0].Hops, Outcome: as[0].Outcome, Satellite: s.n.self}
	}
	as, err := s.n.access(ctx, req.SessionId, req.Page, req.ScenarioTimeNs, data, &keep{rid: req.RequestId, reply: reply})
	if err != nil {
		return nil, s.n.observe(ctx, "WritePage", start, err)
	}
	return reply(as).(*satpagev1.WritePageResponse), s.n.observe(ctx, "WritePage", start, nil)
}

func (s *pageServer) EndSession(ctx context.Context, req *satpagev1.EndSessionRequest) (*satpagev1.EndSessionResponse, error) {
	start := time.Now()
	deleted, err := s.n.EndSession(ctx, req.SessionId, req.ScenarioTimeNs)
	if err != nil {
		return nil, s.n.observe(ctx, "EndSession", start, err)
	}
	return &satpagev1.EndSessionResponse{PagesDeleted: uint32(deleted)}, s.n.observe(ctx, "EndSession", start, nil)
}

type satServer struct {
	satpagev1.UnimplementedSatelliteServiceServer
	n *Node
}

func (s *satServer) OpenSession(ctx context.Context, req *satpagev1.OpenSessionRequest) (*satpagev1.OpenSessionResponse, error) {
	start := time.Now()
	if err := s.n.OpenSession(ctx, req.SessionId); err != nil {
		return nil, s.n.observe(ctx, "OpenSession", start, err)
	}
	return &satpagev1.OpenSessionResponse{}, s.n.observe(ctx, "OpenSession", start, nil)
}

func checkPages(pages []uint32) error {
	if len(pages) == 0 {
		return fmt.Errorf("pages is empty: %w", errs.ErrInvalid)
	}
	if len(pages) > MaxBatchPages {
		return fmt.Errorf("%d pages in one request exceed %d: %w", len(pages), MaxBatchPages, errs.ErrInvalid)
	}
	return nil
}

func (s *satServer) FetchPages(ctx context.Context, req *satpagev1.FetchPagesRequest) (*satpagev1.FetchPagesResponse, error) {
	start := time.Now()
	if err := s.routed(req.Route, req.SessionId, func() error { return checkPages(req.Pages) }); err != nil {
		return nil, s.n.observe(ctx, "FetchPages", start, err)
	}
	if req.Route.Destination != s.n.self {
		resp, err := relay(ctx, s.n, req.Route, "FetchPages", func(c satpagev1.SatelliteServiceClient) (*satpagev1.FetchPagesResponse, error) {
			return c.FetchPages(ctx, req)
		})
		return resp, s.n.observe(ctx, "FetchPages", start, err)
	}
	var pages []*satpagev1.Page
	var err error
	if req.ReplicaOf != nil {
		pages, err = s.n.FetchReplica(ctx, *req.ReplicaOf, req.SessionId, req.Pages)
	} else {
		pages, err = s.n.FetchHere(ctx, req.SessionId, req.Pages)
	}
	if err != nil {
		return nil, s.n.observe(ctx, "FetchPages", start, err)
	}
	return &satpagev1.FetchPagesResponse{Pages: pages, Hops: req.Route.Hops}, s.n.observe(ctx, "FetchPages", start, nil)
}

// routed validates the route and the session (and extra, if any).
func (s *satServer) routed(r *satpagev1.Route, session string, extra func() error) error {
	if err := s.n.checkRoute(r); err != nil {
		return err
	}
	if err := checkSession(session); err != nil {
		return err
	}
	if extra != nil {
		return extra()
	}
	return nil
}

func (s *satServer) ReleasePages(ctx context.Context, req *satpagev1.ReleasePagesRequest) (*satpagev1.ReleasePagesResponse, error) {
	start := time.Now()
	if err := s.routed(req.Route, req.SessionId, func() error { return checkPages(req.Pages) }); err != nil {
		return nil, s.n.observe(ctx, "ReleasePages", start, err)
	}
	if req.Route.Destination != s.n.self {
		resp, err := relay(ctx, s.n, req.Route, "ReleasePages", func(c satpagev1.SatelliteServiceClient) (*satpagev1.ReleasePagesResponse, error) {
			return c.ReleasePages(ctx, req)
		})
		return resp, s.n.observe(ctx, "ReleasePages", start, err)
	}
	k, err := s.n.ReleaseHere(ctx, req.SessionId, req.Pages, req.NewOwner)
	if err != nil {
		return nil, s.n.observe(ctx, "ReleasePages", start, err)
	}
	return &satpagev1.ReleasePagesResponse{Released: uint32(k), Hops: req.Route.Hops}, s.n.observe(ctx, "ReleasePages", start, nil)
}

func (s *satServer) HandOver(ctx context.Context, req *satpagev1.HandOverRequest) (*satpagev1.HandOverResponse, error) {
	start := time.Now()
	k, hops, err := s.n.HandOver(ctx, req.SessionId, req.ToSatellite, req.ScenarioTimeNs)
	if err != nil {
		return nil, s.n.observe(ctx, "HandOver", start, err)
	}
	return &satpagev1.HandOverResponse{TablePages: uint32(k), Hops: hops}, s.n.observe(ctx, "HandOver", start, nil)
}

func (s *satServer) AcceptTable(ctx context.Context, req *satpagev1.AcceptTableRequest) (*satpagev1.AcceptTableResponse, error) {
	start := time.Now()
	err := s.routed(req.Route, req.SessionId, func() error {
		if len(req.Entries) > MaxTableEntries {
			return fmt.Errorf("table of %d entries exceeds %d: %w", len(req.Entries), MaxTableEntries, errs.ErrInvalid)
		}
		for _, e := range req.Entries {
			if err := s.n.grid.Check(e.Owner); err != nil {
				return fmt.Errorf("owner of page %d: %w", e.Page, err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, s.n.observe(ctx, "AcceptTable", start, err)
	}
	if req.Route.Destination != s.n.self {
		resp, err := relay(ctx, s.n, req.Route, "AcceptTable", func(c satpagev1.SatelliteServiceClient) (*satpagev1.AcceptTableResponse, error) {
			return c.AcceptTable(ctx, req)
		})
		return resp, s.n.observe(ctx, "AcceptTable", start, err)
	}
	table := make(store.Table, len(req.Entries))
	for _, e := range req.Entries {
		table[e.Page] = e.Owner
	}
	if err := s.n.AcceptTable(ctx, req.SessionId, table, req.Version); err != nil {
		return nil, s.n.observe(ctx, "AcceptTable", start, err)
	}
	return &satpagev1.AcceptTableResponse{Hops: req.Route.Hops}, s.n.observe(ctx, "AcceptTable", start, nil)
}

func (s *satServer) MovePages(ctx context.Context, req *satpagev1.MovePagesRequest) (*satpagev1.MovePagesResponse, error) {
	start := time.Now()
	if len(req.Pages) > MaxReadPages {
		return nil, s.n.observe(ctx, "MovePages", start, fmt.Errorf("%d pages in one MovePages exceed %d: %w", len(req.Pages), MaxReadPages, errs.ErrInvalid))
	}
	var only []uint32
	if len(req.Pages) > 0 {
		only = req.Pages
	}
	if err := checkRequestID(req.RequestId); err != nil {
		return nil, s.n.observe(ctx, "MovePages", start, err)
	}
	out := &satpagev1.MovePagesResponse{}
	if ok, err := s.n.recall(ctx, req.SessionId, req.RequestId, out); ok || err != nil {
		return nilIf(out, err), s.n.observe(ctx, "MovePages", start, err)
	}
	k, hops, err := s.n.movePages(ctx, req.SessionId, req.ScenarioTimeNs, only, req.RequestId)
	if err != nil {
		return nil, s.n.observe(ctx, "MovePages", start, err)
	}
	return &satpagev1.MovePagesResponse{Moved: uint32(k), PageHops: hops}, s.n.observe(ctx, "MovePages", start, nil)
}

func (s *satServer) SessionFrames(ctx context.Context, req *satpagev1.SessionFramesRequest) (*satpagev1.SessionFramesResponse, error) {
	start := time.Now()
	if req.CopyOf != nil {
		f, err := s.n.CopyFrames(ctx, *req.CopyOf, req.SessionId)
		if err != nil {
			return nil, s.n.observe(ctx, "SessionFrames", start, err)
		}
		return &satpagev1.SessionFramesResponse{Frames: uint32(f)}, s.n.observe(ctx, "SessionFrames", start, nil)
	}
	f, serving, t, err := s.n.SessionFrames(ctx, req.SessionId)
	if err != nil {
		return nil, s.n.observe(ctx, "SessionFrames", start, err)
	}
	return &satpagev1.SessionFramesResponse{Frames: uint32(f), Serving: serving, TablePages: uint32(t)},
		s.n.observe(ctx, "SessionFrames", start, nil)
}

func (s *satServer) DropSession(ctx context.Context, req *satpagev1.DropSessionRequest) (*satpagev1.DropSessionResponse, error) {
	start := time.Now()
	if err := s.routed(req.Route, req.SessionId, nil); err != nil {
		return nil, s.n.observe(ctx, "DropSession", start, err)
	}
	if req.Route.Destination != s.n.self {
		resp, err := relay(ctx, s.n, req.Route, "DropSession", func(c satpagev1.SatelliteServiceClient) (*satpagev1.DropSessionResponse, error) {
			return c.DropSession(ctx, req)
		})
		return resp, s.n.observe(ctx, "DropSession", start, err)
	}
	k, err := s.n.dropHere(ctx, req.SessionId, req.TakenOver)
	if err != nil {
		return nil, s.n.observe(ctx, "DropSession", start, err)
	}
	return &satpagev1.DropSessionResponse{FramesDeleted: uint32(k), Hops: req.Route.Hops}, s.n.observe(ctx, "DropSession", start, nil)
}
