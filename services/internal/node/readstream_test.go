package node_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/status"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/clustertest"
	"github.com/satpage/satpage/services/internal/errs"
)

// Two sessions take the same tour (fetchstream_test.go), one reading with
// ReadPage and one over a read stream per satellite: every read reports the
// same outcome, hops, previous owner and data.
func TestReadsOverAReadStreamAreTheReadsOfReadPage(t *testing.T) {
	c := clustertest.New(t, "walker-star:30/2/1:500:87", clustertest.Options{FetchStreams: true})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	streams := map[int]satpagev1.PageService_ReadStreamClient{}
	next := uint64(0)
	streamed := tourReading(t, c, "streamed", func(i int, p satpagev1.PageServiceClient, req *satpagev1.ReadPageRequest) (*satpagev1.ReadPageResponse, error) {
		if streams[i] == nil {
			st, err := p.ReadStream(ctx)
			if err != nil {
				return nil, err
			}
			streams[i] = st
		}
		next++
		return clustertest.ReadOver(t, streams[i], next, req)
	})
	unary := tour(t, c, "unary")
	if !slices.Equal(unary, streamed) {
		t.Errorf("reads over ReadPage:\n%v\nover read streams:\n%v", unary, streamed)
	}
	if len(streams) != 2 || !slices.ContainsFunc(unary, func(s string) bool { return strings.Contains(s, "OUTCOME_MOVED, 1 hops") }) {
		t.Errorf("the tour read at %d satellites over streams, moved %v", len(streams), unary)
	}
}

// A read the satellite refuses is answered with the unary call's code and
// reason, and the stream goes on with the next read.
func TestAReadStreamAnswersAnErrorAsReadPageAndGoesOn(t *testing.T) {
	c := clustertest.New(t, "walker-star:30/2/1:500:87", clustertest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	placePage(t, c, "s", 0, 2, []byte("payload"))
	p0, _ := c.Satellite(t, 0) // no longer serving "s"
	req := &satpagev1.ReadPageRequest{SessionId: "s", Page: 7}
	_, called := p0.ReadPage(ctx, req)
	if called == nil {
		t.Fatal("a read at a satellite that no longer serves the session succeeded")
	}
	st, err := p0.ReadStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, streamed := clustertest.ReadOver(t, st, 1, req)
	if status.Code(streamed) != status.Code(called) || errs.Reason(streamed) != errs.Reason(called) {
		t.Errorf("over a read stream: %v (reason %q); ReadPage: %v (reason %q)",
			streamed, errs.Reason(streamed), called, errs.Reason(called))
	}
	p2, _ := c.Satellite(t, 2)
	st2, err := p2.ReadStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := clustertest.ReadOver(t, st2, 1, &satpagev1.ReadPageRequest{SessionId: "nobody", Page: 0}); errs.Reason(err) != errs.ReasonUnknownSession {
		t.Fatalf("a read of an unknown session: got %v, want reason %s", err, errs.ReasonUnknownSession)
	}
	r, err := clustertest.ReadOver(t, st2, 2, &satpagev1.ReadPageRequest{SessionId: "s", Page: 7})
	if err != nil || string(r.Data) != "payload" || r.Outcome != satpagev1.Outcome_OUTCOME_MOVED {
		t.Fatalf("the next read on the stream: got %v, %v, want the page moved here", r, err)
	}
	if _, err := clustertest.ReadOver(t, st2, 3, nil); status.Code(err) != status.Code(errs.Status(errs.ErrInvalid)) {
		t.Fatalf("a message without a request: got %v, want InvalidArgument", err)
	}
}

// Drain ends a node's read streams too, after the read in hand.
func TestDrainEndsTheReadStreamsANodeServes(t *testing.T) {
	c := clustertest.New(t, "walker-star:30/2/1:500:87", clustertest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	placePage(t, c, "s", 0, 0, []byte("payload"))
	p, _ := c.Satellite(t, 0)
	st, err := p.ReadStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := clustertest.ReadOver(t, st, 1, &satpagev1.ReadPageRequest{SessionId: "s", Page: 7}); err != nil || string(r.Data) != "payload" {
		t.Fatalf("got %v, %v, want the page", r, err)
	}
	c.Nodes[0].Drain()
	if m, err := st.Recv(); err == nil {
		t.Fatalf("after Drain: got answer %v, want the stream ended", m)
	} else if ctx.Err() != nil {
		t.Fatal("the stream outlived Drain until the deadline")
	}
}
