"""Failure-free replays through a cluster's gateway for ``satpage compare`` and
``satpage paper`` (``replayer.replay`` with no failures), and the gateway they go to
(``resolve_target``: a given --target, the recorded local cluster, or one started for
the replay). What the cluster reports is measured by the satellites; nothing here
computes a hop count.
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from satpage.cluster import replayer
from satpage.cluster.local import (
    DEFAULT_CONSTELLATION,
    ClusterState,
    cluster_down,
    cluster_up,
    load_state,
    schedule_digest,
)

__all__ = ["STRATEGIES", "SessionCounts", "local_state", "replay_paper", "replay_sessions",
           "replay_trace", "resolve_target"]

log = logging.getLogger(__name__)

STRATEGIES = replayer.STRATEGIES
SessionCounts = replayer.SessionCounts

#: Sessions replayed at once; each session's requests are sequential.
DEFAULT_CONCURRENCY = replayer.DEFAULT_CONCURRENCY

#: gateway -> the local cluster resolve_target started or found for it (its satnodes'
#: metrics are readable: satpage.cluster.counters)
_LOCAL: dict[str, ClusterState] = {}


def local_state(gateway: str) -> ClusterState | None:
    """The local cluster behind gateway when resolve_target started or found it (None
    for a given --target: its satellites are not known here)."""
    return _LOCAL.get(gateway)


def replay_sessions(trace, strategy, target: str, *, rows: bool = False,
                    concurrency: int = DEFAULT_CONCURRENCY,
                    tls_dir: Path | None = None,
                    writes: np.ndarray | None = None) -> list[SessionCounts]:
    """Replay every session of trace with strategy (``"on-demand"``, ``"proactive"``
    or a pager strategy with that ``name``) through the gateway at target, over
    mutual TLS with the material in tls_dir (default: ``tls_dir_for(target)``;
    plain text when there is none), without failures (``replayer.replay``).
    ``writes`` bool (accesses,): the accesses sent as WritePage
    (``pager.write_mask``); None: every access a read."""
    got = replayer.replay(trace, strategy, replayer.Target(target, tls_dir), rows=rows, writes=writes,
                          concurrency=concurrency)
    return got.sessions


@contextlib.contextmanager
def resolve_target(target: str | None, constellation: str | None = None,
                   isl_schedule: Path | None = None, replicas: int = 1,
                   links: dict | None = None) -> Iterator[str]:
    """target itself; else the gateway of the running local cluster recorded in
    ``$SATPAGE_CLUSTER_DIR`` (default .cluster); else a local cluster of
    constellation (default ``$SATPAGE_CLUSTER_CONSTELLATION`` or the default
    constellation) started for the duration of the block and stopped after.

    isl_schedule is the ISL schedule the replay's counts need (None: the
    time-invariant +Grid). A recorded cluster is used only when it routes on the
    same schedule; a target cannot be checked, so it is refused with a schedule.
    replicas is R of a cluster started here (a recorded cluster keeps its own).
    links are cluster_up's link emulation keywords for a cluster started here
    (``link_epoch``, ``link_hours``, ``isl_capacity_gbps``, ``per_hop_processing_ms``:
    the scenario's), so its
    links are timed by the scenario's positions (docs/emulation.md); a recorded
    cluster timed from another epoch is used, with a warning (its counts hold, its
    latencies are another sky's)."""
    constellation = constellation or os.environ.get("SATPAGE_CLUSTER_CONSTELLATION",
                                                    DEFAULT_CONSTELLATION)
    if target:
        if isl_schedule is not None:
            raise ValueError(f"--target {target}: a latitude cut-off needs the satnodes to route on "
                             "the scenario's ISL schedule, which a given target cannot be checked "
                             "for; drop --target and a local cluster with the schedule is started")
        yield target
        return
    want = None if isl_schedule is None else schedule_digest(isl_schedule)
    state = load_state()
    if state is not None and state.processes:
        if state.isl_schedule_sha256 != want:
            routes = (f"on the ISL schedule {state.isl_schedule}" if state.isl_schedule
                      else "on the time-invariant +Grid")
            needs = "another ISL schedule" if want else "the time-invariant +Grid"
            raise ValueError(f"the running local cluster in {state.state_dir} routes {routes}, and this "
                             f"replay needs {needs}: run `satpage cluster down` first")
        if state.replicas != replicas:
            log.warning("the running local cluster in %s has --replicas %d, the scenario %d: "
                        "its replication counts are not the engine's", state.state_dir,
                        state.replicas, replicas)
        want_epoch = (links or {}).get("link_epoch")
        if want_epoch and state.links and not _same_instant(state.links.get("epoch"), want_epoch):
            log.warning("the running local cluster in %s times its links from %s, the scenario "
                        "starts at %s: its latencies are not the scenario's", state.state_dir,
                        state.links.get("epoch"), want_epoch)
        _LOCAL[state.gateway] = state
        try:
            yield state.gateway
        finally:
            _LOCAL.pop(state.gateway, None)
        return
    base = int(os.environ.get("SATPAGE_CLUSTER_PORT_BASE", "0")) or None  # None: a free range
    with tempfile.TemporaryDirectory(prefix="satpage-cluster-") as tmp:
        log.info("starting a local cluster (%s) for this replay", constellation)
        st = cluster_up(constellation, state_dir=Path(tmp), port_base=base, isl_schedule=isl_schedule,
                        replicas=replicas, **(links or {}))
        _LOCAL[st.gateway] = st
        try:
            yield st.gateway
        finally:
            _LOCAL.pop(st.gateway, None)
            cluster_down(Path(tmp))


def _same_instant(a: str | None, b: str) -> bool:
    import datetime as dt

    try:
        return (dt.datetime.fromisoformat(str(a).replace("Z", "+00:00"))
                == dt.datetime.fromisoformat(b.replace("Z", "+00:00")))
    except ValueError:
        return False


def _free_port_base(constellation: str) -> int:
    """A free port base for a local cluster of ``constellation`` (local.free_port_base)."""
    from satpage.cluster.local import free_port_base, satellites_in

    return free_port_base(satellites_in(constellation))


def replay_trace(trace, strategy, *, target: str | None = None,
                 tls_dir: Path | None = None, writes: np.ndarray | None = None,
                 places: np.ndarray | None = None) -> dict:
    """Replay trace with one strategy and return its totals as plain numbers
    (``ClusterReplay.detailed_counts``), and under ``fault_ns`` the wait of every moved
    page read, as its serving satellite measured it; tls_dir and writes as in
    replay_sessions, places (the sessions' ground places) as in ``replayer.replay``.
    ``satpage compare --backend cluster`` goes through ``satpage.backend.ClusterBackend``."""
    with resolve_target(target) as gw:
        got = replayer.replay(trace, strategy, replayer.Target(gw, tls_dir), writes=writes, places=places)
    out = got.detailed_counts()
    moves, hops = out.pop("page_moves"), out.pop("page_hops")
    out["fault_ns"] = [f for r in got.sessions for f in r.fault_ns]  # not a total: the faults measured
    out["page_moves"], out["page_hops"] = moves, hops
    return out


def replay_paper(trace, *, target: str | None = None):
    """Replay the paper trace (``pager.paper_trace``) on demand and proactively and
    return ``pager.PaperCounts`` with Table I rows (the ``satpage paper --backend
    cluster`` interface)."""
    import pager

    if trace.n_sessions > 100:
        log.warning("replaying %d sessions (%d accesses, twice: on-demand and proactive) "
                    "through the cluster; at a few thousand accesses per second this takes "
                    "a while (the engine is the fast path)", trace.n_sessions, trace.n_accesses)
    with resolve_target(target) as gw:
        od = replay_sessions(trace, "on-demand", gw, rows=True)
        pr = replay_sessions(trace, "proactive", gw, rows=False)
    return pager.PaperCounts.from_runs(
        totals=np.stack([r.totals for r in od]),
        last_row=np.stack([r.rows[-1] for r in od]),
        rows=np.stack([r.rows for r in od]),
        ondemand_moves=np.array([r.ondemand_moves for r in od], dtype=np.int64),
        ondemand_hops=np.array([r.ondemand_hops for r in od], dtype=np.int64),
        proactive_moves=np.array([r.proactive_moves for r in pr], dtype=np.int64),
        proactive_hops=np.array([r.proactive_hops for r in pr], dtype=np.int64),
    )


