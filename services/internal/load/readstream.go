package load

import (
	"context"
	"fmt"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/errs"
	"github.com/satpage/satpage/services/internal/peers"
)

// readStreams are one session's read streams (Options.ReadStream), one per
// satellite it was served by, kept open across its handovers.
type readStreams struct {
	ctx     context.Context // the session's: its token is the streams' metadata
	cancel  context.CancelFunc
	streams map[uint32]satpagev1.PageService_ReadStreamClient
	next    uint64
}

func newReadStreams(ctx context.Context) *readStreams {
	ctx, cancel := context.WithCancel(ctx)
	return &readStreams{ctx: ctx, cancel: cancel, streams: map[uint32]satpagev1.PageService_ReadStreamClient{}}
}

// read is req at satellite sat as one message of its stream, answered as
// ReadPage would be. A stream that broke is dropped (the next read opens one).
func (r *readStreams) read(pool peers.Dialer, sat uint32, req *satpagev1.ReadPageRequest) (*satpagev1.ReadPageResponse, error) {
	st := r.streams[sat]
	if st == nil {
		c, err := pool.Page(sat)
		if err != nil {
			return nil, err
		}
		if st, err = c.ReadStream(r.ctx); err != nil {
			return nil, err
		}
		r.streams[sat] = st
	}
	r.next++
	m, err := func() (*satpagev1.ReadStreamResponse, error) {
		if err := st.Send(&satpagev1.ReadStreamRequest{Id: r.next, Request: req}); err != nil {
			_, err = st.Recv() // the stream's status says why Send failed
			return nil, err
		}
		return st.Recv()
	}()
	if err != nil {
		delete(r.streams, sat)
		return nil, err
	}
	if m.Id != r.next {
		return nil, fmt.Errorf("read stream to satellite %d: answer %d to message %d", sat, m.Id, r.next)
	}
	return errs.Answer(m.Response, m.Status)
}

// close ends the streams.
func (r *readStreams) close() {
	for _, st := range r.streams {
		_ = st.CloseSend()
	}
	r.cancel()
}
