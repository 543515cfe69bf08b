// Package metrics defines the Prometheus metrics of satnode and gateway, each
// on its own registry (so that many nodes can live in one test process).
package metrics

import (
	"net/http"
	"net/http/pprof"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Latency buckets from 50 us (a local Redis hit on loopback) to 2.5 s.
var latencyBuckets = prometheus.ExponentialBuckets(50e-6, 2, 16)

// Node is what a satellite node counts.
type Node struct {
	Registry *prometheus.Registry
	// Accesses by outcome (local, created, moved); "moved" is a page fault.
	Accesses *prometheus.CounterVec
	// Pages moved to this node, by reason (access = on-demand, handover = proactive).
	PagesMoved *prometheus.CounterVec
	// ISL hops the moved pages travelled (page-hops), by reason.
	PageHops *prometheus.CounterVec
	// Requests this node forwarded to a neighbour (one ISL hop each), by RPC.
	RelayedHops *prometheus.CounterVec
	// Page bytes this node sent and received as an owner or requester over ISLs.
	PageBytes *prometheus.CounterVec
	// Page-fault latency (an access that moved a page), by hop count.
	FaultSeconds *prometheus.HistogramVec
	// Handler latency by RPC.
	RPCSeconds *prometheus.HistogramVec
	// The children of the vectors above, each looked up once (the fault
	// path's): AccessesOf.Of("moved") is Accesses.WithLabelValues("moved").
	AccessesOf, PagesMovedOf, PageHopsOf, RelayedHopsOf, PageBytesOf *Children[prometheus.Counter]
	FaultSecondsOf, RPCSecondsOf                                     *Children[prometheus.Observer]
}

// NewNode registers the node metrics on a fresh registry.
func NewNode(index int) *Node {
	r := prometheus.NewRegistry()
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := &Node{
		Registry: r,
		Accesses: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "satpage_page_accesses_total",
			Help: "Page accesses served by this satellite, by outcome (local, created, moved = page fault)."}, []string{"outcome"}),
		PagesMoved: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "satpage_pages_moved_total",
			Help: "Pages moved to this satellite, by reason (access, handover)."}, []string{"reason"}),
		PageHops: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "satpage_page_hops_total",
			Help: "ISL hops travelled by pages moved to this satellite, by reason."}, []string{"reason"}),
		RelayedHops: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "satpage_relayed_hops_total",
			Help: "Requests this satellite forwarded to an ISL neighbour, by RPC."}, []string{"rpc"}),
		PageBytes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "satpage_page_bytes_total",
			Help: "Page bytes sent (as owner) and received (as new owner) over ISLs."}, []string{"direction"}),
		FaultSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "satpage_page_fault_seconds",
			Help: "Latency of accesses that moved a page, by ISL hops.", Buckets: latencyBuckets}, []string{"hops"}),
		RPCSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "satpage_rpc_seconds",
			Help: "Handler latency by RPC.", Buckets: latencyBuckets}, []string{"rpc"}),
	}
	r.MustRegister(m.Accesses, m.PagesMoved, m.PageHops, m.RelayedHops, m.PageBytes, m.FaultSeconds, m.RPCSeconds)
	m.AccessesOf, m.PagesMovedOf = ChildrenOf(m.Accesses.WithLabelValues), ChildrenOf(m.PagesMoved.WithLabelValues)
	m.PageHopsOf, m.RelayedHopsOf = ChildrenOf(m.PageHops.WithLabelValues), ChildrenOf(m.RelayedHops.WithLabelValues)
	m.PageBytesOf = ChildrenOf(m.PageBytes.WithLabelValues)
	m.FaultSecondsOf, m.RPCSecondsOf = ChildrenOf(m.FaultSeconds.WithLabelValues), ChildrenOf(m.RPCSeconds.WithLabelValues)
	return m
}

// Gateway is what the gateway counts.
type Gateway struct {
	Registry   *prometheus.Registry
	Requests   *prometheus.CounterVec   // by RPC and gRPC code
	RPCSeconds *prometheus.HistogramVec // by RPC
	Handovers  prometheus.Counter
	Sessions   prometheus.Gauge
	// Takeovers: sessions moved off a dead serving satellite (failover), by
	// what the gateway was doing: serving (a request), next (a handover), open
	// (a new session whose first satellite is dead).
	Takeovers *prometheus.CounterVec
	// Rebuilt: sessions this gateway did not know, rebuilt from their ticket
	// (another gateway registered them, or this one restarted).
	Rebuilt prometheus.Counter
}

// NewGateway registers the gateway metrics on a fresh registry.
func NewGateway() *Gateway {
	r := prometheus.NewRegistry()
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := &Gateway{
		Registry: r,
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "satpage_gateway_requests_total",
			Help: "Client requests by RPC and gRPC status code."}, []string{"rpc", "code"}),
		RPCSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "satpage_gateway_rpc_seconds",
			Help: "Client request latency by RPC.", Buckets: latencyBuckets}, []string{"rpc"}),
		Handovers: prometheus.NewCounter(prometheus.CounterOpts{Name: "satpage_handovers_total",
			Help: "Page-table handovers performed."}),
		Sessions: prometheus.NewGauge(prometheus.GaugeOpts{Name: "satpage_sessions",
			Help: "Sessions registered."}),
		Takeovers: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "satpage_takeovers_total",
			Help: "Sessions taken over by a live satellite behind their dead serving satellite, or handed to a stand-in of a dead next one."}, []string{"kind"}),
		Rebuilt: prometheus.NewCounter(prometheus.CounterOpts{Name: "satpage_sessions_rebuilt_total",
			Help: "Sessions this gateway did not know, rebuilt from the ticket their request carried."}),
	}
	r.MustRegister(m.Requests, m.RPCSeconds, m.Handovers, m.Sessions, m.Takeovers, m.Rebuilt)
	return m
}

// Handler serves a registry at /metrics, and with withPprof the Go profiler at
// /debug/pprof/ (off by default: the metrics port has no authentication, and a
// profile or trace exposes memory contents and costs CPU on demand).
func Handler(r *prometheus.Registry, withPprof bool) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(r, promhttp.HandlerOpts{Registry: r}))
	if !withPprof {
		return mux
	}
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}
