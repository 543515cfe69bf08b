"""The replay driver: sends a Trace through a cluster's gateway and reads the counts
back. What the cluster reports is measured by the satellites (every relay counts its
ISL hop); nothing here computes a hop count.

Each session of the trace is registered with its schedule of serving satellites
(handovers are predictable), then each visit's accesses go out as one ReadPages
batch; for the paper, the session's page distribution is read after every visit
(``SessionStats``), which gives Table I row by row.
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from satpage.cluster.local import (
    DEFAULT_CONSTELLATION,
    ClusterState,
    cluster_down,
    cluster_up,
    load_state,
    schedule_digest,
)
from satpage_client.channel import open_channel, tls_dir_for, token_metadata

__all__ = ["SessionCounts", "local_state", "replay_paper", "replay_sessions", "replay_trace",
           "resolve_target"]

log = logging.getLogger(__name__)

STRATEGIES = {"on-demand": 1, "ondemand": 1, "proactive": 2}  # satpage.v1.Strategy values
#: Sessions replayed at once; each session's requests are sequential.
DEFAULT_CONCURRENCY = 4
RPC_TIMEOUT_S = 120.0

#: gateway -> the local cluster resolve_target started or found for it (its satnodes'
#: metrics are readable: satpage.cluster.counters)
_LOCAL: dict[str, ClusterState] = {}


def local_state(gateway: str) -> ClusterState | None:
    """The local cluster behind gateway when resolve_target started or found it (None
    for a given --target: its satellites are not known here)."""
    return _LOCAL.get(gateway)


@dataclass(frozen=True)
class SessionCounts:
    """One session replayed through the cluster (arrays over its V visits)."""

    rows: np.ndarray  # (V, V) int64: frames held by visit j's satellite at the end of visit k
    totals: np.ndarray  # (V,) page-table entries at the end of each visit
    ondemand_moves: int
    ondemand_hops: int
    proactive_moves: int
    proactive_hops: int
    accesses: int
    created: int
    pages_deleted: int
    fault_ns: list[int] = field(default_factory=list)  # each moved read's wait (ReadPageResponse.fault_ns)


def _strategy(strategy) -> int:
    name = getattr(strategy, "name", strategy)
    try:
        return STRATEGIES[str(name)]
    except KeyError:
        raise ValueError(f"the cluster implements the strategies on-demand and proactive, "
                         f"got {name!r}") from None


def _send_accesses(page, session_id: str, pages: np.ndarray, times: np.ndarray,
                   writes: np.ndarray | None, md) -> list[int]:
    """One visit's accesses in order: runs of reads as ReadPages batches, each write a
    WritePage (its page's bytes: the session and access, so every write is new).
    Returns the faults' waits (ns, measured by the serving satellite: ReadPageResponse
    fault_ns) of the moved pages read."""
    from satpage_client.rpc import satpage_pb2 as pb

    n = pages.size
    faults: list[int] = []
    cuts = [0, n] if writes is None else sorted({0, n, *np.flatnonzero(writes).tolist(),
                                                 *(np.flatnonzero(writes) + 1).tolist()})
    for a, b in zip(cuts[:-1], cuts[1:], strict=True):
        if a >= b:
            continue
        if writes is not None and writes[a]:
            page.WritePage(pb.WritePageRequest(session_id=session_id, page=int(pages[a]),
                                               scenario_time_ns=int(times[a]),
                                               data=f"{session_id}/{a}".encode()),
                           timeout=RPC_TIMEOUT_S, metadata=md)
            continue
        for c in range(a, b, 50_000):
            e = min(b, c + 50_000)
            r = page.ReadPages(pb.ReadPagesRequest(
                session_id=session_id, pages=pages[c:e].tolist(),
                scenario_time_ns=times[c:e].tolist(), omit_data=True), timeout=RPC_TIMEOUT_S,
                metadata=md)
            faults += [x.fault_ns for x in r.results if x.outcome == pb.OUTCOME_MOVED]
    return faults


def _replay_session(stubs, trace, s: int, strategy: int, session_id: str,
                    rows_wanted: bool, writes: np.ndarray | None = None) -> SessionCounts:
    from satpage_client.rpc import satpage_pb2 as pb

    page, control = stubs
    v0, v1 = int(trace.visit_offsets[s]), int(trace.visit_offsets[s + 1])
    nv = v1 - v0
    if nv == 0:
        raise ValueError(f"session {s} of the trace has no visits")
    sats = trace.visit_satellite[v0:v1]
    starts = trace.visit_start_ns[v0:v1]
    visits = [pb.Visit(satellite=int(a), start_ns=int(b)) for a, b in zip(sats, starts, strict=True)]
    reg = control.RegisterSession(pb.RegisterSessionRequest(
        session_id=session_id, visits=visits, strategy=strategy, table_pages=int(trace.n_pages)),
        timeout=RPC_TIMEOUT_S)
    md = token_metadata(reg.token)  # the session's capability, on every later call
    rows = np.zeros((nv, nv), dtype=np.int64)
    totals = np.zeros(nv, dtype=np.int64)
    st = None
    faults: list[int] = []
    try:
        for k in range(nv):
            a0, a1 = int(trace.access_offsets[v0 + k]), int(trace.access_offsets[v0 + k + 1])
            # Accesses carry the visit's times; one clamped to the visit start keeps
            # the gateway's schedule and the trace's visit assignment the same.
            t = np.maximum(trace.access_time_ns[a0:a1], starts[k])
            if k + 1 < nv and a1 > a0 and t[-1] >= starts[k + 1]:
                raise ValueError(f"session {s}: access at {int(t[-1])} ns falls after visit {k + 1} "
                                 f"starts at {int(starts[k + 1])} ns")
            faults += _send_accesses(page, session_id, np.asarray(trace.access_page[a0:a1]), t,
                                     None if writes is None else writes[a0:a1], md)
            if rows_wanted or k == nv - 1:
                st = control.SessionStats(pb.SessionStatsRequest(
                    session_id=session_id, scenario_time_ns=int(starts[k])), timeout=RPC_TIMEOUT_S,
                    metadata=md)
                rows[k, : k + 1] = st.frames_by_visit
                totals[k] = st.table_pages[-1]
        assert st is not None
        if rows_wanted:
            totals[:] = list(st.table_pages)
        else:
            totals[: len(st.table_pages)] = st.table_pages
    finally:
        end = page.EndSession(pb.EndSessionRequest(session_id=session_id,
                                                   scenario_time_ns=int(starts[-1])),
                              timeout=RPC_TIMEOUT_S, metadata=md)
    return SessionCounts(rows=rows, totals=totals, ondemand_moves=st.ondemand_moves,
                         ondemand_hops=st.ondemand_hops, proactive_moves=st.proactive_moves,
                         proactive_hops=st.proactive_hops, accesses=st.accesses,
                         created=st.created, pages_deleted=end.pages_deleted, fault_ns=faults)


def replay_sessions(trace, strategy, target: str, *, rows: bool = False,
                    concurrency: int = DEFAULT_CONCURRENCY,
                    tls_dir: Path | None = None,
                    writes: np.ndarray | None = None) -> list[SessionCounts]:
    """Replay every session of trace with strategy (``"on-demand"``, ``"proactive"``
    or a pager strategy with that ``name``) through the gateway at target, over
    mutual TLS with the material in tls_dir (default: ``tls_dir_for(target)``;
    plain text when there is none). ``writes`` bool (accesses,): the accesses sent
    as WritePage (``pager.write_mask``); None: every access a read."""
    if writes is not None and np.shape(writes) != (trace.n_accesses,):
        raise ValueError(f"writes has shape {np.shape(writes)}, want ({trace.n_accesses},)")
    import grpc

    from satpage_client.rpc import satpage_pb2_grpc as pbg

    code = _strategy(strategy)
    prefix = uuid.uuid4().hex[:10]
    opts = [("grpc.max_receive_message_length", 64 << 20), ("grpc.max_send_message_length", 64 << 20)]
    if tls_dir is None:
        tls_dir = tls_dir_for(target)
    with open_channel(target, tls_dir, options=opts) as ch:
        try:
            grpc.channel_ready_future(ch).result(timeout=10)
        except grpc.FutureTimeoutError:
            raise OSError(f"no gateway answers at {target!r}") from None
        stubs = (pbg.PageServiceStub(ch), pbg.GatewayServiceStub(ch))

        def one(s: int) -> SessionCounts:
            try:
                return _replay_session(stubs, trace, s, code, f"{prefix}-{s}-{code}", rows, writes)
            except grpc.RpcError as exc:
                raise OSError(f"session {s} through {target}: {exc.code().name}: {exc.details()}") from None

        with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
            return list(pool.map(one, range(trace.n_sessions)))


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
    base = int(os.environ.get("SATPAGE_CLUSTER_PORT_BASE", "0")) or _free_port_base(constellation)
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
                 tls_dir: Path | None = None, writes: np.ndarray | None = None) -> dict:
    """Replay trace with one strategy and return its totals as plain numbers, and under
    ``fault_ns`` the wait of every moved page read, as its serving satellite measured it
    (the ``satpage compare --backend cluster`` interface); tls_dir and writes as in
    replay_sessions."""
    with resolve_target(target) as gw:
        res = replay_sessions(trace, strategy, gw, rows=False, tls_dir=tls_dir, writes=writes)
    out = {"sessions": len(res), "accesses": 0, "pages_created": 0, "ondemand_moves": 0,
           "ondemand_hops": 0, "handover_moves": 0, "handover_hops": 0, "pages_left_behind": 0,
           "pages_deleted": 0}
    for r in res:
        out["accesses"] += int(r.accesses)
        out["pages_created"] += int(r.created)
        out["ondemand_moves"] += int(r.ondemand_moves)
        out["ondemand_hops"] += int(r.ondemand_hops)
        out["handover_moves"] += int(r.proactive_moves)
        out["handover_hops"] += int(r.proactive_hops)
        out["pages_left_behind"] += int(r.rows[-1, :-1].sum())
        out["pages_deleted"] += int(r.pages_deleted)
    out["fault_ns"] = [f for r in res for f in r.fault_ns]  # not a total: the faults measured
    out["page_moves"] = out["ondemand_moves"] + out["handover_moves"]
    out["page_hops"] = out["ondemand_hops"] + out["handover_hops"]
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


