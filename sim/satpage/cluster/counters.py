"""The replication traffic a local cluster's relays counted (docs/faults.md).

Every satnode with ``--replicas`` > 1 counts the copies it sends to its replicas in
Prometheus counters (services/internal/metrics/replication.go): pages stored at a
replica, the ISL hops the Replicate request travelled (counted hop by hop by the
relays and returned by the replica) times the pages, and that times the page size.
The snapshots that re-create a lost copy are counted apart. This module reads them
from every satnode's ``/metrics`` and sums them; a replay's share is the difference
of two readings taken around it (one strategy at a time on an otherwise idle
cluster: the replicas' upkeep pings every second copy no page, so they do not count).
"""

from __future__ import annotations

import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from satpage.cluster.local import ClusterState

__all__ = ["ReplicationCounters", "metrics_addr", "read_replication", "scrape"]

#: satnode metric -> ReplicationCounters field
_METRICS = {
    "satpage_replication_pages_total": "copies",
    "satpage_replication_page_hops_total": "page_hops",
    "satpage_replication_bytes_hops_total": "byte_hops",
    "satpage_replica_snapshots_total": "snapshots",
}


@dataclass(frozen=True)
class ReplicationCounters:
    """Sums over the satellites of a cluster: page copies to replicas, their page-hops
    and byte-hops (the engine's ``replication_copies``, ``replication_page_hops`` and
    ``replication_bytes``), and the whole snapshots sent (not priced by the engine)."""

    copies: int = 0
    page_hops: int = 0
    byte_hops: int = 0
    snapshots: int = 0

    def __sub__(self, other: ReplicationCounters) -> ReplicationCounters:
        return ReplicationCounters(self.copies - other.copies, self.page_hops - other.page_hops,
                                   self.byte_hops - other.byte_hops,
                                   self.snapshots - other.snapshots)

    def as_dict(self) -> dict[str, int]:
        return {"replication_copies": self.copies, "replication_page_hops": self.page_hops,
                "replication_bytes": self.byte_hops, "replica_snapshots": self.snapshots}


def metrics_addr(state: ClusterState, i: int) -> str:
    """Satellite i's metrics endpoint (local.py's port layout: base + 2 + T + i)."""
    return f"127.0.0.1:{state.port_base + 2 + state.satellites + i}"


def scrape(addr: str, names, timeout_s: float = 10.0) -> dict[str, float]:
    """The values of the unlabelled counters ``names`` at http://addr/metrics (0 when absent)."""
    with urllib.request.urlopen(f"http://{addr}/metrics", timeout=timeout_s) as r:  # noqa: S310 - loopback
        text = r.read().decode()
    out = dict.fromkeys(names, 0.0)
    for line in text.splitlines():
        if not line or line[0] == "#":
            continue
        name, _, value = line.partition(" ")
        if name in out:
            out[name] = float(value)
    return out


def read_replication(state: ClusterState) -> ReplicationCounters:
    """The replication counters of every satnode of the local cluster, summed."""
    addrs = [metrics_addr(state, i) for i in range(state.satellites)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        got = list(pool.map(lambda a: scrape(a, _METRICS), addrs))
    sums = {field: 0 for field in _METRICS.values()}
    for g in got:
        for name, field in _METRICS.items():
            sums[field] += int(round(g[name]))
    return ReplicationCounters(**sums)
