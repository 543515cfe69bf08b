"""The replay engine shared by every strategy and every caller.

Two entry points over the same compiled page-table code (``pager._kernels``):

- ``replay(trace, strategy)``: any ``Trace`` (one chunk of sessions), with
  per-session counters, per-visit holdings, and optionally the stale-trail
  snapshots and the event log of page movements that the constellation
  simulation prices in ISL hops and delays;
- ``run_paper(params, runs, rng)``: the paper workload, Zipf accesses generated
  on the fly in chunks of sessions (10^6 sessions x 6000 accesses never exist in
  memory at once), aggregated into ``PaperCounts``.

Sessions are independent: the kernels run them in parallel (Numba prange), each
with its own page table, and the results do not depend on the thread count or
the chunk size.
"""

from __future__ import annotations

import logging
import types
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from pager import _kernels as K
from pager.paper import PaperCounts
from pager.strategies import OnDemand, Proactive
from pager.strategy import EVENT_DTYPE, Strategy
from pager.trace import Trace
from pager.workload import MAX_VISITS, PaperParams, _positive_int, paper_key

__all__ = ["COUNTER_DTYPE", "Replay", "paper_counts", "replay", "run_paper"]

log = logging.getLogger(__name__)

COUNTER_DTYPE = np.dtype([
    ("accesses", np.int64),  # accesses replayed
    ("hits", np.int64),  # page held by the serving satellite
    ("created", np.int64),  # first access: page created on the serving satellite
    ("created_on_ground", np.int64),  # first access: page created on the ground
    ("fault_moves", np.int64),  # movements on access (page faults)
    ("handover_moves", np.int64),  # movements chosen by the strategy at a visit start
    ("push_moves", np.int64),  # movements pushed ahead of a handover
    ("remote_accesses", np.int64),  # served where the page is, without moving it
    ("ground_transfers", np.int64),  # movements or remote accesses across the ground link
    ("trail_hops", np.int64),  # sum over movements of the trail distance
    ("remote_trail_hops", np.int64),  # sum over remote accesses of the trail distance
])
"""Per-session counters of ``Replay.counters`` (one int64 each, in kernel column order)."""

assert len(COUNTER_DTYPE.names) == K.N_COUNTERS


@dataclass(frozen=True)
class Replay:
    """What one strategy did to one Trace.

    - ``counters``: COUNTER_DTYPE (n_sessions,)
    - ``held_at_end``: int32 (v,) pages held by each visit's satellite when the
      session ends (the stale trail; Table I's last row for the paper trail)
    - ``pages_at_visit_end``: int32 (v,) pages in existence at the end of each visit
    - ``snapshot_offsets``/``snapshot_held`` (with ``snapshots=True``): for global
      visit g at trail position k, ``snapshot_held[snapshot_offsets[g]:][:k + 1]``
      are the pages held by the session's visits 0..k at the end of visit k
    - ``events`` (with ``events=True``): EVENT_DTYPE (e,), by session then time
    """

    strategy: str
    counters: np.ndarray
    held_at_end: np.ndarray
    pages_at_visit_end: np.ndarray
    snapshot_offsets: np.ndarray | None = None
    snapshot_held: np.ndarray | None = None
    events: np.ndarray | None = None

    @property
    def page_moves(self) -> np.ndarray:
        """int64 (n_sessions,): movements of every kind."""
        c = self.counters
        return c["fault_moves"] + c["handover_moves"] + c["push_moves"]

    def total(self, field: str) -> int:
        """Sum of one counter over the sessions."""
        return int(self.counters[field].sum())


def _check_strategy(strategy: Strategy) -> tuple[object, np.ndarray]:
    """The strategy's compiled handover rule and its parameters."""
    if not isinstance(strategy, Strategy):
        raise ValueError(f"not a pager Strategy: {strategy!r}")
    params = np.ascontiguousarray(strategy.params(), dtype=np.int64)
    if params.ndim != 1:
        raise ValueError(f"{strategy.name}: params() must be 1-D, got shape {params.shape}")
    select = strategy.select
    # A Numba dispatcher stored on the class binds like a method: unwrap it.
    if isinstance(select, types.MethodType):
        select = select.__func__
    return select, params


def replay(trace: Trace, strategy: Strategy, *, events: bool = False,
           log_creations: bool = False, snapshots: bool = False) -> Replay:
    """Replay every session of ``trace`` under ``strategy``.

    The event log costs a second pass (counting first, so the log is allocated
    exactly, and written in place by the kernel); leave it off when only the
    counters are needed.
    """
    select, params = _check_strategy(strategy)
    n = trace.n_sessions
    nv = np.diff(trace.visit_offsets)
    if nv.size and nv.max() > MAX_VISITS:
        raise ValueError(f"a session has {int(nv.max())} visits, more than {MAX_VISITS}")
    vo = np.ascontiguousarray(trace.visit_offsets, dtype=np.int64)
    vsat = np.ascontiguousarray(trace.visit_satellite, dtype=np.int32)
    vstart = np.ascontiguousarray(trace.visit_start_ns, dtype=np.int64)
    ao = np.ascontiguousarray(trace.access_offsets, dtype=np.int64)
    page = np.ascontiguousarray(trace.access_page, dtype=np.int32)
    atime = np.ascontiguousarray(trace.access_time_ns, dtype=np.int64)
    v = trace.n_visits
    counters = np.zeros((n, K.N_COUNTERS), dtype=np.int64)
    held_at_end = np.zeros(v, dtype=np.int32)
    pages_end = np.zeros(v, dtype=np.int32)
    if snapshots:
        pos = np.arange(v, dtype=np.int64) - np.repeat(vo[:-1], nv)
        snap_off = np.zeros(v + 1, dtype=np.int64)
        np.cumsum(pos + 1, out=snap_off[1:])
        snap = np.zeros(int(snap_off[-1]), dtype=np.int32)
    else:
        snap_off = np.zeros(1, dtype=np.int64)
        snap = np.zeros(0, dtype=np.int32)
    push = strategy.handover_kind == K.KIND_PUSH
    # the live service's staged push (copy ahead, claim at the handover): docs/live.md
    staged = push and bool(getattr(strategy, "staged", False)) and strategy.lead_ns > 0
    write = (np.ascontiguousarray(trace.access_write, dtype=np.bool_) if trace.access_write is not None
             else np.zeros(0, dtype=np.bool_))
    kernel = K.typed_trace_kernel()
    args = (np.int64(trace.n_pages), vo, vsat, vstart, ao, page, atime, bool(strategy.move_on_fault),
            bool(strategy.create_on_ground), push, np.int64(strategy.lead_ns), select,
            params, counters, held_at_end, pages_end, snap_off, snap, bool(snapshots))
    no_events = np.zeros(0, dtype=EVENT_DTYPE)
    kernel(*args, np.zeros(n + 1, np.int64), False, no_events, False, staged, write)
    log_ = None
    if events:
        c = counters
        per = (c[:, K.C_FAULT_MOVES] + c[:, K.C_HANDOVER_MOVES] + c[:, K.C_PUSH_MOVES]
               + c[:, K.C_REMOTE])
        if log_creations:
            per = per + c[:, K.C_CREATED]
        ev_off = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(per, out=ev_off[1:])
        log_ = np.empty(int(ev_off[-1]), dtype=EVENT_DTYPE)
        # Second pass: the same deterministic replay, now writing the log (sized
        # exactly from the first pass's counters).
        counters2 = np.zeros_like(counters)
        kernel(np.int64(trace.n_pages), vo, vsat, vstart, ao, page, atime,
               bool(strategy.move_on_fault), bool(strategy.create_on_ground), push,
               np.int64(strategy.lead_ns), select, params, counters2,
               np.zeros(v, np.int32), np.zeros(v, np.int32), snap_off,
               np.zeros_like(snap), False, ev_off, bool(log_creations), log_, True, staged, write)
        if not np.array_equal(counters, counters2):
            raise AssertionError("event-logging pass disagrees with the counting pass")
    return Replay(
        strategy=strategy.name,
        counters=counters.view(COUNTER_DTYPE).reshape(n),
        held_at_end=held_at_end,
        pages_at_visit_end=pages_end,
        snapshot_offsets=snap_off if snapshots else None,
        snapshot_held=snap if snapshots else None,
        events=log_,
    )


_ROWS_BUDGET_BYTES = 64 << 20  # per-chunk Table I snapshots (n, V, V) int64


def run_paper(params: PaperParams, runs: int, rng: np.random.Generator, *,
              chunk_sessions: int = 16384,
              on_chunk: Callable[[int], None] | None = None) -> PaperCounts:
    """Monte Carlo of the paper workload: ``runs`` independent sessions, each replayed
    under on-demand and under proactive on the same accesses.

    Session i draws its accesses from a stream keyed by (one draw from ``rng``, i),
    exactly as ``paper_trace`` does. ``on_chunk(n)`` is called after each chunk of
    n sessions (progress bars).
    """
    runs = _positive_int("runs", runs)
    chunk_sessions = _positive_int("chunk_sessions", chunk_sessions)
    key = paper_key(rng)
    sampler = params.sampler()
    v, a = params.n_visits, params.accesses
    chunk = max(1, min(chunk_sessions, _ROWS_BUDGET_BYTES // (8 * v * v)))
    counts: PaperCounts | None = None
    first = 0
    while first < runs:
        m = min(chunk, runs - first)
        moves = np.empty(m, dtype=np.int64)
        hops = np.empty(m, dtype=np.int64)
        rows = np.zeros((m, v, v), dtype=np.int64)
        # On-demand replayed on the generated accesses; proactive follows from it
        # (K.paper_ondemand_kernel says why; tests hold it to the Trace engine).
        K.paper_ondemand_kernel(key, np.int64(first), np.int64(m), np.int64(v), np.int64(a),
                                sampler.threshold, sampler.alias, moves, hops, rows)
        totals = rows.sum(axis=2)
        existing = totals[:, :-1].sum(axis=1)  # pages moved one hop by proactive handovers
        part = PaperCounts.from_runs(
            totals=totals, last_row=rows[:, -1, :], rows=rows,
            ondemand_moves=moves, ondemand_hops=hops,
            proactive_moves=existing, proactive_hops=existing,
        )
        counts = part if counts is None else counts.merge(part)
        first += m
        if on_chunk is not None:
            on_chunk(m)
        log.debug("paper: %d of %d sessions", first, runs)
    assert counts is not None
    return counts


def paper_counts(trace: Trace) -> PaperCounts:
    """Replay a paper trace (``paper_trace``) through the general Trace engine under
    on-demand and proactive: the reference a replay elsewhere must reproduce."""
    nv = np.diff(trace.visit_offsets)
    if trace.n_sessions == 0 or np.any(nv != nv[0]):
        raise ValueError("a paper trace has the same number of visits in every session")
    v = int(nv[0])
    od = replay(trace, OnDemand(), snapshots=True)
    pr = replay(trace, Proactive())
    n = trace.n_sessions
    tri = np.zeros((n, v, v), dtype=np.int64)
    k_idx, j_idx = np.tril_indices(v)
    tri[:, k_idx, j_idx] = od.snapshot_held.reshape(n, -1)
    return PaperCounts.from_runs(
        totals=od.pages_at_visit_end.reshape(n, v),
        last_row=od.held_at_end.reshape(n, v),
        rows=tri,
        ondemand_moves=od.counters["fault_moves"],
        ondemand_hops=od.counters["trail_hops"],
        proactive_moves=pr.page_moves,
        proactive_hops=pr.counters["trail_hops"],
    )
