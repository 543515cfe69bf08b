// Package streams serves streams of unary requests (docs/services.md, "The
// fetch stream" and "The read stream"): each message of a bidirectional
// stream is one request, answered by a message of its own.
package streams

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"google.golang.org/grpc"

	"github.com/satpage/satpage/services/internal/errs"
)

// Serve receives st's messages and sends answer's answer to each:
// concurrently, each in a goroutine of its own, or one at a time in order.
// It returns when the caller ends the stream, or when draining closes (the
// daemon's stop: a stream would otherwise hold a graceful stop until its
// timeout), once what it received is answered.
func Serve[Req, Resp any](st grpc.BidiStreamingServer[Req, Resp], draining <-chan struct{}, concurrent bool,
	answer func(context.Context, *Req) *Resp) error {
	ctx := st.Context()
	var h handlers
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
			handle := func() {
				out := answer(ctx, m)
				sendMu.Lock()
				_ = st.Send(out) // a broken stream: its caller fails the call (Unavailable)
				sendMu.Unlock()
			}
			if !h.run(handle, concurrent) {
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
	case <-draining:
		return nil
	}
}

// handlers runs a stream's messages until stop, which waits for those
// running.
type handlers struct {
	mu      sync.Mutex
	stopped bool
	wg      sync.WaitGroup
}

// run runs f in a goroutine of its own (concurrent) or before it returns;
// false, without running it, once stopped.
func (h *handlers) run(f func(), concurrent bool) bool {
	h.mu.Lock()
	if h.stopped {
		h.mu.Unlock()
		return false
	}
	if concurrent {
		h.wg.Go(f)
		h.mu.Unlock()
		return true
	}
	h.wg.Add(1)
	h.mu.Unlock()
	defer h.wg.Done()
	f()
	return true
}

func (h *handlers) stop() {
	h.mu.Lock()
	h.stopped = true
	h.mu.Unlock()
	h.wg.Wait()
}

// NoRequest is the error of message id when it carries no request (req
// nil), answered as a unary call's invalid argument; nil when it carries one.
func NoRequest[Req any](id uint64, req *Req) error {
	if req != nil {
		return nil
	}
	return fmt.Errorf("stream message %d carries no request: %w", id, errs.ErrInvalid)
}

// WithTimeout is ctx bounded by a message's timeout_ns, the time its caller
// had left when it sent it (0: none).
func WithTimeout(ctx context.Context, timeoutNs int64) (context.Context, context.CancelFunc) {
	if timeoutNs <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, time.Duration(timeoutNs))
}
