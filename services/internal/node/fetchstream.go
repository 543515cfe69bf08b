package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/errs"
)

// FetchStream serves a neighbour's fetch stream (peers.Pool.StreamFetches,
// docs/services.md "The fetch stream"): each message is admitted by the
// access policy and handled as a unary FetchPages is, concurrently, and
// answered by id. It returns when the caller ends the stream, or when the
// node drains (the daemon's stop: a stream would otherwise hold a graceful
// stop until its timeout), once what it received is answered.
func (s *satServer) FetchStream(st grpc.BidiStreamingServer[satpagev1.FetchStreamRequest, satpagev1.FetchStreamResponse]) error {
	ctx := st.Context()
	var h streamHandlers
	defer h.stop()
	var sendMu sync.Mutex // a gRPC stream takes one sender at a time
	ended := make(chan error, 1)
	// The receiver ends with the stream: on the caller's close, or on this
	// handler's return, which cancels ctx.
	go func() {
		for {
			m, err := st.Recv()
			if err != nil {
				ended <- err
				return
			}
			ok := h.Go(func() {
				out := s.fetchMessage(ctx, m)
				sendMu.Lock()
				_ = st.Send(out) // a broken stream: its caller fails the call (Unavailable)
				sendMu.Unlock()
			})
			if !ok {
				ended <- nil
				return
			}
		}
	}()
	select {
	case err := <-ended:
		if err == nil || errors.Is(err, io.EOF) {
			return nil
		}
		return err
	case <-s.n.draining:
		return nil
	}
}

// streamHandlers runs a stream's messages, each in its own goroutine (a slow
// fetch, relayed far, holds up no other), until stop, which waits for them.
type streamHandlers struct {
	mu      sync.Mutex
	stopped bool
	wg      sync.WaitGroup
}

func (h *streamHandlers) Go(f func()) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped {
		return false
	}
	h.wg.Go(f)
	return true
}

func (h *streamHandlers) stop() {
	h.mu.Lock()
	h.stopped = true
	h.mu.Unlock()
	h.wg.Wait()
}

// fetchMessage answers one message: the pages, or the error as the unary
// call's status would carry it (code, message, details).
func (s *satServer) fetchMessage(ctx context.Context, m *satpagev1.FetchStreamRequest) *satpagev1.FetchStreamResponse {
	out := &satpagev1.FetchStreamResponse{Id: m.Id}
	resp, err := s.fetchOne(ctx, m)
	if err == nil {
		out.Response = resp
		return out
	}
	b, merr := proto.Marshal(status.Convert(err).Proto())
	if merr != nil {
		b, _ = proto.Marshal(status.New(codes.Internal, "fetch stream: unencodable error").Proto())
	}
	out.Status = b
	return out
}

func (s *satServer) fetchOne(ctx context.Context, m *satpagev1.FetchStreamRequest) (*satpagev1.FetchPagesResponse, error) {
	if m.TimeoutNs > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(m.TimeoutNs))
		defer cancel()
	}
	if s.n.admit != nil {
		var err error
		if ctx, err = s.n.admit(ctx, satpagev1.SatelliteService_FetchPages_FullMethodName, m, m.Request); err != nil {
			return nil, err
		}
	}
	if m.Request == nil {
		return nil, errs.Status(fmt.Errorf("fetch stream message %d carries no request: %w", m.Id, errs.ErrInvalid))
	}
	return s.FetchPages(ctx, m.Request)
}

// Drain ends the fetch streams this node serves (FetchStream) and refuses
// none: call when the server stops taking calls, before a graceful stop.
func (n *Node) Drain() { n.drainOnce.Do(func() { close(n.draining) }) }
