"""One way to replay a chunk of sessions: the ``Backend`` protocol, with the engine
(pager's replay priced by ``satpage.costs``) and a cluster (the real service, local or
deployed: ``satpage.cluster.replayer``) as its implementations.

``replay(chunk, strategy, failures)`` returns a ``ReplayResult``: the counts, the
losses to the failures (an empty schedule, or None, is a failure-free run), the
replication traffic, and the latencies measured. ``satpage.comparator`` sets one
backend's result beside another's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

__all__ = ["Backend", "ClusterBackend", "EngineBackend", "LatencySummary", "ReplayResult",
           "LOSS_KEYS", "REPLICATION_KEYS"]

#: what a replay lost to its failures
LOSS_KEYS = ("pages_lost", "sessions_hit", "page_tables_lost")
#: the replication traffic at R > 1 (docs/faults.md)
REPLICATION_KEYS = ("replication_copies", "replication_page_hops", "replication_bytes")


@dataclass(frozen=True)
class LatencySummary:
    """Latencies in ms of n events: mean, median and 99th percentile."""

    n: int
    mean_ms: float
    p50_ms: float
    p99_ms: float

    @classmethod
    def from_ms(cls, values_ms) -> LatencySummary:
        x = np.asarray(values_ms, np.float64).reshape(-1)
        if not x.size:
            return cls(0, float("nan"), float("nan"), float("nan"))
        return cls(int(x.size), float(x.mean()), float(np.percentile(x, 50)), float(np.percentile(x, 99)))

    def as_dict(self, digits: int = 3) -> dict:
        """``{"n", "mean", "p50", "p99"}`` (the live demo's JSON; only n when empty)."""
        if self.n == 0:
            return {"n": 0}
        return {"n": self.n, "mean": round(self.mean_ms, digits), "p50": round(self.p50_ms, digits),
                "p99": round(self.p99_ms, digits)}


@dataclass(frozen=True)
class ReplayResult:
    """What one backend measured for one chunk and strategy.

    counts: movements, page-hops, pages created, left behind and deleted, sessions and
    accesses (``replayer.COUNT_KEYS`` at least); losses: ``LOSS_KEYS`` (and what the
    backend adds); replication: ``REPLICATION_KEYS`` when measured; latency: by name,
    e.g. ``fault_latency_ms``; kills: the satellites a cluster killed
    (``{"satellite", "fail_ns", "restart_s"}``); fault_ns: each moved read's wait as its
    serving satellite measured it (a cluster's; kept whole so that the waits of several
    chunks pool into one percentile)."""

    counts: dict = field(default_factory=dict)
    losses: dict = field(default_factory=dict)
    replication: dict = field(default_factory=dict)
    latency: dict = field(default_factory=dict)
    kills: tuple = ()
    fault_ns: tuple = ()

    def figures(self) -> dict:
        """Everything as one mapping for ``comparator.compare_figures``."""
        return {**self.counts, **self.losses, **self.replication,
                **{k: v.as_dict() for k, v in self.latency.items()}}


class Backend(Protocol):
    """Replays one chunk (``satpage.workload.ChunkTrace``: its trace and when each session
    ends) with one strategy (a name the backend runs), while the satellites of
    ``failures`` (``pager.FailureSchedule``; None: none) fail. ``writes`` bool
    (accesses,): the accesses that are writes (None: the backend's default)."""

    def replay(self, chunk, strategy: str, failures=None, *, writes=None) -> ReplayResult: ...


#: the engine's counts (satpage.costs names) behind replayer.COUNT_KEYS
ENGINE_COUNT = {"sessions": "sessions", "accesses": "accesses", "pages_created": "creates",
                "page_moves": "page_moves", "page_hops": "page_hops",
                "pages_left_behind": "pages_left_behind", "pages_deleted": "pages_at_session_end"}


class EngineBackend:
    """The engine: ``pager.replay`` of the scenario's strategy, priced on the world's
    routing (``satpage.costs.CostAccumulator``), and with failures or R > 1 the
    ``pager.FaultModel`` of the same chunk (losses, replication traffic). Strategy names
    are the scenario's (``simulate.strategy_for``). ``totals``: each strategy's
    ``CostAccumulator`` over every chunk replayed (its latency percentiles are the run's,
    which per-chunk results cannot give)."""

    def __init__(self, world, *, replicas: int = 1, recovery_ns: int = 0) -> None:
        self.world = world
        self.replicas = int(replicas)
        self.recovery_ns = int(recovery_ns)
        self._fm = None  # (chunk, failures, writes, FaultModel): one model for every strategy
        self.totals: dict = {}

    def _fault_model(self, chunk, failures, writes):
        import pager

        key = self._fm
        if key is None or key[0] is not chunk or key[1] is not failures or key[2] is not writes:
            schedule = pager.FailureSchedule.none() if failures is None else failures
            fm = pager.FaultModel(chunk.trace, schedule, self.world.ring, self.replicas,
                                  chunk.session_end_ns, recovery_ns=self.recovery_ns, writes=writes)
            self._fm = key = (chunk, failures, writes, fm)
        return key[3]

    def replay(self, chunk, strategy: str, failures=None, *, writes=None) -> ReplayResult:
        from satpage.costs import CostAccumulator
        from satpage.simulate import replay_strategy, strategy_for

        w, sc = self.world, self.world.scenario
        rl = replay_strategy(chunk.trace, strategy_for(sc, strategy))
        acc = CostAccumulator(w.sats.n_sats, w.topology.n_link_ids, 1, sc.duration_ns, sc.workload.page_bytes)
        acc.add(rl, chunk, w.router, sc.step_ns, sc.network.per_hop_processing_ms)
        if strategy in self.totals:
            self.totals[strategy].merge(acc)
        else:
            self.totals[strategy] = acc
        counts = {k: int(acc.counts[v]) for k, v in ENGINE_COUNT.items()}
        if failures is None and self.replicas == 1:
            return ReplayResult(counts=counts, losses=dict.fromkeys(LOSS_KEYS, 0),
                                replication=dict.fromkeys(REPLICATION_KEYS, 0))
        o = self._fault_model(chunk, failures, writes).apply(rl.events)
        hops = int(o.replica_hops.sum())
        return ReplayResult(
            counts=counts,
            losses={"pages_lost": int(o.pages_lost.sum()), "sessions_hit": int(o.sessions_hit),
                    "page_tables_lost": int(o.table_lost.sum())},
            replication={"replication_copies": int(o.replica_copies.sum()), "replication_page_hops": hops,
                         "replication_bytes": hops * int(sc.workload.page_bytes),
                         "rereplication_copies": int(o.rereplica_copies.sum()),
                         "rereplication_page_hops": int(o.rereplica_hops.sum())})


class ClusterBackend:
    """The service: a cluster reached at ``target`` (``replayer.Target``: a local cluster,
    or a deployment behind --target with a kill command). With ``local`` (the
    ``ClusterState`` of a local cluster) the replication traffic its satnodes counted
    during each replay is read too. ``read_back``: the loss check after each session
    (``replayer``); on whenever failures are given."""

    def __init__(self, target, *, local=None, read_back: bool = False, settle_s: float = 0.0,
                 progress=None) -> None:
        self.target = target
        self.local = local
        self.read_back = read_back
        self.settle_s = settle_s
        self.progress = progress

    def replay(self, chunk, strategy: str, failures=None, *, writes=None,
               busiest_ns: tuple[int, ...] = (), places=None) -> ReplayResult:
        from satpage.cluster.counters import read_replication
        from satpage.cluster.replayer import replay

        local = self.local() if callable(self.local) else self.local
        before = read_replication(local) if local is not None else None
        got = replay(chunk.trace, strategy, self.target, failures,
                     session_end_ns=getattr(chunk, "session_end_ns", None), writes=writes,
                     read_back=self.read_back or failures is not None or bool(busiest_ns),
                     busiest_ns=busiest_ns, settle_s=self.settle_s, progress=self.progress,
                     places=places)
        counted = (read_replication(local) - before).as_dict() if local is not None else {}
        return ReplayResult(counts=got.detailed_counts(), losses=got.losses(), replication=counted,
                            kills=tuple(got.kills),
                            # a session that lost its page table (R = 1) has no counts
                            fault_ns=tuple(f for r in got.sessions if r is not None for f in r.fault_ns))
