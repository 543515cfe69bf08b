package errs_test

import (
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/satpage/satpage/services/internal/errs"
)

// A relay's "no route" arrives at the origin as a status; it keeps the code of
// a transient failure but must not be sent again.
func TestOnlyTransientUnavailableFailuresAreRetryable(t *testing.T) {
	noRoute := fmt.Errorf("from satellite 1 to 0 at 0 ns: %w", errs.ErrNoRoute)
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"a connection reset", status.Error(codes.Unavailable, "connection reset by peer"), true},
		{"the store unreachable", fmt.Errorf("redis: %w", errs.ErrUnavailable), true},
		{"the store unreachable, over the wire", errs.Status(fmt.Errorf("redis: %w", errs.ErrUnavailable)), true},
		{"no route here", noRoute, false},
		{"no route at a relay, over the wire", errs.Status(noRoute), false},
		{"no route passed back by a second relay", errs.Status(errs.Status(noRoute)), false},
		{"not found", errs.Status(fmt.Errorf("page 3: %w", errs.ErrNotFound)), false},
		{"a deadline", status.Error(codes.DeadlineExceeded, "deadline"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := errs.Retryable(tt.err); got != tt.want {
				t.Errorf("Retryable(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
	if c := status.Code(errs.Status(noRoute)); c != codes.Unavailable {
		t.Errorf("code of no route: got %v, want Unavailable (unchanged on the wire)", c)
	}
}

func TestAStreamAnswerIsWhatItsUnaryCallWouldReturn(t *testing.T) {
	sent := errs.Status(fmt.Errorf("session s: %w", errs.ErrUnknownSession))
	if resp, err := errs.Answer[int](nil, errs.StatusBytes(sent)); resp != nil || status.Code(err) != codes.NotFound || errs.Reason(err) != errs.ReasonUnknownSession {
		t.Errorf("an error's answer: %v, %v; want NotFound with reason %s", resp, err, errs.ReasonUnknownSession)
	}
	one := 1
	if resp, err := errs.Answer(&one, nil); resp != &one || err != nil {
		t.Errorf("a response's answer: %v, %v", resp, err)
	}
	for _, st := range [][]byte{nil, {0xff, 0xff}, errs.StatusBytes(nil)} {
		if _, err := errs.Answer[int](nil, st); status.Code(err) != codes.Internal {
			t.Errorf("status %x without a response: %v, want Internal", st, err)
		}
	}
}
