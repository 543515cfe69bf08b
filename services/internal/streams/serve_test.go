package streams

import (
	"context"
	"errors"
	"io"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/satpage/satpage/services/internal/errs"
)

// fakeStream hands out its messages, then blocks until closed (io.EOF),
// and records what was sent.
type fakeStream struct {
	ctx    context.Context
	in     chan int
	mu     sync.Mutex
	out    []int
	closed chan struct{}
}

func newFake(msgs ...int) *fakeStream {
	f := &fakeStream{ctx: context.Background(), in: make(chan int, len(msgs)), closed: make(chan struct{})}
	for _, m := range msgs {
		f.in <- m
	}
	return f
}

func (f *fakeStream) Recv() (*int, error) {
	select {
	case m := <-f.in:
		return &m, nil
	case <-f.closed:
		return nil, io.EOF
	}
}

func (f *fakeStream) Send(m *int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.out = append(f.out, *m)
	return nil
}

func (f *fakeStream) sent() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.out)
}

func (f *fakeStream) Context() context.Context     { return f.ctx }
func (f *fakeStream) SetHeader(metadata.MD) error  { return nil }
func (f *fakeStream) SendHeader(metadata.MD) error { return nil }
func (f *fakeStream) SetTrailer(metadata.MD)       {}
func (f *fakeStream) SendMsg(any) error            { return nil }
func (f *fakeStream) RecvMsg(any) error            { return nil }

var _ grpc.BidiStreamingServer[int, int] = (*fakeStream)(nil)

func TestInOrderAnswersEachMessageBeforeReceivingTheNext(t *testing.T) {
	f := newFake(1, 2, 3, 4, 5)
	var running, most int
	var mu sync.Mutex
	done := make(chan error, 1)
	go func() {
		done <- Serve(f, nil, false, func(_ context.Context, m *int) *int {
			mu.Lock()
			running++
			most = max(most, running)
			mu.Unlock()
			time.Sleep(time.Millisecond)
			mu.Lock()
			running--
			mu.Unlock()
			out := *m * 10
			return &out
		})
	}()
	waitFor(t, func() bool { return len(f.sent()) == 5 })
	close(f.closed)
	if err := <-done; err != nil {
		t.Fatalf("Serve after the caller's close: %v, want nil", err)
	}
	if got := f.sent(); !slices.Equal(got, []int{10, 20, 30, 40, 50}) || most != 1 {
		t.Fatalf("answers %v with %d at once, want 10..50 in order, one at a time", got, most)
	}
}

func TestConcurrentAnswersALaterMessageWhileAnEarlierOneWaits(t *testing.T) {
	f := newFake(1, 2)
	release := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- Serve(f, nil, true, func(_ context.Context, m *int) *int {
			if *m == 1 {
				<-release // answered only after message 2's answer went out
			}
			return m
		})
	}()
	waitFor(t, func() bool { return slices.Equal(f.sent(), []int{2}) })
	close(release)
	waitFor(t, func() bool { return slices.Equal(f.sent(), []int{2, 1}) })
	close(f.closed)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestDrainingEndsServeOnceTheAnswersRunningAreSent(t *testing.T) {
	f := newFake(7)
	draining := make(chan struct{})
	started, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- Serve(f, draining, true, func(_ context.Context, m *int) *int {
			close(started)
			<-release
			return m
		})
	}()
	<-started
	close(draining)
	select {
	case err := <-done:
		t.Fatalf("Serve returned (%v) with an answer still running", err)
	case <-time.After(20 * time.Millisecond):
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := f.sent(); !slices.Equal(got, []int{7}) {
		t.Fatalf("sent %v, want the running answer [7] before Serve returned", got)
	}
	close(f.closed) // the receiver, still reading the caller's stream, ends with it
}

func TestWithTimeoutBoundsByTheMessagesTimeAndZeroByNone(t *testing.T) {
	ctx, cancel := WithTimeout(context.Background(), int64(time.Hour))
	defer cancel()
	if d, ok := ctx.Deadline(); !ok || time.Until(d) > time.Hour || time.Until(d) < 59*time.Minute {
		t.Fatalf("deadline %v (%v), want an hour from now", d, ok)
	}
	ctx, cancel = WithTimeout(context.Background(), 0)
	defer cancel()
	if _, ok := ctx.Deadline(); ok {
		t.Fatal("timeout_ns 0 set a deadline, want none")
	}
}

func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !ok(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("not within 5 s")
		}
	}
}

func TestNoRequestIsInvalidNamingTheMessageAndNilForARequest(t *testing.T) {
	req := 1
	if err := NoRequest(3, &req); err != nil {
		t.Fatalf("a message with its request: %v, want nil", err)
	}
	err := NoRequest[int](3, nil)
	if !errors.Is(err, errs.ErrInvalid) || err.Error() != "stream message 3 carries no request: "+errs.ErrInvalid.Error() {
		t.Fatalf("a message without one: %v, want invalid, naming message 3", err)
	}
}
