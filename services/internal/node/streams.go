package node

import (
	"context"

	"google.golang.org/grpc"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/errs"
	"github.com/satpage/satpage/services/internal/streams"
)

// Streams of unary requests (docs/services.md, "The fetch stream" and "The
// read stream"): each message carries one request of a unary method, is
// admitted by the access policy as that call is, handled by the same
// handler, and answered by id with the response or the error's status.

// FetchStream serves a neighbour's fetch stream (peers.Pool.StreamFetches):
// each message is a FetchPages, handled concurrently (a fetch relayed far
// holds up no other) and answered by id, in any order.
func (s *satServer) FetchStream(st grpc.BidiStreamingServer[satpagev1.FetchStreamRequest, satpagev1.FetchStreamResponse]) error {
	return streams.Serve(st, s.n.draining, true, func(ctx context.Context, m *satpagev1.FetchStreamRequest) *satpagev1.FetchStreamResponse {
		resp, err := handleMessage(ctx, s.n, satpagev1.SatelliteService_FetchPages_FullMethodName, m, m.Request, m.Id, m.TimeoutNs, s.FetchPages)
		return &satpagev1.FetchStreamResponse{Id: m.Id, Response: resp, Status: errs.StatusBytes(err)}
	})
}

// ReadStream serves a client's read stream: each message is a ReadPage of
// the session whose token the stream's metadata carries, handled one at a
// time, in order (a session's reads are the client's sequence).
func (s *pageServer) ReadStream(st grpc.BidiStreamingServer[satpagev1.ReadStreamRequest, satpagev1.ReadStreamResponse]) error {
	return streams.Serve(st, s.n.draining, false, func(ctx context.Context, m *satpagev1.ReadStreamRequest) *satpagev1.ReadStreamResponse {
		resp, err := handleMessage(ctx, s.n, satpagev1.PageService_ReadPage_FullMethodName, m, m.Request, m.Id, m.TimeoutNs, s.ReadPage)
		return &satpagev1.ReadStreamResponse{Id: m.Id, Response: resp, Status: errs.StatusBytes(err)}
	})
}

// handleMessage is one message's request as its unary call: with the
// caller's remaining time, admitted by the access policy as a call of method,
// refused while cut off from the ground as the unary interceptor would.
func handleMessage[Req, Resp any](ctx context.Context, n *Node, method string, wire any, req *Req, id uint64, timeoutNs int64,
	h func(context.Context, *Req) (*Resp, error)) (*Resp, error) {
	ctx, cancel := streams.WithTimeout(ctx, timeoutNs)
	defer cancel()
	if n.admit != nil {
		var err error
		if ctx, err = n.admit(ctx, method, wire, req); err != nil {
			return nil, err
		}
	}
	if err := n.groundCut(ctx, method); err != nil {
		return nil, err
	}
	if err := streams.NoRequest(id, req); err != nil {
		return nil, errs.Status(err)
	}
	return h(ctx, req)
}

// Drain ends the streams this node serves (FetchStream, ReadStream) and
// refuses none: call when the server stops taking calls, before a graceful
// stop.
func (n *Node) Drain() { n.drainOnce.Do(func() { close(n.draining) }) }
