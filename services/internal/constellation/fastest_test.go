package constellation

import (
	"testing"

	"github.com/satpage/satpage/services/internal/errs"
)

// uncovered has no positions at any time.
type uncovered struct{ calls int }

func (u *uncovered) PropagationNs(uint32, uint32, int64) (float64, error) {
	u.calls++
	return 0, errs.ErrOutOfRange
}

func TestWithoutPositionsAtTheTablesTimeRelaysTakeTheLowestIndexedPath(t *testing.T) {
	spec, err := ParseSpec("walker-star:24/4/1:500:87")
	if err != nil {
		t.Fatal(err)
	}
	plain, err := NewGrid(spec)
	if err != nil {
		t.Fatal(err)
	}
	u := &uncovered{}
	g := plain.WithDelays(u)
	for a := range uint32(24) {
		for b := range uint32(24) {
			want, werr := plain.NextHop(a, b, 0)
			got, gerr := g.NextHop(a, b, 0)
			if got != want || (werr == nil) != (gerr == nil) {
				t.Fatalf("%d -> %d: next hop %d (%v), want the lowest-indexed %d (%v)", a, b, got, gerr, want, werr)
			}
		}
	}
	// one look at the positions per call, not one per link
	if u.calls > 24*24 {
		t.Errorf("%d position lookups for %d calls", u.calls, 24*24)
	}
}
