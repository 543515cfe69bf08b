package peers

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/status"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/errs"
)

// The fetch stream (docs/services.md, "The fetch stream"): a satellite's
// FetchPages to a neighbour travel as messages of one long-lived FetchStream
// per neighbour instead of one unary call each. A unary call opens and closes
// an HTTP/2 stream, with its headers and trailers, call objects and contexts
// at both ends; a message on an open stream is one DATA frame each way. On
// this machine that is about a fifth of the CPU of a one-page one-hop fault
// (bench/bench_services.py --only-single-page). The stream changes nothing
// else: each message is one FetchPages, admitted by the access policy and
// handled as the unary call is, answered by id in any order, with the
// caller's deadline; its outcome reaches the failure detector as a unary
// call's does, and a stream that ends fails its calls Unavailable, which the
// origin sends again (FetchPages is idempotent).

// StreamMaxPages bounds the fetches that take the stream. What the stream
// saves is per call (about 10 us of a unary call's set-up in one process),
// nothing against a batch's pages (a 16-page fetch is over a millisecond of
// CPU here), while a batch on the one stream shares its flow-control window
// and its reader with every fault behind it; so a batch of more pages goes as
// a unary call of its own.
const StreamMaxPages = 8

// StreamFetches makes the pool send FetchPages of up to StreamMaxPages pages
// over one FetchStream per satellite. Not with Intercept (link emulation
// times unary calls): call before the first connection is made.
func (p *Pool) StreamFetches() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.streamOn = true
	if p.streams == nil {
		p.streams = map[uint32]*fetchStream{}
	}
}

// streamingClient is a satellite's client whose FetchPages may take the stream.
type streamingClient struct {
	satpagev1.SatelliteServiceClient
	p  *Pool
	i  uint32
	cc *grpc.ClientConn
}

func (c streamingClient) FetchPages(ctx context.Context, in *satpagev1.FetchPagesRequest, opts ...grpc.CallOption) (*satpagev1.FetchPagesResponse, error) {
	// A connection not ready yet (connecting, or waiting to reconnect) is the
	// unary call's to wait for within the caller's deadline, or to fail fast.
	if len(in.Pages) > StreamMaxPages || len(opts) > 0 || c.cc.GetState() != connectivity.Ready {
		return c.SatelliteServiceClient.FetchPages(ctx, in, opts...)
	}
	start := time.Now()
	f, err := c.p.fetchStream(c.i, c.cc)
	var resp *satpagev1.FetchPagesResponse
	if err == nil {
		resp, err = f.call(ctx, in)
	}
	return resp, c.p.outcome(ctx, c.i, c.cc, satpagev1.SatelliteService_FetchPages_FullMethodName, start, err)
}

// fetchStream returns the open stream to satellite i over cc, opening one if
// there is none (or the last one ended).
func (p *Pool) fetchStream(i uint32, cc *grpc.ClientConn) (*fetchStream, error) {
	p.mu.Lock()
	if f := p.streams[i]; f != nil && f.cc == cc && !f.ended() {
		p.mu.Unlock()
		return f, nil
	}
	closed := p.streams == nil
	p.mu.Unlock()
	if closed {
		return nil, status.Errorf(codes.Unavailable, "satellite %d: pool closed", i)
	}
	ctx, cancel := context.WithCancel(context.Background())
	st, err := satpagev1.NewSatelliteServiceClient(cc).FetchStream(ctx)
	if err != nil {
		cancel()
		return nil, err
	}
	f := &fetchStream{i: i, cc: cc, st: st, cancel: cancel, waiting: map[uint64]chan fetchReply{}}
	p.mu.Lock()
	if old := p.streams[i]; p.streams == nil || (old != nil && old.cc == cc && !old.ended()) {
		// Closed meanwhile, or another caller opened one first: use that.
		p.mu.Unlock()
		cancel()
		if old == nil {
			return nil, status.Errorf(codes.Unavailable, "satellite %d: pool closed", i)
		}
		return old, nil
	}
	p.streams[i] = f
	p.readers.Add(1)
	p.mu.Unlock()
	go func() {
		defer p.readers.Done()
		f.read()
	}()
	return f, nil
}

// closeStreams ends every stream and waits for their readers (Close).
func (p *Pool) closeStreams() {
	p.mu.Lock()
	streams := p.streams
	p.streams = nil
	p.mu.Unlock()
	for _, f := range streams {
		f.cancel()
	}
	p.readers.Wait()
}

// fetchStream is one FetchStream: calls share it, each a message answered by id.
type fetchStream struct {
	i      uint32
	cc     *grpc.ClientConn
	st     satpagev1.SatelliteService_FetchStreamClient
	cancel context.CancelFunc

	sendMu sync.Mutex // a gRPC stream takes one sender at a time

	mu      sync.Mutex // guards next, waiting and err
	next    uint64
	waiting map[uint64]chan fetchReply
	err     error // why the stream ended (set once); no call joins it then
}

type fetchReply struct {
	resp *satpagev1.FetchPagesResponse
	err  error
}

func (f *fetchStream) ended() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err != nil
}

// call sends req and waits for its answer, the end of the stream, or ctx.
func (f *fetchStream) call(ctx context.Context, req *satpagev1.FetchPagesRequest) (*satpagev1.FetchPagesResponse, error) {
	msg := &satpagev1.FetchStreamRequest{Request: req}
	if d, ok := ctx.Deadline(); ok {
		left := time.Until(d)
		if left <= 0 {
			return nil, status.FromContextError(context.DeadlineExceeded).Err()
		}
		msg.TimeoutNs = int64(left)
	}
	ch := make(chan fetchReply, 1)
	f.mu.Lock()
	if f.err != nil {
		f.mu.Unlock()
		return nil, f.err
	}
	f.next++
	msg.Id = f.next
	f.waiting[msg.Id] = ch
	f.mu.Unlock()
	f.sendMu.Lock()
	err := f.st.Send(msg)
	f.sendMu.Unlock()
	if err != nil {
		// The stream broke (its reader reports why): the message was not sent.
		f.forget(msg.Id)
		return nil, status.Errorf(codes.Unavailable, "satellite %d: fetch stream: %v", f.i, err)
	}
	select {
	case r := <-ch:
		return r.resp, r.err
	case <-ctx.Done():
		f.forget(msg.Id)
		return nil, status.FromContextError(ctx.Err()).Err()
	}
}

func (f *fetchStream) forget(id uint64) {
	f.mu.Lock()
	delete(f.waiting, id)
	f.mu.Unlock()
}

// read hands each answer to its caller until the stream ends, then fails
// the calls still waiting.
func (f *fetchStream) read() {
	for {
		m, err := f.st.Recv()
		if err != nil {
			f.end(err)
			return
		}
		f.mu.Lock()
		ch, ok := f.waiting[m.Id]
		delete(f.waiting, m.Id)
		f.mu.Unlock()
		if ok { // else its caller gave up
			ch <- answer(m)
		}
	}
}

// end fails the waiting calls with why the stream ended: the server's own
// refusal as it is, anything else (the server draining, the connection
// broken, the pool closed) Unavailable, as for a unary call cut off with its
// connection.
func (f *fetchStream) end(err error) {
	st := status.Convert(err)
	switch {
	case errors.Is(err, io.EOF), st.Code() == codes.OK, st.Code() == codes.Canceled:
		err = status.Errorf(codes.Unavailable, "satellite %d: fetch stream ended: %v", f.i, err)
	case st.Code() != codes.Unavailable:
		err = st.Err()
	}
	f.mu.Lock()
	f.err = err
	waiting := f.waiting
	f.waiting = nil
	f.mu.Unlock()
	f.cancel()
	for _, ch := range waiting {
		ch <- fetchReply{err: err}
	}
}

// answer is a response message as the unary call would have returned it.
func answer(m *satpagev1.FetchStreamResponse) fetchReply {
	resp, err := errs.Answer(m.Response, m.Status)
	return fetchReply{resp: resp, err: err}
}
