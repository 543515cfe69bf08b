package node

import (
	"context"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/liveness"
)

// healthSky answers every health check with one status, or one error.
type healthSky struct {
	status healthpb.HealthCheckResponse_ServingStatus
	err    error
}

func (h healthSky) Satellite(uint32) (satpagev1.SatelliteServiceClient, error) { return nil, nil }
func (h healthSky) Page(uint32) (satpagev1.PageServiceClient, error)           { return nil, nil }
func (h healthSky) Close() error                                               { return nil }
func (h healthSky) Health(uint32) (healthpb.HealthClient, error)               { return h, nil }
func (h healthSky) Check(context.Context, *healthpb.HealthCheckRequest, ...grpc.CallOption) (*healthpb.HealthCheckResponse, error) {
	if h.err != nil {
		return nil, h.err
	}
	return &healthpb.HealthCheckResponse{Status: h.status}, nil
}
func (h healthSky) List(context.Context, *healthpb.HealthListRequest, ...grpc.CallOption) (*healthpb.HealthListResponse, error) {
	return nil, status.Error(codes.Unimplemented, "")
}
func (h healthSky) Watch(context.Context, *healthpb.HealthCheckRequest, ...grpc.CallOption) (grpc.ServerStreamingClient[healthpb.HealthCheckResponse], error) {
	return nil, status.Error(codes.Unimplemented, "")
}

// A satellite restoring its state answers NOT_SERVING for up to 30 s: it is
// alive for routing (it relays and holds copies), so the detector never marks
// it dead; a refused probe does.
func TestARestoringSatelliteIsAliveForTheDetector(t *testing.T) {
	for _, tc := range []struct {
		name string
		sky  healthSky
		dead bool
	}{
		{"NOT_SERVING", healthSky{status: healthpb.HealthCheckResponse_NOT_SERVING}, false},
		{"SERVING", healthSky{status: healthpb.HealthCheckResponse_SERVING}, false},
		{"refused", healthSky{err: status.Error(codes.Unavailable, "dial tcp 127.0.0.1:7004: connect: connection refused")}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := &Node{peers: tc.sky}
			d := liveness.New(n.probe, 0)
			if got := d.Suspect(context.Background(), 4); got != tc.dead {
				t.Errorf("Suspect(4) = %v, want %v", got, tc.dead)
			}
		})
	}
}
