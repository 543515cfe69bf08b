package metrics

import "github.com/prometheus/client_golang/prometheus"

// Replication is what a satellite counts of the copies it sends to its
// replicas (docs/faults.md): the priced traffic (pages stored at a new owner
// and writes, one copy per replica over the in-plane ring) apart from the
// primary movements, and the snapshots that re-create lost copies.
type Replication struct {
	Pages     prometheus.Counter
	PageHops  prometheus.Counter
	Bytes     prometheus.Counter
	Snapshots prometheus.Counter
	Sessions  prometheus.Counter
}

// NewReplication registers the replication metrics on r.
func NewReplication(r *prometheus.Registry) *Replication {
	m := &Replication{
		Pages: prometheus.NewCounter(prometheus.CounterOpts{Name: "satpage_replication_pages_total",
			Help: "Page copies stored at replicas (one per replica per page moved, created or written)."}),
		PageHops: prometheus.NewCounter(prometheus.CounterOpts{Name: "satpage_replication_page_hops_total",
			Help: "ISL hops travelled by page copies to replicas."}),
		Bytes: prometheus.NewCounter(prometheus.CounterOpts{Name: "satpage_replication_bytes_hops_total",
			Help: "Page bytes x ISL hops of the copies to replicas (page_bytes per page)."}),
		Snapshots: prometheus.NewCounter(prometheus.CounterOpts{Name: "satpage_replica_snapshots_total",
			Help: "Full snapshots sent to replicas (a replica restarted empty or replaced a dead one)."}),
		Sessions: prometheus.NewCounter(prometheus.CounterOpts{Name: "satpage_replica_snapshot_sessions_total",
			Help: "Sessions carried by those snapshots."}),
	}
	r.MustRegister(m.Pages, m.PageHops, m.Bytes, m.Snapshots, m.Sessions)
	return m
}

// Copied counts pages stored at one replica hops ISL hops away.
func (m *Replication) Copied(pages int, hops uint32, pageBytes int) {
	m.Pages.Add(float64(pages))
	m.PageHops.Add(float64(pages) * float64(hops))
	m.Bytes.Add(float64(pages) * float64(hops) * float64(pageBytes))
}

// Snapshot counts one snapshot of sessions sessions.
func (m *Replication) Snapshot(sessions int) {
	m.Snapshots.Inc()
	m.Sessions.Add(float64(sessions))
}
