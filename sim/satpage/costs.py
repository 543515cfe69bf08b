"""The costs of docs/design.md section 4, accumulated from movement event logs.

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
  ``per_hop_processing_ms`` per hop, there and back, plus the page's transmission
  time and M/D/1 queueing wait on each link (satpage.linkmodel). Handover
  transfers and pushes happen off the access path: they cost hops and bytes, and
  an access waits (a stall) only when its page is still in flight; a container
  migration blocks every access until its downtime ends.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

import pager
from orbit_model import RoutingSnapshots
from satpage.linkmodel import (
    HANDOVER,
    PRICE_KEYS,
    RHO_MAX,
    ChunkPlaces,
    ChunkRoutes,
    LinkModel,
    LinkState,
    LogHistogram,
    PriceSums,
    kind_rules,
    migration_waits,
    price_events,
    transfer_stalls,
)
from satpage.workload import ChunkTrace

__all__ = ["CostAccumulator", "LATENCY_BIN_MS", "LATENCY_MAX_MS", "SUMMARY_KEYS"]

LATENCY_BIN_MS = 0.01     # resolution of the latency percentiles
LATENCY_MAX_MS = 1000.0   # longer faults land in the last bin (counted, reported as max)

#: Keys of a strategy's summary, in report order.
SUMMARY_KEYS = (
    "page_moves", "page_hops", "byte_hops", "fault_latency_ms", "fault_latency_p50_ms",
    "fault_latency_p99_ms", "faults", "access_latency_ms_mean", "handover_transfer_bytes",
    "handover_transfer_pages", "isl_load_max_bytes", "isl_load_mean_bytes",
    "isl_load_peak_bytes_per_s", "pages_held_max_per_satellite",
    "pages_held_mean_per_satellite", "pages_left_behind", "pages_at_session_end",
    "moves_per_session", "hops_per_move", "accesses", "stall_p50_ms", "stall_p99_ms",
    "stalled_access_share", "handover_downtime_p50_ms", "handover_downtime_p99_ms",
    "link_delay_ms_mean", "isl_utilisation_max", "isl_utilisation_p99",
    "isl_link_bins_over_80pct", "custody_hits", "custody_extra_pages", "replica_copies",
    "pages_lost", "sessions_hit", "page_tables_lost", "replication_page_hops",
    "replication_bytes",
)

#: Utilisation above which a link-bin is reported as hot (isl_link_bins_over_80pct).
HOT_UTILISATION = 0.8


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
    link_delay_sum_ns: int = 0      # transmission + queueing part of fault latencies
    stalls: LogHistogram = field(default_factory=LogHistogram)     # per stalled access
    downtimes: LogHistogram = field(default_factory=LogHistogram)  # per blocking handover

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
                  "creates", "ground_fetches", "custody_hits", "custody_copies",
                  "custody_copies_at_end", "multipath_second_paths", "replica_copies",
                  "idle_deferred", "idle_at_handover", "handovers", "pages_lost",
                  "sessions_hit", "page_tables_lost", "replication_copies",
                  "replication_hops", "rereplication_copies", "rereplication_hops"):
            self.counts.setdefault(k, 0)

    # -- accumulation ------------------------------------------------------------------------
    def _bin(self, t_ns: np.ndarray) -> np.ndarray:
        b = (np.asarray(t_ns, np.int64) * self.load_bins) // max(self.duration_ns, 1)
        return np.clip(b, 0, self.load_bins - 1)

    def add(self, rl: pager.Replay, ct: ChunkTrace, router: RoutingSnapshots, step_ns: int,
            per_hop_processing_ms: float, strategy: pager.Strategy | None = None,
            links: LinkModel | None = None, wait_ms: np.ndarray | None = None) -> None:
        """Account one chunk's replay (pager.Replay, its event log included): one compiled pass over
        the event log (satpage.linkmodel.price_events), the waits of accesses stalled by
        transfers in flight or by a container migration, then the session ends.

        ``links`` and ``wait_ms`` (load_bins, n_link_ids) give link rates and queueing
        waits; without them links are infinitely fast (propagation and processing only).
        ``strategy`` says how the network carries the transfers (pager.network_use)."""
        events = rl.events
        tr = ct.trace
        use = pager.network_use(strategy) if strategy is not None else pager.PAGING
        vsat = tr.visit_satellite.astype(np.int64)
        c = self.counts
        c["accesses"] += tr.n_accesses
        c["sessions"] += tr.n_sessions
        c["visits"] += tr.n_visits
        c["handovers"] += tr.n_visits - tr.n_sessions
        t = np.ascontiguousarray(events["time_ns"])
        table, st = router.stack(t)             # orbit_model's routing tables
        if wait_ms is None:
            wait_ms = np.zeros((self.load_bins, self.n_link_ids))
        background = links.background if links is not None else wait_ms
        tx_ms = links.tx_ms if links is not None else 0.0
        rules = kind_rules(use, int(getattr(strategy, "lead_ns", 0)))
        sums = PriceSums(self.link_load, self.held_delta, self.latency_hist, LATENCY_BIN_MS,
                         np.zeros(len(PRICE_KEYS), np.int64), np.zeros(1),
                         np.empty(events.size, np.int64))
        price_events(np.ascontiguousarray(events),
                     ChunkPlaces(vsat, ct.gateway_sat.astype(np.int64), ct.gateway_range_km,
                                 np.ascontiguousarray(ct.pos), int(step_ns),
                                 int(ct.window_step0), int(tr.n_pages)),
                     ChunkRoutes(table, st.hops, st.pred, st.link, st.endpoints, st.indptr,
                                 st.nbr, st.edge),
                     LinkState(self.load_bins, int(self.duration_ns),
                               float(per_hop_processing_ms), float(tx_ms),
                               np.ascontiguousarray(wait_ms, dtype=np.float64),
                               np.ascontiguousarray(background, dtype=np.float64)),
                     rules, sums)
        out, lat_max, arrival = sums.out, sums.lat_max, sums.arrival_ns
        for k, v in zip(PRICE_KEYS, out, strict=True):
            if k == "latency_sum_ns":
                self.latency_sum_ns += int(v)
            elif k == "unreachable":
                self.unreachable += int(v)
            elif k == "link_delay_sum_ns":
                self.link_delay_sum_ns += int(v)
            else:
                c[k] += int(v)
        self.latency_max_ms = max(self.latency_max_ms, float(lat_max[0]))

        # accesses that wait: for a container being migrated, or for a page in flight
        if use.blocking_migration:     # the strategy knows its downtime (pager.check_strategy)
            ho = events["to_visit"][events["kind"] == HANDOVER].astype(np.int64)
            pages = np.bincount(ho, minlength=tr.n_visits)
            first = np.zeros(tr.n_visits, bool)
            first[tr.visit_offsets[:-1][np.diff(tr.visit_offsets) > 0]] = True
            hv = np.flatnonzero(~first)
            down_ms = strategy.handover_downtime_ms(pages[hv] * self.page_bytes)
            down_ns = np.round(down_ms * 1e6).astype(np.int64)
            self.downtimes.add(down_ns)
            waits = migration_waits(hv, down_ns, tr.visit_start_ns, tr.access_offsets,
                                    tr.access_time_ns)
        else:
            tx_ns = int(round(tx_ms * 1e6))
            waits = transfer_stalls(events["kind"], events["to_visit"], events["page"], t,
                                    arrival, tx_ns, tr.n_pages, tr.access_offsets,
                                    tr.access_page, tr.access_time_ns, rules)
        self.stalls.add(waits)

        # every page still held is released when its session ends
        vsess = tr.visit_session()
        held_end = rl.held_at_end.astype(np.int64)
        np.add.at(self.held_delta, (vsat, self._bin(ct.session_end_ns[vsess])), -held_end)
        last_sat = vsat[tr.visit_offsets[1:] - 1]
        c["pages_at_session_end"] += int(held_end.sum())
        c["pages_left_behind"] += int(held_end[vsat != last_sat[vsess]].sum())

    def add_faults(self, outcome: pager.FaultOutcome) -> None:
        """Account what a failure schedule did to one chunk (pager.apply_failures):
        losses, and the replication traffic priced at its in-plane ring hops
        (docs/faults.md), apart from the primary movements."""
        c = self.counts
        c["pages_lost"] += int(outcome.pages_lost.sum())
        c["sessions_hit"] += outcome.sessions_hit
        c["page_tables_lost"] += int(outcome.table_lost.sum())
        c["replication_copies"] += int(outcome.replica_copies.sum())
        c["replication_hops"] += int(outcome.replica_hops.sum())
        c["rereplication_copies"] += int(outcome.rereplica_copies.sum())
        c["rereplication_hops"] += int(outcome.rereplica_hops.sum())

    def merge(self, other: CostAccumulator) -> None:
        for k, v in other.counts.items():
            self.counts[k] = self.counts.get(k, 0) + v
        self.latency_sum_ns += other.latency_sum_ns
        self.latency_hist += other.latency_hist
        self.latency_max_ms = max(self.latency_max_ms, other.latency_max_ms)
        self.link_load += other.link_load
        self.held_delta += other.held_delta
        self.unreachable += other.unreachable
        self.link_delay_sum_ns += other.link_delay_sum_ns
        self.stalls.merge(other.stalls)
        self.downtimes.merge(other.downtimes)

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

    def utilisation(self, links: LinkModel | None, link_exists: np.ndarray) -> np.ndarray:
        """float64 (load_bins, n_links): utilisation of the existing links in each bin
        (background plus this strategy's pages); zeros without a link model."""
        if links is None:
            return np.zeros((self.load_bins, int(link_exists.sum())))
        return links.utilisation(self.link_load)[:, link_exists]

    def summary(self, link_exists: np.ndarray, links: LinkModel | None = None
                ) -> dict[str, float | int]:
        c = self.counts
        util = self.utilisation(links, link_exists)
        waits_ms = self.stalls.sum_ns / 1e6
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
            # latency per access: fault latencies plus the waits of stalled accesses
            "access_latency_ms_mean": (self.latency_sum_ns / 1e6 + waits_ms)
            / max(c["accesses"], 1),
            "link_delay_ms_mean": self.link_delay_sum_ns / 1e6 / faults if faults else 0.0,
            "stall_p50_ms": self.stalls.percentile_ms(50),
            "stall_p99_ms": self.stalls.percentile_ms(99),
            "stall_max_ms": self.stalls.max_ns / 1e6,
            "stall_ms_total": waits_ms,
            "stalled_accesses": self.stalls.n,
            "stalled_access_share": self.stalls.n / max(c["accesses"], 1),
            "handover_downtime_p50_ms": self.downtimes.percentile_ms(50),
            "handover_downtime_p99_ms": self.downtimes.percentile_ms(99),
            "isl_utilisation_max": float(util.max(initial=0.0)),
            "isl_utilisation_p99": float(np.percentile(util, 99)) if util.size else 0.0,
            "isl_link_bins_over_80pct": int(np.sum(util > HOT_UTILISATION)),
            "isl_link_bins_saturated": int(np.sum(util >= RHO_MAX)),
            "custody_hits": c["custody_hits"],
            "custody_copies": c["custody_copies"],
            "custody_extra_pages": c["custody_copies_at_end"],
            "custody_extra_bytes": c["custody_copies_at_end"] * self.page_bytes,
            "multipath_second_paths": c["multipath_second_paths"],
            "replica_copies": c["replica_copies"],
            "idle_deferred_pushes": c["idle_deferred"],
            "idle_pushes_at_handover": c["idle_at_handover"],
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
            # failures and replication (docs/faults.md); 0 without [faults]
            "pages_lost": c["pages_lost"],
            "sessions_hit": c["sessions_hit"],
            "page_tables_lost": c["page_tables_lost"],
            "replication_page_hops": c["replication_hops"] + c["rereplication_hops"],
            "replication_bytes": (c["replication_hops"] + c["rereplication_hops"])
            * self.page_bytes,
            "replication_copies": c["replication_copies"] + c["rereplication_copies"],
            "rereplication_copies": c["rereplication_copies"],
            "rereplication_page_hops": c["rereplication_hops"],
        }
