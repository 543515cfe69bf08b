"""The handover simulation: scenario -> satellites, ISL routing, sessions -> traces ->
replay per strategy -> costs. This is what `satpage compare` runs.

sim only joins: routing is orbit_model's (``IslNetwork`` and its ``RoutingSnapshots``),
handover schedules are orbit_model's (``session_schedule``, in satpage.workload),
pages, trails and the replay are pager's.

Work is split into chunks of ``run.chunk_sessions`` sessions (start-time order).
Chunk ``i`` draws its randomness from ``SeedSequence(seed, spawn_key=(1 + i,))``
and the session table from ``spawn_key=(0,)``, and chunk results are merged in
any order with integer sums and maxima, so the same scenario and seed give the
same numbers in-process and on Dask with any number of workers (satpage.parallel;
tests/test_simulate.py and tests/test_dask.py check it).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import pager
from orbit_model import IslNetwork, RoutingSnapshots
from pager import Trace
from satpage.costs import CostAccumulator
from satpage.geometry import PositionCache, SatelliteSet
from satpage.linkmodel import LinkModel, background_utilisation
from satpage.scenario import Scenario, compared_strategies
from satpage.workload import ChunkTrace, build_trace, make_sessions

__all__ = ["World", "RunResult", "prepare", "routing_snapshots", "run_scenario", "chunk_traces",
           "chunk_trace",
           "strategy_for", "replay_strategy", "STAGES", "ENGINE"]

log = logging.getLogger(__name__)

STAGES = ("sessions", "schedule", "replay", "costs", "faults")

#: the replay engine compare runs (pager's); reports record it.
ENGINE = "pager"


@dataclass(eq=False)
class World:
    """What every chunk needs: satellites, routing, the session table, the link model.

    ``routing`` is orbit_model's ``RoutingSnapshots`` (link ids are rows of
    ``routing.links.endpoints``); ``topology`` and ``router`` name the same object
    (per-link summaries and cost accounting read it under those names)."""

    scenario: Scenario
    sats: SatelliteSet
    routing: RoutingSnapshots
    sessions: np.ndarray
    setup_s: float
    positions: PositionCache
    links: LinkModel | None = None
    failures: pager.FailureSchedule = field(default_factory=pager.FailureSchedule.none)
    ring: pager.ReplicaRing | None = None

    @functools.cached_property
    def _strategies(self) -> dict[str, pager.Strategy]:
        return compared_strategies(self.scenario)

    def strategies(self) -> dict[str, pager.Strategy]:
        """The pager Strategy object of each compared strategy, by the name it reports
        under (built-in or plugin: satpage.scenario.compared_strategies)."""
        return dict(self._strategies)

    @property
    def topology(self) -> RoutingSnapshots:
        return self.routing

    @property
    def router(self) -> RoutingSnapshots:
        return self.routing

    @property
    def n_chunks(self) -> int:
        c = self.scenario.run.chunk_sessions
        return (self.sessions.size + c - 1) // c

    def chunk_rows(self, i: int) -> tuple[int, np.ndarray]:
        c = self.scenario.run.chunk_sessions
        return i * c, self.sessions[i * c:(i + 1) * c]


def prepare(sc: Scenario) -> World:
    """Satellites, routing, the session table and the position cache (large runs build
    positions block by block as chunks ask: satpage.geometry.PositionCache)."""
    t0 = time.perf_counter()
    sats = SatelliteSet(sc.constellation.spec, sc.epoch)
    routing = routing_snapshots(sc, sats)
    sessions = make_sessions(sc)
    positions = PositionCache(sats, sc.step_ns, sc.duration_ns // sc.step_ns + 2)
    links = link_model(sc, sats, routing)
    failures = failure_schedule(sc, sats.n_sats)
    return World(sc, sats, routing, sessions, time.perf_counter() - t0, positions, links,
                 failures, replica_ring(sats))


#: SeedSequence spawn key of the failure schedule (the session table has (0,), the view
#: sample (0, 1), chunk i (1 + i,)).
FAILURE_SPAWN_KEY = (0, 2)


def failure_schedule(sc: Scenario, n_sats: int) -> pager.FailureSchedule:
    """The scenario's satellite failures, drawn from ``SeedSequence(seed, spawn_key=(0, 2))``
    (the same in every process: a Dask worker that builds the World draws the same)."""
    f = sc.faults
    if f.count > n_sats:
        raise ValueError(f"{sc.source}: faults.count = {f.count!r}: more than the "
                         f"{n_sats} satellites of {sc.constellation.spec}")
    rng = np.random.default_rng(np.random.SeedSequence(sc.seed, spawn_key=FAILURE_SPAWN_KEY))
    return pager.FailureSchedule.draw(n_sats, sc.duration_ns, rng, count=f.count,
                                      rate_per_sat_day=f.rate_per_sat_day,
                                      repair_after_ns=int(round(f.repair_after_s * 1e9)))


def replica_ring(sats: SatelliteSet) -> pager.ReplicaRing:
    """The in-plane rings of the placement rule: planes are per shell (orbit_model's
    shell, plane and slot of each satellite)."""
    key = np.where(sats.plane >= 0, sats.shell * 1_000_000 + sats.plane, -1)
    return pager.ReplicaRing.from_planes(key, sats.slot)


def routing_snapshots(sc: Scenario, sats: SatelliteSet) -> RoutingSnapshots:
    """orbit_model's routing of the scenario: its +Grid, the latitude cut-off (none at 90
    deg or more), one snapshot per ``time.routing_step_s``."""
    cutoff = sc.constellation.isl_latitude_cutoff_deg
    step_ns = int(round(sc.time.routing_step_s * 1e9))
    network = IslNetwork(sats.constellation, latitude_cutoff_deg=cutoff if cutoff < 90.0 else None,
                         resolution_ns=step_ns)
    return RoutingSnapshots(network, step_ns)


def link_model(sc: Scenario, sats: SatelliteSet, routing: RoutingSnapshots) -> LinkModel:
    """Capacity and background load of every ISL in every load bin of the scenario."""
    net = sc.network
    bins = net.load_bins
    ends = routing.links.endpoints                  # link id = row (orbit_model)
    ids = np.arange(ends.shape[0])
    bin_ns = sc.duration_ns / bins
    if net.background_load > 0 and net.background_profile == "population":
        mid_ns = np.round((np.arange(bins) + 0.5) * bin_ns).astype(np.int64)
        pos = sats.positions_km(mid_ns)
    else:
        pos = np.zeros((sats.n_sats, bins, 3))
    bg = background_utilisation(net.background_profile, net.background_load, ends, pos,
                                sats.altitude_km, sc.handover.min_elevation_deg,
                                sc.clients.source, routing.n_link_ids, ids)
    return LinkModel(net.isl_capacity_gbps, sc.workload.page_bytes, bin_ns / 1e9, bg)


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
    """pager's Strategy for a name the scenario's run reports (a compared strategy, plugins
    included) or a built-in name, with the scenario's settings."""
    compared = compared_strategies(sc)
    if name in compared:
        return compared[name]
    return compared_strategies(dataclasses.replace(
        sc, strategies=dataclasses.replace(sc.strategies, compare=(name,), params={})))[name]


def replay_strategy(trace: Trace, strategy: pager.Strategy) -> pager.Replay:
    """pager's replay with what the cost accounting reads: the event log, creations
    included, and the pages each visit's satellite holds at the session end. The log is
    the one the network carries (``pager.network_log``: replicate-next adds its copies)."""
    r = pager.replay(trace, strategy, events=True, log_creations=True)
    return dataclasses.replace(r, events=pager.network_log(strategy, trace, r.events))


def fault_model(w: World, ct: ChunkTrace) -> pager.FaultModel:
    """pager's failure semantics for one chunk (docs/faults.md): the scenario's failure
    schedule, R replicas on the in-plane rings, writes as ``faults.write_share`` says."""
    f = w.scenario.faults
    assert w.ring is not None
    # with R = 1 a write has no replica to copy to: the writes are not needed
    writes = pager.write_mask(ct.trace, f.write_share) if f.replicas > 1 else None
    return pager.FaultModel(ct.trace, w.failures, w.ring, f.replicas, ct.session_end_ns,
                            recovery_ns=int(round(f.recovery_s * 1e9)), writes=writes)


def fault_outcome(fm: pager.FaultModel, rl: pager.Replay, strategy: pager.Strategy
                  ) -> pager.FaultOutcome:
    """One strategy's losses and replication traffic (replicate-next's next server is an
    extra holder of every page)."""
    return fm.apply(rl.events, next_server_holds=pager.network_use(strategy).replicate_next)


def run_chunk(w: World, i: int, into: dict[str, CostAccumulator] | None = None,
              waits: dict[str, np.ndarray] | None = None) -> ChunkResult:
    """One chunk under every strategy; its costs are added to ``into`` when given (the
    sums are integers, so accumulating chunks in any grouping gives the same totals).
    ``waits``: per strategy, the queueing wait (ms) of each link in each bin; the
    background load's alone when not given (``run_scenario`` explains the passes)."""
    sc = w.scenario
    stage = dict.fromkeys(STAGES, 0.0)
    t0 = time.perf_counter()
    ct = chunk_trace(w, i)
    stage["schedule"] = time.perf_counter() - t0
    costs = {}
    base_wait = w.links.background_wait_ms if w.links is not None else None
    t_f = time.perf_counter()
    fm = fault_model(w, ct) if sc.faults.active else None
    stage["faults"] += time.perf_counter() - t_f
    for name, strategy in w.strategies().items():
        t1 = time.perf_counter()
        rl = replay_strategy(ct.trace, strategy)
        t2 = time.perf_counter()
        acc = into[name] if into is not None else _new_acc(w)
        acc.add(rl, ct, w.router, sc.step_ns, sc.network.per_hop_processing_ms, strategy,
                w.links, waits[name] if waits is not None else base_wait)
        t3 = time.perf_counter()
        if fm is not None:
            acc.add_faults(fault_outcome(fm, rl, strategy))
        stage["faults"] += time.perf_counter() - t3
        del rl
        stage["replay"] += t2 - t1
        stage["costs"] += t3 - t2
        costs[name] = acc
    return ChunkResult(i, into if into is not None else costs, stage, ct.uncovered_steps,
                       ct.client_steps)


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
    passes: int = 1
    dask: str | None = None            # the Dask target that ran the chunks (None: in-process)
    peak_rss_mb: float = 0.0           # this process's peak resident set at the end
    workers_peak_rss_mb: list[float] = field(default_factory=list)

    def summaries(self) -> dict[str, dict]:
        exists = self.world.topology.link_exists()
        return {name: acc.summary(exists, self.world.links) for name, acc in self.costs.items()}


#: A second pass is run when the strategies' own traffic changes some link's queueing
#: wait by more than this (ms): below it, every fault latency is within
#: hops x 1e-4 ms of the two-pass value, under the 0.01 ms latency histogram bin.
SECOND_PASS_WAIT_MS = 1e-4


def own_load_waits(w: World, costs: dict[str, CostAccumulator]) -> dict[str, np.ndarray]:
    """Per strategy, the queueing wait (ms) of each link and bin with its own pages
    added to the background load."""
    assert w.links is not None
    return {name: w.links.wait_ms(w.links.utilisation(acc.link_load))
            for name, acc in costs.items()}


def _run_pass(w: World, client: Any, waits: dict[str, np.ndarray] | None,
              on_chunk: Callable[[int, int], None] | None
              ) -> tuple[dict[str, CostAccumulator], dict[str, float], tuple[int, int]]:
    """Every chunk once, in this process or on the Dask ``client``; returns the merged
    costs, stage times and (uncovered, all) client steps."""
    sc = w.scenario
    n = w.n_chunks
    costs = {name: _new_acc(w) for name in w.strategies()}
    stage = dict.fromkeys(STAGES, 0.0)
    steps = [0, 0]

    def absorb(r: ChunkResult, done: int) -> None:
        if r.costs is not costs:
            for name, acc in r.costs.items():
                costs[name].merge(acc)
        for k, v in r.stage_s.items():
            stage[k] += v
        steps[0] += r.uncovered_steps
        steps[1] += r.client_steps
        if on_chunk:
            on_chunk(done, n)

    if client is None:
        for i in range(n):
            absorb(run_chunk(w, i, costs, waits), i + 1)
    else:
        from satpage.parallel import run_chunks
        run_chunks(client, sc, n, absorb, waits)
    return costs, stage, (steps[0], steps[1])


def run_scenario(sc: Scenario, processes: int | None = None,
                 on_chunk: Callable[[int, int], None] | None = None,
                 world: World | None = None, dask: str | None = None) -> RunResult:
    """Run every chunk in this process, or on Dask (``dask``: ``local[:N]`` or
    ``tcp://HOST:PORT``; ``processes`` > 1 alone means ``local:processes``), and merge.
    ``on_chunk(done, total)`` is called as chunks complete (progress bars).

    Queueing makes two passes possible: a link's utilisation in a bin depends on every
    session's transfers, which are only known at the end. The first pass prices the
    queues with the background load alone; when a strategy's own traffic changes some
    link-bin's wait by more than SECOND_PASS_WAIT_MS, every chunk is priced again with
    background plus own load (the loads themselves do not depend on the waits, so the
    second pass is exact). Both passes are deterministic."""
    from satpage.allocator import tune_allocator
    from satpage.parallel import dask_client, parse_dask, peak_rss_mb, workers_peak_rss_mb

    t0 = time.perf_counter()
    tune_allocator()  # as every Dask worker does (satpage.parallel._world)
    procs = processes or sc.run.processes
    if dask is None and procs > 1:
        dask = f"local:{procs}"
    w = world or prepare(sc)
    with contextlib.ExitStack() as stack:
        client = None
        if dask is not None:
            target = parse_dask(dask)
            client = stack.enter_context(dask_client(target))
        costs, stage, unc = _run_pass(w, client, None, on_chunk)
        passes = 1
        if w.links is not None:
            base = w.links.background_wait_ms
            waits = own_load_waits(w, costs)
            if max(float(np.max(np.abs(v - base), initial=0.0)) for v in waits.values()) \
                    > SECOND_PASS_WAIT_MS:
                log.info("own traffic changes the queueing waits: pricing a second pass")
                costs, stage2, unc = _run_pass(w, client, waits, on_chunk)
                for k, v in stage2.items():
                    stage[k] += v
                passes = 2
        stage["sessions"] = w.setup_s
        res = RunResult(sc, w, costs, stage, processes=1, uncovered_steps=unc[0],
                        client_steps=unc[1], passes=passes)
        if client is not None:
            res.dask = target.text
            res.processes = len(client.scheduler_info(n_workers=-1)["workers"])
            res.workers_peak_rss_mb = workers_peak_rss_mb(client)
    res.wall_s = time.perf_counter() - t0
    res.peak_rss_mb = round(peak_rss_mb(), 1)
    if res.uncovered_steps:
        frac = res.uncovered_steps / max(res.client_steps, 1)
        (log.warning if frac > 0.01 else log.info)(
            "%d of %d client steps had no satellite above %.1f deg elevation (the previous "
            "server was kept)", res.uncovered_steps, res.client_steps,
            sc.handover.min_elevation_deg)
    for name, acc in res.costs.items():
        moves = acc.counts.get("page_moves", 0)
        if acc.unreachable > 0.01 * max(moves, 1):
            # e.g. a multi-shell constellation: no ISLs join two shells (docs/orbit-model.md)
            log.warning("%s: %d of %d page transfers had no ISL path (counted with 0 hops, "
                        "unreachable_transfers in the report)", name, acc.unreachable, moves)
    return res
