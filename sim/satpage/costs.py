"""The costs of DESIGN.md section 4, accumulated from movement event logs.

`CostAccumulator` takes one chunk's event log at a time (``add``) and merges
with others (``merge``), so a run can be split over processes in any way; all
sums are integers or are added in chunk order, and latency percentiles come
from a fixed histogram, so the result does not depend on the split.

Cost model (docs/strategies.md has the prose):

- A movement (fault, handover transfer, push) from satellite A to satellite B at
  time t costs the ISL shortest-path hops between A and B at t; a transfer
  between two visits of the same satellite moves nothing and costs nothing.
- ``ground-store``: every access fetches the page from the ground gateway, over
  the ISL path from the serving satellite to the satellite above the gateway and
  the feeder link, which counts as one more hop.
- A fault's latency is the path's propagation delay (length / c) plus
  ``per_hop_processing_ms`` per hop, there and back. Handover transfers and
  pushes happen off the access path: they cost hops and bytes, not latency.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numba
import numpy as np

from orbit_model.constants import SPEED_OF_LIGHT_KM_S as C_KM_S
from pager import GROUND, NOWHERE, EventKind, Replay
from satpage.network import Router
from satpage.workload import ChunkTrace

__all__ = ["CostAccumulator", "LATENCY_BIN_MS", "LATENCY_MAX_MS", "SUMMARY_KEYS"]

# pager's event kinds as plain ints (numba compares them in _account)
FAULT, HANDOVER, PUSH, REMOTE, CREATE = (int(EventKind.FAULT), int(EventKind.HANDOVER),
                                         int(EventKind.PUSH), int(EventKind.REMOTE),
                                         int(EventKind.CREATE))

LATENCY_BIN_MS = 0.01     # resolution of the latency percentiles
LATENCY_MAX_MS = 1000.0   # longer faults land in the last bin (counted, reported as max)

#: Keys of a strategy's summary, in report order.
SUMMARY_KEYS = (
    "page_moves", "page_hops", "byte_hops", "fault_latency_ms", "fault_latency_p50_ms",
    "fault_latency_p99_ms", "faults", "access_latency_ms_mean", "handover_transfer_bytes",
    "handover_transfer_pages", "isl_load_max_bytes", "isl_load_mean_bytes",
    "isl_load_peak_bytes_per_s", "pages_held_max_per_satellite",
    "pages_held_mean_per_satellite", "pages_left_behind", "pages_at_session_end",
    "moves_per_session", "hops_per_move", "accesses",
)


_COUNT_KEYS = ("page_moves", "page_hops", "ground_fetches", "handover_transfer_pages",
               "faults", "creates", "latency_sum_ns", "unreachable")


@numba.njit(cache=True, nogil=True)
def _account(kind, fv, tv, t, table, vsat, gw_sat, gw_range_km, step_ns, step0, pred, pos,
             neighbours, load_bins, duration_ns, per_hop_ms, bin_ms, link_load, held_delta,
             lat_hist, out, lat_max):
    """One pass over an event log: route every transfer (hops, path length, ISL load),
    fault latencies, pages arriving and leaving. ``out`` follows _COUNT_KEYS."""
    n_t = pos.shape[1]
    deg = neighbours.shape[1]
    n_hist = lat_hist.size
    for e in range(kind.size):
        k = kind[e]
        step = t[e] // step_ns - step0
        step = min(max(step, 0), n_t - 1)
        b = (t[e] * load_bins) // max(duration_ns, 1)
        b = min(max(b, 0), load_bins - 1)
        dst = vsat[tv[e]]
        if k == CREATE:
            held_delta[dst, b] += 1
            out[5] += 1
            continue
        if fv[e] == NOWHERE:                         # nothing to transfer
            continue
        ground = fv[e] == GROUND
        src = gw_sat[step] if ground else vsat[fv[e]]
        if src == dst and not ground:                # two visits of the same satellite
            continue
        # walk the shortest-hop path dst -> src, adding the load of each link
        h = 0
        d = 0.0
        cur = dst
        ok = True
        while cur != src:
            prev = pred[table[e], src, cur]
            if prev < 0:
                ok = False
                break
            dx = pos[prev, step, 0] - pos[cur, step, 0]
            dy = pos[prev, step, 1] - pos[cur, step, 1]
            dz = pos[prev, step, 2] - pos[cur, step, 2]
            d += np.sqrt(dx * dx + dy * dy + dz * dz)
            h += 1
            lo = min(prev, cur)
            hi = max(prev, cur)
            for j in range(deg):
                if neighbours[lo, j] == hi:
                    link_load[b, lo * deg + j] += 1
                    break
            cur = prev
        if not ok:
            out[7] += 1
            h = 0
            d = 0.0
        page_hops = h + (1 if ground else 0)         # the feeder link counts as one hop
        out[0] += 1
        out[1] += page_hops
        if ground:
            out[2] += 1
            d += gw_range_km[step]
        if k == HANDOVER or k == PUSH:
            out[3] += 1
        if k == FAULT or k == REMOTE:                # the access waits
            lat = 2.0 * (d / C_KM_S * 1e3 + page_hops * per_hop_ms)
            out[4] += 1
            out[6] += np.int64(np.round(lat * 1e6))
            if lat > lat_max[0]:
                lat_max[0] = lat
            hb = np.int64(lat / bin_ms)
            lat_hist[min(hb, n_hist - 1)] += 1
        if not ground and k != REMOTE:               # the page changes frames
            held_delta[dst, b] += 1
            held_delta[src, b] -= 1


@dataclass
class CostAccumulator:
    """Running totals for one strategy over any number of chunks."""

    n_sats: int
    n_link_ids: int
    load_bins: int
    duration_ns: int
    page_bytes: int
    counts: dict[str, int] = field(default_factory=dict)
    latency_sum_ns: int = 0     # integer, so chunk sums add up the same in any order
    latency_hist: np.ndarray = field(default=None)       # type: ignore[assignment]
    latency_max_ms: float = 0.0
    link_load: np.ndarray = field(default=None)          # (load_bins, n_link_ids) pages
    held_delta: np.ndarray = field(default=None)         # (n_sats, load_bins) page deltas
    unreachable: int = 0

    def __post_init__(self) -> None:
        nbins = int(round(LATENCY_MAX_MS / LATENCY_BIN_MS)) + 1
        if self.latency_hist is None:
            self.latency_hist = np.zeros(nbins, dtype=np.int64)
        if self.link_load is None:
            self.link_load = np.zeros((self.load_bins, self.n_link_ids), dtype=np.int64)
        if self.held_delta is None:
            self.held_delta = np.zeros((self.n_sats, self.load_bins), dtype=np.int64)
        for k in ("page_moves", "page_hops", "faults", "handover_transfer_pages", "accesses",
                  "pages_left_behind", "pages_at_session_end", "sessions", "visits",
                  "creates", "ground_fetches"):
            self.counts.setdefault(k, 0)

    # -- accumulation ------------------------------------------------------------------------
    def _bin(self, t_ns: np.ndarray) -> np.ndarray:
        b = (np.asarray(t_ns, np.int64) * self.load_bins) // max(self.duration_ns, 1)
        return np.clip(b, 0, self.load_bins - 1)

    def add(self, rl: Replay, ct: ChunkTrace, router: Router, step_ns: int,
            per_hop_processing_ms: float) -> None:
        """Account one chunk's replay (pager.Replay with its event log): one compiled pass over
        the event log (``_account``), then the session ends."""
        events = rl.events
        tr = ct.trace
        vsat = tr.visit_satellite.astype(np.int64)
        c = self.counts
        c["accesses"] += tr.n_accesses
        c["sessions"] += tr.n_sessions
        c["visits"] += tr.n_visits
        t = np.ascontiguousarray(events["time_ns"])
        pred, table = router.predecessors(router.snapshot_index(t))
        out = np.zeros(len(_COUNT_KEYS), np.int64)
        lat_max = np.zeros(1)
        _account(np.ascontiguousarray(events["kind"]),
                 np.ascontiguousarray(events["from_visit"]).astype(np.int64),
                 np.ascontiguousarray(events["to_visit"]).astype(np.int64), t,
                 table.astype(np.int64), vsat, ct.gateway_sat.astype(np.int64),
                 ct.gateway_range_km, int(step_ns), int(ct.window_step0), pred, ct.pos,
                 router.topology.neighbours, self.load_bins, int(self.duration_ns),
                 float(per_hop_processing_ms), LATENCY_BIN_MS, self.link_load, self.held_delta,
                 self.latency_hist, out, lat_max)
        for k, v in zip(_COUNT_KEYS, out, strict=True):
            if k == "latency_sum_ns":
                self.latency_sum_ns += int(v)
            elif k == "unreachable":
                self.unreachable += int(v)
            else:
                c[k] += int(v)
        self.latency_max_ms = max(self.latency_max_ms, float(lat_max[0]))

        # every page still held is released when its session ends
        vsess = tr.visit_session()
        held_end = rl.held_at_end.astype(np.int64)
        np.add.at(self.held_delta, (vsat, self._bin(ct.session_end_ns[vsess])), -held_end)
        last_sat = vsat[tr.visit_offsets[1:] - 1]
        c["pages_at_session_end"] += int(held_end.sum())
        c["pages_left_behind"] += int(held_end[vsat != last_sat[vsess]].sum())

    def merge(self, other: CostAccumulator) -> None:
        for k, v in other.counts.items():
            self.counts[k] = self.counts.get(k, 0) + v
        self.latency_sum_ns += other.latency_sum_ns
        self.latency_hist += other.latency_hist
        self.latency_max_ms = max(self.latency_max_ms, other.latency_max_ms)
        self.link_load += other.link_load
        self.held_delta += other.held_delta
        self.unreachable += other.unreachable

    # -- results -------------------------------------------------------------------------------
    def held_series(self) -> np.ndarray:
        """int64 (n_sats, load_bins): pages held by each satellite at the end of each bin,
        stale trail included (pages are released when their session ends)."""
        return np.cumsum(self.held_delta, axis=1)

    def percentile_ms(self, q: float) -> float:
        n = int(self.latency_hist.sum())
        if n == 0:
            return 0.0
        k = np.searchsorted(np.cumsum(self.latency_hist), q / 100.0 * n, side="left")
        if k >= self.latency_hist.size - 1:
            return self.latency_max_ms
        return (k + 0.5) * LATENCY_BIN_MS

    def summary(self, link_exists: np.ndarray) -> dict[str, float | int]:
        c = self.counts
        per_link_pages = self.link_load.sum(axis=0)[link_exists]
        bin_s = self.duration_ns / 1e9 / self.load_bins
        held = self.held_series()
        faults = c["faults"]
        return {
            "page_moves": c["page_moves"],
            "page_hops": c["page_hops"],
            "byte_hops": c["page_hops"] * self.page_bytes,
            "fault_latency_ms": self.latency_sum_ns / 1e6 / faults if faults else 0.0,
            "fault_latency_p50_ms": self.percentile_ms(50),
            "fault_latency_p99_ms": self.percentile_ms(99),
            "fault_latency_max_ms": self.latency_max_ms,
            "faults": faults,
            "access_latency_ms_mean": self.latency_sum_ns / 1e6 / max(c["accesses"], 1),
            "handover_transfer_pages": c["handover_transfer_pages"],
            "handover_transfer_bytes": c["handover_transfer_pages"] * self.page_bytes,
            "isl_load_max_bytes": int(per_link_pages.max(initial=0)) * self.page_bytes,
            "isl_load_mean_bytes": float(per_link_pages.mean()) * self.page_bytes
            if per_link_pages.size else 0.0,
            "isl_load_peak_bytes_per_s": float(self.link_load[:, link_exists].max(initial=0))
            * self.page_bytes / bin_s,
            "pages_held_max_per_satellite": int(held.max(initial=0)),
            "pages_held_mean_per_satellite": float(held.mean()) if held.size else 0.0,
            "pages_left_behind": c["pages_left_behind"],
            "pages_at_session_end": c["pages_at_session_end"],
            "moves_per_session": c["page_moves"] / max(c["sessions"], 1),
            "hops_per_move": c["page_hops"] / max(c["page_moves"], 1),
            "accesses": c["accesses"],
            "accesses_per_visit": c["accesses"] / max(c["visits"], 1),
            "sessions": c["sessions"],
            "visits": c["visits"],
            "ground_fetches": c["ground_fetches"],
            "unreachable_transfers": self.unreachable,
        }
