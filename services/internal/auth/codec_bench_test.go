package auth_test

import (
	"testing"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/auth"
)

// BenchmarkCodecUnmarshal: the server codec's decode of the two requests of a
// one-page one-hop fault (ReadPage at the serving satellite, FetchPages at the
// owner), as gRPC hands them over: one buffer each.
func BenchmarkCodecUnmarshal(b *testing.B) {
	reqs := []struct {
		name string
		msg  proto.Message
		new  func() proto.Message
	}{
		{"ReadPage", &satpagev1.ReadPageRequest{SessionId: "load-1764305000000000000-1-17", Page: 41},
			func() proto.Message { return &satpagev1.ReadPageRequest{} }},
		{"FetchPages", &satpagev1.FetchPagesRequest{SessionId: "load-1764305000000000000-1-17", Pages: []uint32{41},
			Route: &satpagev1.Route{Origin: 12, Destination: 13, Hops: 1, Path: []uint32{12}}},
			func() proto.Message { return &satpagev1.FetchPagesRequest{} }},
	}
	c := auth.NewCodec()
	for _, r := range reqs {
		wire, err := proto.Marshal(r.msg)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(r.name, func(b *testing.B) {
			for b.Loop() {
				m := r.new()
				if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(wire)}, m); err != nil {
					b.Fatal(err)
				}
				if err := auth.Take(m); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
