package limits_test

import (
	"testing"
	"time"

	"github.com/satpage/satpage/services/internal/limits"
)

func TestATokenBucketAllowsTheBurstThenTheRate(t *testing.T) {
	now := time.Unix(0, 0)
	r := limits.NewRate(10, 5).WithClock(func() time.Time { return now })
	allowed := 0
	for range 20 {
		if r.Allow("a") {
			allowed++
		}
	}
	if allowed != 5 {
		t.Errorf("burst: got %d allowed, want 5", allowed)
	}
	if !r.Allow("b") {
		t.Error("another caller: got refused, want its own bucket")
	}
	now = now.Add(500 * time.Millisecond) // 5 tokens at 10/s
	allowed = 0
	for range 20 {
		if r.Allow("a") {
			allowed++
		}
	}
	if allowed != 5 {
		t.Errorf("after 0.5 s at 10/s: got %d allowed, want 5", allowed)
	}
	if !limits.NewRate(0, 0).Allow("x") {
		t.Error("rate 0: got refused, want unlimited")
	}
}
