"""ISL routing for the simulation: the +Grid topology of DESIGN.md section 3, shortest
paths in hops, and one compiled walk along each path that yields hops, path length
(for the propagation delay) and the load on every ISL it crosses.

Routing tables are snapshots: one for the whole run when the topology is static
(no latitude cut-off), else one per ``routing_step_ns`` (cross-plane links switch
off and on with latitude). A transfer uses the snapshot at or before its time and
the satellite positions at the handover step at or before it; link lengths come
from those positions, so the delay follows the constellation as it moves.

Links are undirected and numbered ``lo * degree + j`` where ``lo`` is the lower
satellite index of the pair and ``j`` the column of the other end in ``neighbours[lo]``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numba
import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import shortest_path

from satpage.geometry import C_KM_S, SatelliteSet

__all__ = ["Topology", "topology_from_links", "Router", "route_walk", "propagation_ms",
           "isl_schedule"]

log = logging.getLogger(__name__)

@dataclass(frozen=True, eq=False)
class Topology:
    """ISL neighbours: ``neighbours`` int32 (n_sats, degree), -1 where there is no link;
    ``cross_plane`` bool (n_sats, degree) marks links to another plane."""

    neighbours: np.ndarray
    cross_plane: np.ndarray

    @property
    def n_sats(self) -> int:
        return self.neighbours.shape[0]

    @property
    def degree(self) -> int:
        return self.neighbours.shape[1]

    @property
    def n_link_ids(self) -> int:
        return self.n_sats * self.degree

    def link_exists(self) -> np.ndarray:
        """bool (n_sats * degree,): ids that name a real undirected link (lower end owns it)."""
        own = (self.neighbours > np.arange(self.n_sats)[:, None]) & (self.neighbours >= 0)
        return own.reshape(-1)


def topology_from_links(n_sats: int, endpoints: np.ndarray, cross_plane: np.ndarray
                        ) -> Topology:
    """Neighbour table of an undirected link list ``endpoints`` (m, 2)."""
    ends = np.asarray(endpoints, dtype=np.int64).reshape(-1, 2)
    both = np.concatenate([ends, ends[:, ::-1]])
    cr = np.concatenate([cross_plane, cross_plane]).astype(bool)
    order = np.lexsort((both[:, 1], both[:, 0]))
    both, cr = both[order], cr[order]
    deg = np.bincount(both[:, 0], minlength=n_sats)
    width = max(int(deg.max(initial=0)), 1)
    first = np.zeros(n_sats + 1, np.int64)
    np.cumsum(deg, out=first[1:])
    col = np.arange(both.shape[0]) - first[both[:, 0]]
    nb = np.full((n_sats, width), -1, np.int32)
    cross = np.zeros((n_sats, width), bool)
    nb[both[:, 0], col] = both[:, 1]
    cross[both[:, 0], col] = cr
    return Topology(nb, cross)


class Router:
    """Shortest-hop routing tables, one snapshot per routing step when links switch."""

    def __init__(self, sats: SatelliteSet, topology: Topology, latitude_cutoff_deg: float,
                 routing_step_ns: int) -> None:
        self.sats = sats
        self.topology = topology
        self.cutoff_deg = float(latitude_cutoff_deg)
        self.static = self.cutoff_deg >= 90.0
        self.routing_step_ns = int(routing_step_ns)
        self._cache: dict[int, np.ndarray] = {}

    def snapshot_index(self, t_ns: np.ndarray) -> np.ndarray:
        if self.static:
            return np.zeros(np.shape(t_ns), dtype=np.int64)
        return np.asarray(t_ns, dtype=np.int64) // self.routing_step_ns

    def predecessors(self, snaps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(pred int32 (n_snap, n, n), remap int64) where ``remap[i]`` is the row of
        ``pred`` for the i-th entry of ``snaps`` (unique snapshot ids)."""
        if self.static:
            return self._table(0)[None], np.zeros(np.shape(snaps), dtype=np.int64)
        uniq, remap = np.unique(snaps, return_inverse=True)
        tables = [self._table(int(s)) for s in uniq]
        return np.stack(tables) if tables else np.zeros((0, 0, 0), np.int32), remap

    def high_latitude(self, snaps: np.ndarray) -> np.ndarray:
        """bool (n_sats, len(snaps)): satellites above the cut-off at the start of each
        snapshot (|geocentric latitude| strictly greater; a failed propagation is not)."""
        pos = self.sats.positions_km(np.asarray(snaps, dtype=np.int64) * self.routing_step_ns)
        lat = np.degrees(np.arcsin(pos[..., 2] / np.linalg.norm(pos, axis=-1)))
        return np.abs(lat) > self.cutoff_deg

    def _table(self, snap: int) -> np.ndarray:
        if snap in self._cache:
            return self._cache[snap]
        nb = self.topology.neighbours
        up = nb >= 0
        if not self.static:
            high = self.high_latitude(np.array([snap], dtype=np.int64))[:, 0]
            down = self.topology.cross_plane & (high[:, None] | high[np.maximum(nb, 0)])
            up &= ~down
        rows = np.repeat(np.arange(nb.shape[0]), nb.shape[1])[up.reshape(-1)]
        cols = nb.reshape(-1)[up.reshape(-1)]
        graph = csr_matrix((np.ones(rows.size), (rows, cols)), shape=(nb.shape[0],) * 2)
        _, pred = shortest_path(graph, method="D", directed=False, unweighted=True,
                                return_predecessors=True)
        pred = pred.astype(np.int32)
        if len(self._cache) > 64:       # bounded: snapshots are visited in time order
            self._cache.pop(next(iter(self._cache)))
        self._cache[snap] = pred
        return pred


@numba.njit(cache=True, nogil=True)
def route_walk(src, dst, step_idx, table_idx, pred, pos, neighbours, weight, bin_idx,
               load, hops_out, dist_out):
    """Walk each path dst -> src along ``pred[table]``; write hops and path length (km),
    add ``weight[i]`` to ``load[bin_idx[i], link]`` for every link crossed.
    Unreachable pairs get hops -1 and length 0."""
    n = src.size
    for i in range(n):
        a = src[i]
        b = dst[i]
        h = 0
        d = 0.0
        tbl = table_idx[i]
        ti = step_idx[i]
        cur = b
        ok = True
        while cur != a:
            prev = pred[tbl, a, cur]
            if prev < 0:
                ok = False
                break
            dx = pos[prev, ti, 0] - pos[cur, ti, 0]
            dy = pos[prev, ti, 1] - pos[cur, ti, 1]
            dz = pos[prev, ti, 2] - pos[cur, ti, 2]
            d += np.sqrt(dx * dx + dy * dy + dz * dz)
            h += 1
            lo = min(prev, cur)
            hi = max(prev, cur)
            for j in range(neighbours.shape[1]):
                if neighbours[lo, j] == hi:
                    load[bin_idx[i], lo * neighbours.shape[1] + j] += weight[i]
                    break
            cur = prev
        if ok:
            hops_out[i] = h
            dist_out[i] = d
        else:
            hops_out[i] = -1
            dist_out[i] = 0.0


def propagation_ms(distance_km: np.ndarray) -> np.ndarray:
    return np.asarray(distance_km) / C_KM_S * 1e3


def isl_schedule(router: Router, constellation: str, duration_ns: int,
                 chunk_snapshots: int = 256) -> dict:
    """The router's latitude cut-off as the Go daemons read it (``--isl-schedule``,
    format satpage-isl-schedule/1 in services/README.md): for every routing snapshot
    that covers [0, duration_ns], the satellites above the cut-off, as [sat, k0, k1)
    runs of snapshots. The same ``high_latitude`` the engine's snapshots use, so the
    relays route on exactly the engine's graphs."""
    if router.static:
        raise ValueError("no latitude cut-off (90 deg or more): the +Grid is time-invariant")
    k = int(duration_ns) // router.routing_step_ns + 1
    high = np.concatenate([router.high_latitude(np.arange(a, min(k, a + chunk_snapshots)))
                           for a in range(0, k, chunk_snapshots)], axis=1)
    edges = np.diff(np.pad(high.astype(np.int8), ((0, 0), (1, 1))), axis=1)
    starts, ends = np.argwhere(edges == 1), np.argwhere(edges == -1)  # both row-major: paired
    runs = np.column_stack([starts[:, 0], starts[:, 1], ends[:, 1]])
    return {"format": "satpage-isl-schedule/1", "constellation": constellation,
            "latitude_cutoff_deg": router.cutoff_deg, "step_ns": router.routing_step_ns,
            "snapshots": k, "high": runs.tolist()}
