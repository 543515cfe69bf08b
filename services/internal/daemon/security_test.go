package daemon

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"

	"github.com/satpage/satpage/services/internal/metrics"
)

func TestReflectionIsOffByDefault(t *testing.T) {
	addr, cancel, done := start(t, time.Second, &stuck{entered: make(chan struct{})})
	defer func() { cancel(); <-done }()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, stop := context.WithTimeout(context.Background(), 5*time.Second)
	defer stop()
	s, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	if err == nil {
		_ = s.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}})
		_, err = s.Recv() // the stream's status, also when Send saw it closed
	}
	if status.Code(err) != codes.Unimplemented {
		t.Errorf("reflection: got %v, want Unimplemented", err)
	}
}

func TestPprofIsServedOnlyWhenAsked(t *testing.T) {
	reg := prometheus.NewRegistry()
	for _, on := range []bool{false, true} {
		srv := httptest.NewServer(metrics.Handler(reg, on))
		r, err := http.Get(srv.URL + "/debug/pprof/")
		srv.Close()
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		want := http.StatusNotFound
		if on {
			want = http.StatusOK
		}
		if r.StatusCode != want {
			t.Errorf("pprof %v: got HTTP %d, want %d", on, r.StatusCode, want)
		}
	}
}
