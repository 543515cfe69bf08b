package auth_test

import (
	"context"
	"log/slog"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/auth"
	"github.com/satpage/satpage/services/internal/config"
)

// blocking holds every SessionFrames call until release is closed, counting
// how many run at once.
type blocking struct {
	satpagev1.UnimplementedSatelliteServiceServer
	running, most atomic.Int32
	release       chan struct{}
}

func (b *blocking) SessionFrames(ctx context.Context, _ *satpagev1.SessionFramesRequest) (*satpagev1.SessionFramesResponse, error) {
	n := b.running.Add(1)
	defer b.running.Add(-1)
	for {
		m := b.most.Load()
		if n <= m || b.most.CompareAndSwap(m, n) {
			break
		}
	}
	select {
	case <-b.release:
	case <-ctx.Done():
	}
	return &satpagev1.SessionFramesResponse{}, nil
}

func TestConcurrentStreamsPerConnectionAreBounded(t *testing.T) {
	cfg := config.DefaultConfig()
	cfg.Insecure, cfg.Index, cfg.MaxStreams = true, 0, 2
	sec, err := auth.Load(cfg, config.Satnode, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(sec.ServerOptions()...)
	b := &blocking{release: make(chan struct{})}
	satpagev1.RegisterSatelliteServiceServer(srv, b)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(lis)
	defer srv.Stop()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := satpagev1.NewSatelliteServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 600*time.Millisecond)
	defer cancel()
	errc := make(chan error, 5)
	for range 5 {
		go func() {
			_, err := c.SessionFrames(ctx, &satpagev1.SessionFramesRequest{SessionId: "s"})
			errc <- err
		}()
	}
	var timedOut int
	for range 5 {
		if status.Code(<-errc) == codes.DeadlineExceeded {
			timedOut++
		}
	}
	close(b.release)
	if got := b.most.Load(); got != 2 {
		t.Errorf("handlers running at once: got %d, want the bound 2", got)
	}
	if timedOut < 3 {
		t.Errorf("calls over the bound: got %d timed out waiting, want 3 or more", timedOut)
	}
}
