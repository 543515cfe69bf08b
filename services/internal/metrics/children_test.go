package metrics_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/satpage/satpage/services/internal/metrics"
)

func TestAChildIsTheVectorsChildOfTheSameLabel(t *testing.T) {
	m := metrics.NewNode(0)
	var wg sync.WaitGroup
	for g := range 8 { // first uses race each other
		wg.Go(func() {
			for i := range 100 {
				m.AccessesOf.Of([]string{"moved", "local", "created"}[(g+i)%3]).Inc()
				m.RPCSecondsOf.Of(fmt.Sprint("rpc", i%5)).Observe(0.001)
			}
		})
	}
	wg.Wait()
	for _, o := range []string{"moved", "local", "created"} {
		if got, want := testutil.ToFloat64(m.Accesses.WithLabelValues(o)), 800.0/3; got < want-1 || got > want+1 {
			t.Errorf("accesses %s: got %v, want %.0f", o, got, want)
		}
	}
	if got := testutil.CollectAndCount(m.RPCSeconds); got != 5 {
		t.Errorf("RPC series: got %d, want 5", got)
	}
	if got := testutil.CollectAndCount(m.PageBytes); got != 0 {
		t.Errorf("page-byte series before any use: got %d, want 0 (a child appears at its first use)", got)
	}
}

// BenchmarkChildren: a counter child by its label, as the fault path asks
// for it, through the vector and through its Children.
func BenchmarkChildren(b *testing.B) {
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "x_total", Help: "x"}, []string{"outcome"})
	c := metrics.ChildrenOf(vec.WithLabelValues)
	b.Run("WithLabelValues", func(b *testing.B) {
		for b.Loop() {
			vec.WithLabelValues("moved").Inc()
		}
	})
	b.Run("Of", func(b *testing.B) {
		for b.Loop() {
			c.Of("moved").Inc()
		}
	})
}
