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

__all__ = ["IslLinks", "IslNetwork", "Routes", "grid_links", "isl_test_vectors",
           "write_isl_test_vectors"]

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
        """Active mask (n_times, m) and link propagation delay in ms (n_times, m) at ``t_ns``."""
        position = teme_positions_km(self.constellation, t_ns)
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
        active, delay = self._state(np.array([self._round(t_a.ravel()[0])]))
        indptr, nbr, edge = self._csr
        n = self.constellation.n_satellites
        hops = np.empty(n, np.int32)
        arrival = np.empty(n)
        _bfs_delay(indptr, nbr, edge, active[0], delay[0], s, hops, arrival, np.empty(n, np.int32))
        if hops[d] < 0:
            return np.zeros(0, np.int32)
        path = [d]
        v = d
        while v != s:
            lo, hi = indptr[v], indptr[v + 1]
            best = None
            for u, e in sorted(zip(nbr[lo:hi].tolist(), edge[lo:hi].tolist(), strict=True)):
                if active[0, e] and hops[u] == hops[v] - 1 and \
                        math.isclose(arrival[u] + delay[0, e], arrival[v], rel_tol=0, abs_tol=1e-9):
                    best = u
                    break
            v = best
            path.append(v)
        return np.array(path[::-1], np.int32)

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
