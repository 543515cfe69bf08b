"""The +Grid inter-satellite-link topology, hop counts and path delays.

Rules (docs/orbit-model.md states them for the Go daemon, which must agree
through ``isl_test_vectors``):

- In-plane: satellite (p, k) links to (p, (k+1) mod S) (ring; a plane of 2 has
  one link, of 1 none).
- Cross-plane: (p, k) links to (p+1, k) for p = 0 .. P-2. Walker delta with
  P >= 3 also links across the wrap, (P-1, k) to (0, (k+F) mod S): plane P
  would be plane 0 with every mean anomaly advanced by 360 F / T = one slot per
  F, so this keeps the same relative phase as every other cross link. Walker
  star: no link across the seam between plane P-1 and plane 0.
- TLE shells: planes in RAAN order, slots in argument-of-latitude order; the
  cross link goes from each satellite to the satellite of the next plane with
  the nearest argument of latitude at the epoch (undirected, duplicates merged);
  the wrap exists when the shell's RAAN gaps are delta-like (``Shell.wraps``).
- No links between shells.
- Latitude cut-off: a cross-plane link is down at time t when either end's
  geocentric latitude |asin(z / |r|)| exceeds the cut-off (strictly greater).

Routes: the hop count is the fewest ISL hops at time t; the delay is that of the
fastest among the fewest-hop paths: sum of link length / c over the links plus
``per_hop_processing_ms`` per hop. Time t is rounded to the network's
``resolution_ns`` (the topology and link lengths are evaluated there).
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass
from functools import cached_property
from os import PathLike

import numba
import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import shortest_path

from orbit_model.constants import SPEED_OF_LIGHT_KM_S
from orbit_model.constellation import Constellation
from orbit_model.propagate import teme_positions_km
from orbit_model.timebase import NS_PER_S

__all__ = ["IslLinks", "IslNetwork", "Routes", "RoutingTable", "RoutingSnapshots", "RouteWalk",
           "RoutingStack", "route_links", "disjoint_route", "ISL_SCHEDULE_FORMAT", "grid_links", "isl_test_vectors", "write_isl_test_vectors"]

log = logging.getLogger(__name__)



@dataclass(frozen=True)
class IslLinks:
    """The static +Grid link list: ``endpoints`` (m, 2) int32 with a < b, sorted;
    ``cross_plane`` (m,) bool (the links a latitude cut-off can take down)."""

    endpoints: np.ndarray
    cross_plane: np.ndarray

    @property
    def n_links(self) -> int:
        return int(self.endpoints.shape[0])


@dataclass(frozen=True)
class Routes:
    """Answers to (src, dst, t) queries: ``hops`` int32 (-1 when unreachable),
    ``delay_ms`` float64 (inf when unreachable)."""

    hops: np.ndarray
    delay_ms: np.ndarray


def _walker_links(first: int, planes: int, per_plane: int, phasing: int, wraps: bool):
    def idx(p, k):
        return first + p * per_plane + k

    pairs, cross = [], []
    plane = np.repeat(np.arange(planes), per_plane)
    slot = np.tile(np.arange(per_plane), planes)
    if per_plane >= 2:
        pairs.append(np.stack([idx(plane, slot), idx(plane, (slot + 1) % per_plane)], axis=1))
        cross.append(np.zeros(planes * per_plane, bool))
    if planes >= 2:
        k = np.arange(per_plane)
        for p in range(planes - 1):
            pairs.append(np.stack([idx(p, k), idx(p + 1, k)], axis=1))
            cross.append(np.ones(per_plane, bool))
        if wraps:
            pairs.append(np.stack([idx(planes - 1, k), idx(0, (k + phasing) % per_plane)], axis=1))
            cross.append(np.ones(per_plane, bool))
    return pairs, cross


def _tle_links(constellation: Constellation, shell_id: int, wraps: bool):
    members = np.flatnonzero(constellation.shell == shell_id)
    planes = [members[constellation.plane[members] == p] for p in range(constellation.plane[members].max() + 1)]
    planes = [p[np.argsort(constellation.slot[p])] for p in planes]
    pairs, cross = [], []
    for sats in planes:
        if sats.size >= 2:
            pairs.append(np.stack([sats, np.roll(sats, -1)], axis=1))
            cross.append(np.zeros(sats.size, bool))
    n_planes = len(planes)
    for p in range(n_planes if wraps else n_planes - 1):
        here, there = planes[p], planes[(p + 1) % n_planes]
        if here.size == 0 or there.size == 0:
            continue
        u_here = constellation.arg_latitude_deg[here][:, None]
        u_there = constellation.arg_latitude_deg[there][None, :]
        diff = np.abs((u_here - u_there + 180.0) % 360.0 - 180.0)
        nearest = there[np.argmin(diff, axis=1)]
        pairs.append(np.stack([here, nearest], axis=1))
        cross.append(np.ones(here.size, bool))
    return pairs, cross


def grid_links(constellation: Constellation) -> IslLinks:
    """The +Grid links of every shell (module docstring has the rules)."""
    pairs, cross = [], []
    for shell_id, shell in enumerate(constellation.shells):
        if shell.kind == "tle":
            p, c = _tle_links(constellation, shell_id, shell.wraps)
        else:
            p, c = _walker_links(shell.first_index, shell.n_planes, shell.sats_per_plane,
                                 shell.phasing, shell.wraps)
        pairs += p
        cross += c
    if not pairs:
        return IslLinks(np.zeros((0, 2), np.int32), np.zeros(0, bool))
    endpoints = np.sort(np.concatenate(pairs), axis=1).astype(np.int32)
    is_cross = np.concatenate(cross)
    keep = endpoints[:, 0] != endpoints[:, 1]
    endpoints, is_cross = endpoints[keep], is_cross[keep]
    # merge duplicates (a ring of 2, a TLE nearest-neighbour chosen from both sides)
    key = endpoints[:, 0].astype(np.int64) * constellation.n_satellites + endpoints[:, 1]
    _, first = np.unique(key, return_index=True)
    endpoints, is_cross = endpoints[first], is_cross[first]
    return IslLinks(endpoints=endpoints, cross_plane=is_cross)


@numba.njit(cache=True)
def _link_state(position, endpoints, cross_plane, cutoff_deg, active, delay_ms):
    """Which links are up and their light time (ms) at each time; NaN positions take links down."""
    n_sats, n_t = position.shape[0], position.shape[1]
    sin_cut = np.sin(np.radians(cutoff_deg)) if cutoff_deg >= 0 else 2.0
    high = np.zeros((n_t, n_sats), np.bool_)
    for i in range(n_sats):
        for j in range(n_t):
            x, y, z = position[i, j, 0], position[i, j, 1], position[i, j, 2]
            # |geocentric latitude| > cut-off  <=>  |z| / |r| > sin(cut-off)
            high[j, i] = abs(z) > sin_cut * np.sqrt(x * x + y * y + z * z)
    for e in range(endpoints.shape[0]):
        a, b = endpoints[e, 0], endpoints[e, 1]
        for j in range(n_t):
            dx = position[a, j, 0] - position[b, j, 0]
            dy = position[a, j, 1] - position[b, j, 1]
            dz = position[a, j, 2] - position[b, j, 2]
            dist = np.sqrt(dx * dx + dy * dy + dz * dz)
            up = np.isfinite(dist) and not (cross_plane[e] and (high[j, a] or high[j, b]))
            active[j, e] = up
            delay_ms[j, e] = dist / SPEED_OF_LIGHT_KM_S * 1e3 if up else np.inf


@numba.njit(cache=True)
def _bfs_delay(indptr, nbr, edge, active, edge_delay_ms, src, hops, delay, queue):
    """Fewest-hop BFS from ``src``; delay = fastest of the fewest-hop paths.

    A node's delay is final when it leaves the queue: every node one hop
    nearer the source left the queue before it.
    """
    hops[:] = -1
    delay[:] = np.inf
    hops[src] = 0
    delay[src] = 0.0
    queue[0] = src
    head, tail = 0, 1
    while head < tail:
        u = queue[head]
        head += 1
        for j in range(indptr[u], indptr[u + 1]):
            e = edge[j]
            if not active[e]:
                continue
            v = nbr[j]
            d = delay[u] + edge_delay_ms[e]
            if hops[v] == -1:
                hops[v] = hops[u] + 1
                delay[v] = d
                queue[tail] = v
                tail += 1
            elif hops[v] == hops[u] + 1 and d < delay[v]:
                delay[v] = d


@numba.njit(cache=True)
def _answer(indptr, nbr, edge, active, edge_delay_ms, q_bin, q_src, q_dst, q_out, n_nodes,
            out_hops, out_delay):
    """Queries sorted by (bin, src): one BFS per distinct (bin, src)."""
    hops = np.empty(n_nodes, np.int32)
    delay = np.empty(n_nodes, np.float64)
    queue = np.empty(n_nodes, np.int32)
    last_bin, last_src = -1, -1
    for i in range(q_src.size):
        b, s = q_bin[i], q_src[i]
        if b != last_bin or s != last_src:
            _bfs_delay(indptr, nbr, edge, active[b], edge_delay_ms[b], s, hops, delay, queue)
            last_bin, last_src = b, s
        out_hops[q_out[i]] = hops[q_dst[i]]
        out_delay[q_out[i]] = delay[q_dst[i]]


@numba.njit(cache=True)
def _answer_static(indptr, nbr, edge, edge_delay_ms, hop_rows, q_bin, q_src, q_dst, q_out,
                   n_nodes, out_hops, out_delay):
    """Static topology: walk only the fewest-hop DAG from src to dst.

    ``hop_rows[d, v]`` is the fewest hops between v and d (symmetric); a
    neighbour v of u is on a fewest-hop path iff it is one hop nearer d. The
    DAG of a +Grid pair is at most the (planes x slots) rectangle between them,
    so a query costs microseconds instead of a full BFS.
    """
    delay = np.full(n_nodes, np.inf)
    layer = np.empty(n_nodes, np.int32)
    nxt = np.empty(n_nodes, np.int32)
    for i in range(q_src.size):
        s, d, b = q_src[i], q_dst[i], q_bin[i]
        h = hop_rows[d, s]
        out_hops[q_out[i]] = h
        if h < 0:
            out_delay[q_out[i]] = np.inf
            continue
        delay[s] = 0.0
        layer[0] = s
        n_layer = 1
        for step in range(h):
            want = h - step - 1
            n_next = 0
            for li in range(n_layer):
                u = layer[li]
                for j in range(indptr[u], indptr[u + 1]):
                    v = nbr[j]
                    if hop_rows[d, v] != want:
                        continue
                    cand = delay[u] + edge_delay_ms[b, edge[j]]
                    if delay[v] == np.inf:
                        nxt[n_next] = v
                        n_next += 1
                        delay[v] = cand
                    elif cand < delay[v]:
                        delay[v] = cand
            for li in range(n_layer):
                delay[layer[li]] = np.inf  # reset as we go: earlier layers are done
            for li in range(n_next):
                layer[li] = nxt[li]
            n_layer = n_next
        out_delay[q_out[i]] = delay[d]
        for li in range(n_layer):
            delay[layer[li]] = np.inf


@numba.njit(cache=True)
def _routing_rows(indptr, nbr, edge, active, edge_delay_ms, sources, hops_out, pred_out,
                  link_out):
    """One BFS per source; then each node's predecessor on the route: the lowest-index
    neighbour one hop nearer on a fastest fewest-hop path (neighbours are sorted)."""
    n = indptr.size - 1
    hops = np.empty(n, np.int32)
    delay = np.empty(n, np.float64)
    queue = np.empty(n, np.int32)
    for r in range(sources.size):
        s = sources[r]
        _bfs_delay(indptr, nbr, edge, active, edge_delay_ms, s, hops, delay, queue)
        for v in range(n):
            hops_out[r, v] = hops[v]
            pred_out[r, v] = -1
            link_out[r, v] = -1
            if v == s or hops[v] < 0:
                continue
            for j in range(indptr[v], indptr[v + 1]):
                e = edge[j]
                u = nbr[j]
                if active[e] and hops[u] == hops[v] - 1 and \
                        abs(delay[u] + edge_delay_ms[e] - delay[v]) <= 1e-9:
                    pred_out[r, v] = u
                    link_out[r, v] = e
                    break


@dataclass(frozen=True)
class RoutingTable:
    """Routes of one instant from each of ``sources`` to every satellite.

    ``hops`` int32 (n_sources, n_sats): fewest ISL hops (-1 unreachable);
    ``pred`` int32: the satellite before ``v`` on the route from ``sources[r]`` (-1 at
    the source and when unreachable); ``link``: the link id (row of
    ``IslLinks.endpoints``) of that last hop, so a route is walked back from its
    destination, link by link.
    """

    t_ns: int
    sources: np.ndarray
    hops: np.ndarray
    pred: np.ndarray
    link: np.ndarray


class IslNetwork:
    """+Grid ISLs of a constellation over time, answering hop and delay queries in batches.

    ``latitude_cutoff_deg``: cross-plane links are down while either end is
    above this |geocentric latitude| (None: always up). ``resolution_ns``:
    query times are rounded to multiples of it (default 10 s) and the topology
    and link lengths evaluated there.
    """

    def __init__(self, constellation: Constellation, latitude_cutoff_deg: float | None = None,
                 per_hop_processing_ms: float = 0.0, resolution_ns: int = 10 * NS_PER_S,
                 bins_per_chunk: int = 256):
        if latitude_cutoff_deg is not None and not 0.0 <= latitude_cutoff_deg <= 90.0:
            raise ValueError(f"latitude cut-off {latitude_cutoff_deg} deg is outside 0-90 deg")
        if per_hop_processing_ms < 0:
            raise ValueError(f"per-hop processing time {per_hop_processing_ms} ms is negative")
        if resolution_ns < 1:
            raise ValueError(f"resolution {resolution_ns} ns must be positive")
        self.constellation = constellation
        self.latitude_cutoff_deg = latitude_cutoff_deg
        self.per_hop_processing_ms = float(per_hop_processing_ms)
        self.resolution_ns = int(resolution_ns)
        self.bins_per_chunk = int(bins_per_chunk)
        self.links = grid_links(constellation)

    # ------------------------------------------------------------ structure
    @cached_property
    def _csr(self):
        n = self.constellation.n_satellites
        a, b = self.links.endpoints[:, 0], self.links.endpoints[:, 1]
        src = np.concatenate([a, b])
        dst = np.concatenate([b, a])
        eid = np.concatenate([np.arange(a.size), np.arange(a.size)]).astype(np.int32)
        order = np.lexsort((dst, src))
        indptr = np.zeros(n + 1, np.int64)
        np.cumsum(np.bincount(src, minlength=n), out=indptr[1:])
        return indptr, dst[order].astype(np.int32), eid[order]

    def _state(self, t_ns: np.ndarray):
        """Active mask (n_times, m) and link propagation delay in ms (n_times, m) at ``t_ns``
        (SGP4 at each time, no interpolation: a topology does not depend on which other
        times are asked for)."""
        position = teme_positions_km(self.constellation, t_ns, knot_ns=None)
        cutoff = -1.0 if self.latitude_cutoff_deg is None else float(self.latitude_cutoff_deg)
        m = self.links.n_links
        active = np.empty((t_ns.size, m), np.bool_)
        delay = np.empty((t_ns.size, m))
        _link_state(position, self.links.endpoints, self.links.cross_plane, cutoff, active, delay)
        return active, delay

    def active_links(self, t_ns: int) -> np.ndarray:
        """(m,) bool: which links of ``self.links`` are up at ``t_ns`` (rounded to the resolution)."""
        active, _ = self._state(np.array([self._round(t_ns)]))
        return active[0]

    def neighbours(self, t_ns: int) -> list[np.ndarray]:
        """Each satellite's linked neighbours at ``t_ns``, sorted ascending."""
        active = self.active_links(t_ns)
        n = self.constellation.n_satellites
        ends = self.links.endpoints[active]
        both = np.concatenate([ends, ends[:, ::-1]])
        both = both[np.lexsort((both[:, 1], both[:, 0]))]
        split = np.searchsorted(both[:, 0], np.arange(n + 1))
        return [both[split[i]:split[i + 1], 1].copy() for i in range(n)]

    def hop_matrix(self, t_ns: int = 0) -> np.ndarray:
        """All-pairs fewest hops at ``t_ns``: (n, n) int32, -1 where unreachable."""
        n = self.constellation.n_satellites
        ends = self.links.endpoints[self.active_links(t_ns)]
        graph = csr_matrix((np.ones(len(ends)), (ends[:, 0], ends[:, 1])), shape=(n, n))
        dist = shortest_path(graph, directed=False, unweighted=True)
        return np.where(np.isfinite(dist), dist, -1).astype(np.int32)

    @cached_property
    def _static_hops(self) -> np.ndarray:
        """Without a cut-off the topology never changes: one all-pairs matrix serves every time."""
        hops = self.hop_matrix(0)
        return hops.astype(np.int16) if hops.max(initial=0) < 32767 else hops

    # --------------------------------------------------------------- queries
    def _round(self, t_ns):
        t_ns = np.asarray(t_ns, dtype=np.int64)
        res = self.resolution_ns
        return (np.floor_divide(t_ns + res // 2, res)) * res

    def _check(self, src, dst, t_ns):
        src, dst, t_ns = np.broadcast_arrays(np.asarray(src), np.asarray(dst), np.asarray(t_ns))
        n = self.constellation.n_satellites
        for name, value in (("source", src), ("destination", dst)):
            if value.dtype.kind not in "iu":
                raise ValueError(f"{name} satellite indices must be integers, got {value.dtype}")
            if value.size and (value.min() < 0 or value.max() >= n):
                bad = value[(value < 0) | (value >= n)][0]
                raise ValueError(f"{name} satellite {bad} is outside 0..{n - 1}")
        if t_ns.dtype.kind not in "iu":
            raise ValueError(f"times must be integer nanoseconds, got dtype {t_ns.dtype}")
        return src.astype(np.int32), dst.astype(np.int32), t_ns.astype(np.int64)

    def path(self, src: int, dst: int, t_ns: int) -> np.ndarray:
        """The satellites along the route of ``route(src, dst, t)`` (the fastest fewest-hop
        path), src first and dst last; empty when unreachable. Ties: lowest index."""
        src_a, dst_a, t_a = self._check(src, dst, t_ns)
        s, d = int(src_a.ravel()[0]), int(dst_a.ravel()[0])
        table = self.routing_table(int(self._round(t_a.ravel()[0])), sources=np.array([s]))
        if table.hops[0, d] < 0:
            return np.zeros(0, np.int32)
        path = [d]
        while path[-1] != s:
            path.append(int(table.pred[0, path[-1]]))
        return np.array(path[::-1], np.int32)

    def routing_table(self, t_ns: int, sources=None) -> RoutingTable:
        """Routes from ``sources`` (default: every satellite) to every satellite at exactly
        ``t_ns`` (not rounded): fewest hops, and of those the fastest path; among equally
        fast ones the predecessor with the lowest index (``path`` walks these)."""
        n = self.constellation.n_satellites
        src = np.arange(n, dtype=np.int32) if sources is None else \
            np.asarray(sources, dtype=np.int32).reshape(-1)
        active, delay = self._state(np.array([int(t_ns)], dtype=np.int64))
        indptr, nbr, edge = self._csr
        hops = np.empty((src.size, n), np.int32)
        pred = np.empty((src.size, n), np.int32)
        link = np.empty((src.size, n), np.int32)
        _routing_rows(indptr, nbr, edge, active[0], delay[0], src, hops, pred, link)
        return RoutingTable(t_ns=int(t_ns), sources=src, hops=hops, pred=pred, link=link)

    def hops(self, src, dst, t_ns) -> np.ndarray:
        """Fewest ISL hops for each (src, dst, t) (broadcast); -1 when unreachable."""
        src, dst, t_ns = self._check(src, dst, t_ns)
        if self.latitude_cutoff_deg is None:
            return self._static_hops[src, dst].astype(np.int32)
        return self.route(src, dst, t_ns).hops

    def route(self, src, dst, t_ns) -> Routes:
        """Hops and delay for each (src, dst, t) (broadcast to one shape).

        Without a cut-off the topology is static: one all-pairs hop matrix
        (computed once) and a walk over each pair's fewest-hop DAG (~µs per
        query). With a cut-off: one BFS per distinct (rounded time, source).
        Times are evaluated in chunks of ``bins_per_chunk`` distinct rounded
        times for bounded memory.
        """
        src, dst, t_ns = self._check(src, dst, t_ns)
        shape = src.shape
        src, dst, t_ns = src.ravel(), dst.ravel(), t_ns.ravel()
        out_hops = np.full(src.size, -1, np.int32)
        out_delay = np.full(src.size, np.inf)
        if src.size == 0:
            return Routes(out_hops.reshape(shape), out_delay.reshape(shape))
        bins, inverse = np.unique(self._round(t_ns), return_inverse=True)
        indptr, nbr, edge = self._csr
        order = np.lexsort((src, inverse))
        starts = np.searchsorted(inverse[order], np.append(np.arange(0, bins.size, self.bins_per_chunk), bins.size))
        for c, lo in enumerate(range(0, bins.size, self.bins_per_chunk)):
            chunk_bins = bins[lo:lo + self.bins_per_chunk]
            active, delay = self._state(chunk_bins)
            q = order[starts[c]:starts[c + 1]]
            if self.latitude_cutoff_deg is None:
                _answer_static(indptr, nbr, edge, delay, self._static_hops,
                               (inverse[q] - lo).astype(np.int64), src[q], dst[q],
                               q.astype(np.int64), self.constellation.n_satellites,
                               out_hops, out_delay)
                continue
            _answer(indptr, nbr, edge, active, delay, (inverse[q] - lo).astype(np.int64),
                    src[q], dst[q], q.astype(np.int64), self.constellation.n_satellites,
                    out_hops, out_delay)
        out_delay = np.where(out_hops >= 0, out_delay + out_hops * self.per_hop_processing_ms, np.inf)
        return Routes(out_hops.reshape(shape), out_delay.reshape(shape))


# ------------------------------------------------------------ routing snapshots
ISL_SCHEDULE_FORMAT = "satpage-isl-schedule/1"


@dataclass(frozen=True)
class RouteWalk:
    """Routes walked link by link, one per query.

    ``hops`` int32 (q,): -1 when unreachable; ``length_km`` float64 (q,): the path's
    length at the query's position step (0 when unreachable); query ``i`` crossed
    links ``links[offsets[i]:offsets[i + 1]]`` (ids into ``IslLinks.endpoints``),
    from its destination back to its source.
    """

    hops: np.ndarray
    length_km: np.ndarray
    offsets: np.ndarray
    links: np.ndarray


@dataclass(frozen=True)
class RoutingStack:
    """Routing tables of several snapshots stacked for compiled code: ``hops``,
    ``pred``, ``link`` int32 (n_tables, n_sats, n_sats) (``RoutingTable`` of every
    source), the link list ``endpoints`` (m, 2) and the adjacency in CSR form
    (``indptr``, ``nbr``, ``edge``: neighbours of each satellite, ascending, with the
    link id of each). A link a-b is up in table k iff ``hops[k, a, b] == 1``."""

    hops: np.ndarray
    pred: np.ndarray
    link: np.ndarray
    endpoints: np.ndarray
    indptr: np.ndarray
    nbr: np.ndarray
    edge: np.ndarray


@numba.njit(cache=True, nogil=True)
def route_links(pred, link, endpoints, tb, src, dst, position, step, ids, nodes):
    """Walk the route ``src -> dst`` of table ``tb`` back from ``dst``: the link ids into
    ``ids[:h]``, the satellites (``dst`` first) into ``nodes[:h + 1]``; returns
    (h, length km at ``position[:, step]``), h = -1 when unreachable. Compiled code
    (a cost model's event loop) calls this; Python calls ``RoutingSnapshots.walk``."""
    h = 0
    d = 0.0
    cur = dst
    nodes[0] = dst
    while cur != src:
        prev = pred[tb, src, cur]
        if prev < 0:
            return -1, 0.0
        e = link[tb, src, cur]
        a, b = endpoints[e, 0], endpoints[e, 1]
        dx = position[a, step, 0] - position[b, step, 0]
        dy = position[a, step, 1] - position[b, step, 1]
        dz = position[a, step, 2] - position[b, step, 2]
        d += np.sqrt(dx * dx + dy * dy + dz * dz)
        ids[h] = e
        h += 1
        nodes[h] = prev
        cur = prev
    return h, d


@numba.njit(cache=True, nogil=True)
def disjoint_route(hops, indptr, nbr, edge, tb, src, dst, position, step, avoid, n_avoid, ids,
                   parent, seen, stamp, queue):
    """A fewest-hop path ``dst -> src`` over the links up in table ``tb`` that avoids the
    link ids ``avoid[:n_avoid]`` (a second, link-disjoint path): breadth-first from
    ``dst``, neighbours in ascending order. Link ids into ``ids``; returns (h, length
    km at ``position[:, step]``), h = -1 when there is none. ``seen`` entries equal to
    ``stamp`` mark visited satellites (pass a new stamp per call: no reset needed)."""
    head = 0
    tail = 0
    queue[tail] = dst
    tail += 1
    seen[dst] = stamp
    parent[dst] = -1
    found = False
    while head < tail:
        u = queue[head]
        head += 1
        if u == src:
            found = True
            break
        for j in range(indptr[u], indptr[u + 1]):
            w = nbr[j]
            if seen[w] == stamp or hops[tb, u, w] != 1:      # visited, or link down
                continue
            e = edge[j]
            blocked = False
            for k in range(n_avoid):
                if avoid[k] == e:
                    blocked = True
                    break
            if blocked:
                continue
            seen[w] = stamp
            parent[w] = u
            queue[tail] = w
            tail += 1
    if not found:
        return -1, 0.0
    h = 0
    d = 0.0
    cur = src
    while cur != dst:
        nxt = parent[cur]
        dx = position[nxt, step, 0] - position[cur, step, 0]
        dy = position[nxt, step, 1] - position[cur, step, 1]
        dz = position[nxt, step, 2] - position[cur, step, 2]
        d += np.sqrt(dx * dx + dy * dy + dz * dz)
        for j in range(indptr[cur], indptr[cur + 1]):
            if nbr[j] == nxt:
                ids[h] = edge[j]
                break
        h += 1
        cur = nxt
    return h, d


@numba.njit(cache=True)
def _walk(pred, link, endpoints, table, row, dst, position, step, offsets, length, links):
    ids = np.empty(pred.shape[1] + 1, np.int64)
    nodes = np.empty(pred.shape[1] + 2, np.int64)
    for i in range(dst.size):
        if offsets[i + 1] == offsets[i]:
            continue
        h, d = route_links(pred, link, endpoints, table[i], row[i], dst[i], position, step[i],
                           ids, nodes)
        for k in range(h):
            links[offsets[i] + k] = ids[k]
        length[i] = d


class RoutingSnapshots:
    """The routes of an ``IslNetwork`` over time, as routing snapshots.

    Snapshot ``k`` covers times ``[k * step_ns, (k + 1) * step_ns)`` and is evaluated
    at ``k * step_ns`` (``IslNetwork.routing_table``); without a latitude cut-off the
    +Grid never changes and snapshot 0 serves all time. This is the convention of the
    ISL schedule file the Go relays read (``isl_schedule``, format
    satpage-isl-schedule/1 in services/README.md), so the in-process engine and a
    deployed cluster route on the same graphs. At snapshot times ``hops`` equals
    ``IslNetwork.hops``. Tables are cached (``max_cached``, oldest out first:
    callers visit snapshots in time order).
    """

    def __init__(self, network: IslNetwork, step_ns: int, max_cached: int = 64):
        if step_ns < 1:
            raise ValueError(f"routing step {step_ns} ns must be positive")
        self.network = network
        self.step_ns = int(step_ns)
        self.max_cached = int(max_cached)
        self._cache: dict[int, RoutingTable] = {}
        self._last_stack: tuple[tuple[int, ...], RoutingStack] | None = None

    @property
    def links(self) -> IslLinks:
        return self.network.links

    @property
    def n_link_ids(self) -> int:
        return self.network.links.n_links

    @property
    def static(self) -> bool:
        return self.network.latitude_cutoff_deg is None

    def link_exists(self) -> np.ndarray:
        """bool (n_link_ids,): every id names a link (kept for per-link summaries)."""
        return np.ones(self.n_link_ids, dtype=bool)

    def snapshot_index(self, t_ns) -> np.ndarray:
        t_ns = np.asarray(t_ns, dtype=np.int64)
        if self.static:
            return np.zeros(t_ns.shape, dtype=np.int64)
        return np.floor_divide(t_ns, self.step_ns)

    def table(self, snapshot: int) -> RoutingTable:
        snapshot = int(snapshot)
        if snapshot not in self._cache:
            if len(self._cache) >= self.max_cached:
                self._cache.pop(next(iter(self._cache)))
            self._cache[snapshot] = self.network.routing_table(snapshot * self.step_ns)
        return self._cache[snapshot]

    def stack(self, t_ns) -> tuple[np.ndarray, RoutingStack]:
        """(table index int64 per time, the stacked tables of the snapshots named) for
        compiled code that walks routes itself (``route_links``, ``disjoint_route``)."""
        t_ns = np.asarray(t_ns, dtype=np.int64).reshape(-1)
        if self.static:
            # one table for every time: no sort of millions of zeros (2 of compare's 10 s)
            uniq = np.zeros(min(t_ns.size, 1), dtype=np.int64)
            table = np.zeros(t_ns.size, dtype=np.int64)
        else:
            uniq, table = np.unique(self.snapshot_index(t_ns), return_inverse=True)
        return table.astype(np.int64), self._stacked(tuple(int(k) for k in uniq))

    def _stacked(self, snapshots: tuple[int, ...]) -> RoutingStack:
        """The RoutingStack of ``snapshots``; the last one is kept (every strategy of a chunk
        asks for the same snapshots), and one table is a view, not a copy (copying the three
        n x n tables of 4,408 satellites per call was a third of compare's CPU time)."""
        last = self._last_stack
        if last is not None and last[0] == snapshots:
            return last[1]
        self._last_stack = None          # not two stacks alive at once
        n = self.network.constellation.n_satellites
        tables = [self.table(k) for k in snapshots]

        def stacked(name):
            if not tables:
                return np.zeros((0, n, n), np.int32)
            if len(tables) == 1:
                return getattr(tables[0], name)[np.newaxis]
            return np.stack([getattr(tb, name) for tb in tables])

        indptr, nbr, edge = self.network._csr
        st = RoutingStack(hops=stacked("hops"), pred=stacked("pred"), link=stacked("link"),
                          endpoints=self.links.endpoints, indptr=indptr, nbr=nbr, edge=edge)
        self._last_stack = (snapshots, st)
        return st

    def walk(self, src, dst, t_ns, position_km: np.ndarray | None = None,
             step=None) -> RouteWalk:
        """Walk the route ``src -> dst`` of the snapshot of each ``t_ns``. With
        ``position_km`` (n_sats, n_steps, 3, any frame) and ``step`` (index into its time
        axis, per query) the path length is summed from those positions."""
        src = np.asarray(src, dtype=np.int64).reshape(-1)
        dst = np.asarray(dst, dtype=np.int64).reshape(-1)
        table, st = self.stack(np.asarray(t_ns, dtype=np.int64).reshape(-1))
        hops = st.hops[table, src, dst] if src.size else np.zeros(0, np.int32)
        offsets = np.zeros(src.size + 1, dtype=np.int64)
        np.cumsum(np.maximum(hops, 0), out=offsets[1:])
        links = np.empty(int(offsets[-1]), dtype=np.int32)
        length = np.zeros(src.size)
        if position_km is None:
            position = np.zeros((self.network.constellation.n_satellites, 1, 3))
            step = np.zeros(src.size, dtype=np.int64)
        else:
            position = np.ascontiguousarray(position_km, dtype=np.float64)
            step = np.broadcast_to(np.asarray(step, dtype=np.int64), src.shape)
        _walk(st.pred, st.link, st.endpoints, table, src, dst, position,
              np.ascontiguousarray(step), offsets, length, links)
        return RouteWalk(hops=hops.astype(np.int32), length_km=length, offsets=offsets,
                         links=links)

    def hops(self, src, dst, t_ns) -> np.ndarray:
        """Fewest hops (int32, -1 unreachable) on the snapshot of each time (broadcast)."""
        src, dst, t_ns = np.broadcast_arrays(np.asarray(src, np.int64), np.asarray(dst, np.int64),
                                             np.asarray(t_ns, np.int64))
        snaps = self.snapshot_index(t_ns.reshape(-1))
        out = np.empty(src.size, np.int32)
        for k in np.unique(snaps):
            sel = snaps == k
            out[sel] = self.table(int(k)).hops[src.reshape(-1)[sel], dst.reshape(-1)[sel]]
        return out.reshape(src.shape)

    def high_latitude(self, snapshots) -> np.ndarray:
        """bool (n_sats, len(snapshots)): satellites above the cut-off at each snapshot
        (|geocentric latitude| strictly greater; a satellite whose SGP4 fails is not:
        its links are down anyway, which the schedule file cannot say)."""
        if self.static:
            raise ValueError("no latitude cut-off: the +Grid is time-invariant")
        t = np.asarray(snapshots, dtype=np.int64) * self.step_ns
        position = teme_positions_km(self.network.constellation, t, knot_ns=None, report=False)
        sin_cut = math.sin(math.radians(float(self.network.latitude_cutoff_deg)))
        with np.errstate(invalid="ignore"):
            return np.abs(position[..., 2]) > sin_cut * np.linalg.norm(position, axis=-1)

    def isl_schedule(self, constellation_spec: str, duration_ns: int,
                     chunk_snapshots: int = 256) -> dict:
        """The ISL schedule file (satpage-isl-schedule/1, services/README.md): for every
        snapshot that covers [0, duration_ns], the satellites above the cut-off, as
        [sat, k0, k1) runs of snapshots: the same test the routing tables apply."""
        if self.static:
            raise ValueError("no latitude cut-off (90 deg or more): the +Grid is time-invariant")
        k = int(duration_ns) // self.step_ns + 1
        high = np.concatenate([self.high_latitude(np.arange(a, min(k, a + chunk_snapshots)))
                               for a in range(0, k, chunk_snapshots)], axis=1)
        edges = np.diff(np.pad(high.astype(np.int8), ((0, 0), (1, 1))), axis=1)
        starts, ends = np.argwhere(edges == 1), np.argwhere(edges == -1)  # row-major: paired
        runs = np.column_stack([starts[:, 0], starts[:, 1], ends[:, 1]])
        return {"format": ISL_SCHEDULE_FORMAT, "constellation": constellation_spec,
                "latitude_cutoff_deg": float(self.network.latitude_cutoff_deg),
                "step_ns": self.step_ns, "snapshots": k, "high": runs.tolist()}


# ------------------------------------------------------------ test vectors
DEFAULT_VECTOR_CASES = (
    ("walker-star:150/10/1:500:87", None, 0),
    ("walker-star:150/10/1:500:87", 75.0, 600 * NS_PER_S),
    ("walker:60/6/2:550:53", None, 0),
    ("walker:24/4/1:700:60", 55.0, 1234 * NS_PER_S),
)
VECTOR_EPOCH = "2022-09-14T00:00:00Z"


def isl_test_vectors(cases=DEFAULT_VECTOR_CASES, epoch: str = VECTOR_EPOCH) -> dict:
    """Shared +Grid test vectors for other implementations (the Go satellite daemon).

    Per case: the spec, epoch, cut-off, time; every satellite's geocentric
    latitude at that time (so an implementation without SGP4 can apply the
    cut-off); sorted neighbour lists; and the full hop matrix.
    """
    out = {"format": "satpage-isl-vectors/1", "epoch": epoch,
           "rules": "docs/orbit-model.md, section '+Grid ISL rules'", "cases": []}
    for spec, cutoff, t_ns in cases:
        constellation = Constellation.from_spec(spec, epoch=epoch)
        network = IslNetwork(constellation, latitude_cutoff_deg=cutoff)
        position = teme_positions_km(constellation, np.array([t_ns]))[:, 0, :]
        lat = np.degrees(np.arcsin(position[:, 2] / np.linalg.norm(position, axis=1)))
        if cutoff is not None and np.any(np.abs(np.abs(lat) - cutoff) < 1e-4):
            raise ValueError(f"test vector {spec} at t={t_ns} ns puts a satellite on the cut-off")
        out["cases"].append({
            "constellation": spec, "latitude_cutoff_deg": cutoff, "t_ns": int(t_ns),
            "satellite_latitude_deg": [round(float(x), 6) for x in lat],
            "neighbours": [n.tolist() for n in network.neighbours(t_ns)],
            "hops": network.hop_matrix(t_ns).tolist(),
        })
    return out


def write_isl_test_vectors(path: str | PathLike, **kwargs) -> None:
    """Write ``isl_test_vectors()`` as JSON, one line per list of numbers (readable diffs)."""
    vectors = isl_test_vectors(**kwargs)
    cases = vectors.pop("cases")
    lines = ["{"] + [f" {json.dumps(k)}: {json.dumps(v)}," for k, v in vectors.items()] + [' "cases": [']
    for c, case in enumerate(cases):
        lines.append("  {")
        items = list(case.items())
        for i, (key, value) in enumerate(items):
            end = "," if i < len(items) - 1 else ""
            if key in ("neighbours", "hops"):
                rows = ",\n".join(f"    {json.dumps(row, separators=(',', ':'))}" for row in value)
                lines.append(f'   {json.dumps(key)}: [\n{rows}\n   ]{end}')
            else:
                lines.append(f"   {json.dumps(key)}: {json.dumps(value)}{end}")
        lines.append("  }" + ("," if c < len(cases) - 1 else ""))
    lines += [" ]", "}"]
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
