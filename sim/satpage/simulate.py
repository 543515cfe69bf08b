"""The handover simulation: scenario -> satellites, ISL routing, sessions -> traces ->
replay per strategy -> costs. This is what `satpage compare` runs.

Work is split into chunks of ``run.chunk_sessions`` sessions (start-time order).
Chunk ``i`` draws its randomness from ``SeedSequence(seed, spawn_key=(1 + i,))``
and the session table from ``spawn_key=(0,)``, and chunk results are merged in
chunk order with integer sums, so the same scenario and seed give the same
numbers with any number of processes (tests/test_simulate.py checks 1 vs 2).
"""

from __future__ import annotations

import logging
import multiprocessing
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field

import numpy as np

import pager
from pager import Trace
from satpage.costs import CostAccumulator
from satpage.geometry import PositionCache, SatelliteSet
from satpage.network import Router, Topology, topology_from_links
from satpage.scenario import Scenario
from satpage.workload import ChunkTrace, build_trace, make_sessions

__all__ = ["World", "RunResult", "prepare", "run_scenario", "chunk_traces", "chunk_trace",
           "strategy_for", "replay_strategy", "STAGES", "ENGINE"]

log = logging.getLogger(__name__)

STAGES = ("sessions", "schedule", "replay", "costs")

#: the replay engine compare runs (pager's); reports record it.
ENGINE = "pager"


@dataclass(eq=False)
class World:
    """What every chunk needs: satellites, routing, the session table."""

    scenario: Scenario
    sats: SatelliteSet
    topology: Topology
    router: Router
    sessions: np.ndarray
    setup_s: float
    positions: PositionCache

    @property
    def n_chunks(self) -> int:
        c = self.scenario.run.chunk_sessions
        return (self.sessions.size + c - 1) // c

    def chunk_rows(self, i: int) -> tuple[int, np.ndarray]:
        c = self.scenario.run.chunk_sessions
        return i * c, self.sessions[i * c:(i + 1) * c]


def prepare(sc: Scenario, store_dir: str | None = None) -> World:
    """Satellites, routing, the session table and the position cache (large runs keep
    positions in a file under ``store_dir``, shared by the worker processes)."""
    t0 = time.perf_counter()
    sats = SatelliteSet(sc.constellation.spec, sc.epoch)
    topo = topology_from_links(sats.n_sats, sats.links, sats.link_cross_plane)
    router = Router(sats, topo, sc.constellation.isl_latitude_cutoff_deg,
                    int(round(sc.time.routing_step_s * 1e9)))
    sessions = make_sessions(sc)
    positions = PositionCache(sats, sc.step_ns, sc.duration_ns // sc.step_ns + 2,
                              store_dir=store_dir or _default_store())
    return World(sc, sats, topo, router, sessions, time.perf_counter() - t0, positions)



_STORE: list[str] = []


def _default_store() -> str:
    """A temporary folder for this process's position files, removed at exit."""
    if not _STORE:
        import atexit
        import shutil
        _STORE.append(tempfile.mkdtemp(prefix="satpage-positions-"))
        atexit.register(shutil.rmtree, _STORE[0], True)
    return _STORE[0]


@dataclass
class ChunkResult:
    index: int
    costs: dict[str, CostAccumulator]
    stage_s: dict[str, float]
    uncovered_steps: int
    client_steps: int


def _new_acc(w: World) -> CostAccumulator:
    sc = w.scenario
    return CostAccumulator(n_sats=w.sats.n_sats, n_link_ids=w.topology.n_link_ids,
                           load_bins=sc.network.load_bins, duration_ns=sc.duration_ns,
                           page_bytes=sc.workload.page_bytes)


def chunk_trace(w: World, i: int) -> ChunkTrace:
    first, rows = w.chunk_rows(i)
    return build_trace(w.scenario, w.sats, rows, i, first, w.positions)


def chunk_traces(w: World) -> Iterator[Trace]:
    """The scenario's traces, chunk by chunk (what `--backend cluster` replays)."""
    for i in range(w.n_chunks):
        yield chunk_trace(w, i).trace


def strategy_for(sc: Scenario, name: str) -> pager.Strategy:
    """pager's Strategy for a strategy name of the scenario, with its parameters."""
    st = sc.strategies
    return pager.make_strategy(name, hot_k=st.hot_k, push_recent_visits=st.push_recent_visits,
                               push_lead_ns=int(round(st.push_lead_s * 1e9)))


def replay_strategy(trace: Trace, strategy: pager.Strategy) -> pager.Replay:
    """pager's replay with what the cost accounting reads: the event log, creations
    included, and the pages each visit's satellite holds at the session end."""
    return pager.replay(trace, strategy, events=True, log_creations=True)


def run_chunk(w: World, i: int, into: dict[str, CostAccumulator] | None = None
              ) -> ChunkResult:
    """One chunk under every strategy; its costs are added to ``into`` when given (the
    sums are integers, so accumulating chunks in any grouping gives the same totals)."""
    sc = w.scenario
    stage = dict.fromkeys(STAGES, 0.0)
    t0 = time.perf_counter()
    ct = chunk_trace(w, i)
    stage["schedule"] = time.perf_counter() - t0
    costs = {}
    for name in sc.strategies.compare:
        t1 = time.perf_counter()
        rl = replay_strategy(ct.trace, strategy_for(sc, name))
        t2 = time.perf_counter()
        acc = into[name] if into is not None else _new_acc(w)
        acc.add(rl, ct, w.router, sc.step_ns, sc.network.per_hop_processing_ms)
        del rl
        stage["replay"] += t2 - t1
        stage["costs"] += time.perf_counter() - t2
        costs[name] = acc
    return ChunkResult(i, into if into is not None else costs, stage, ct.uncovered_steps,
                       ct.client_steps)


# -- processes --------------------------------------------------------------------------------
_WORLD: World | None = None


def _init_worker(sc: Scenario, store_dir: str | None) -> None:
    global _WORLD
    logging.getLogger().setLevel(logging.WARNING)
    # parallelism comes from the processes: one engine thread each avoids oversubscription
    import numba
    numba.set_num_threads(1)
    _WORLD = prepare(sc, store_dir)


def _worker_chunks(chunks: range) -> ChunkResult:
    """A group of consecutive chunks accumulated in the worker: one result to send back
    per group, not per chunk (the accumulators are megabytes at constellation scale)."""
    assert _WORLD is not None
    into = {name: _new_acc(_WORLD) for name in _WORLD.scenario.strategies.compare}
    total = ChunkResult(chunks.start, into, dict.fromkeys(STAGES, 0.0), 0, 0)
    for i in chunks:
        r = run_chunk(_WORLD, i, into)
        for k, v in r.stage_s.items():
            total.stage_s[k] += v
        total.uncovered_steps += r.uncovered_steps
        total.client_steps += r.client_steps
    return total


@dataclass
class RunResult:
    scenario: Scenario
    world: World
    costs: dict[str, CostAccumulator]
    stage_s: dict[str, float] = field(default_factory=dict)
    wall_s: float = 0.0
    processes: int = 1
    uncovered_steps: int = 0
    client_steps: int = 0

    def summaries(self) -> dict[str, dict]:
        exists = self.world.topology.link_exists()
        return {name: acc.summary(exists) for name, acc in self.costs.items()}


def run_scenario(sc: Scenario, processes: int | None = None,
                 on_chunk: Callable[[int, int], None] | None = None,
                 world: World | None = None) -> RunResult:
    """Run every chunk (in this process or ``processes`` workers) and merge in order.
    ``on_chunk(done, total)`` is called after each chunk (progress bars)."""
    t0 = time.perf_counter()
    procs = processes or sc.run.processes
    w = world or prepare(sc)
    n = w.n_chunks
    costs = {name: _new_acc(w) for name in sc.strategies.compare}
    stage = dict.fromkeys(STAGES, 0.0)
    stage["sessions"] = w.setup_s
    res = RunResult(sc, w, costs, stage, processes=procs)

    def absorb(r: ChunkResult, done: int) -> None:
        if r.costs is not costs:
            for name, acc in r.costs.items():
                costs[name].merge(acc)
        for k, v in r.stage_s.items():
            stage[k] += v
        res.uncovered_steps += r.uncovered_steps
        res.client_steps += r.client_steps
        if on_chunk:
            on_chunk(done, n)

    if procs <= 1 or n <= 1:
        for i in range(n):
            absorb(run_chunk(w, i, costs), i + 1)
    else:
        # spawn, not fork: the engine's threads (OpenMP) must not be forked
        with ProcessPoolExecutor(max_workers=procs, initializer=_init_worker,
                                 initargs=(sc, str(w.positions.path.parent)
                                           if w.positions.path else None),
                                 mp_context=multiprocessing.get_context("spawn")) as ex:
            # about four groups per process: balanced load, few results to send back
            size = max(1, -(-n // (4 * procs)))
            groups = [range(i, min(n, i + size)) for i in range(0, n, size)]
            for g, r in zip(groups, ex.map(_worker_chunks, groups), strict=True):
                absorb(r, g.stop)
    res.wall_s = time.perf_counter() - t0
    if res.uncovered_steps:
        frac = res.uncovered_steps / max(res.client_steps, 1)
        (log.warning if frac > 0.01 else log.info)(
            "%d of %d client steps had no satellite above %.1f deg elevation (the previous "
            "server was kept)", res.uncovered_steps, res.client_steps,
            sc.handover.min_elevation_deg)
    return res
