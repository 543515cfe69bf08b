"""The one replayer: a Trace sent through a cluster's gateway while the satellites of a
failure schedule die at their scenario times; a failure-free run is an empty schedule.
What the cluster reports is measured by the satellites (every relay counts its ISL hop,
SessionStats and EndSession return the counts); nothing here computes a count.

Each session is registered with its schedule of serving satellites (handovers are
predictable). Its accesses go out in order, runs of reads as ReadPages batches and each
write as a WritePage (its bytes: the session and the access, so every write is new).

- Without failures the sessions are independent: each runs from its first access to
  its end in one worker (``concurrency`` at once). Its counts are read at its end
  (SessionStats; with ``rows``, after every visit: the frames each visit's satellite
  holds, Table I row by row), then it ends (EndSession: the frames it still had).
- With failures the sessions advance together in scenario time. Between two events (a
  failure, a session's end) every session sends the accesses it has up to the event's
  time; before a failure each session's handovers due by then are performed
  (SessionStats), so every page is where the engine has it at that instant. The kill
  (``Killer.fail``) returns once the satellite serves again; the run then waits
  ``settle_s``.
- With ``read_back`` (the loss check) a session reads every page it has back after its
  counts are read, before it ends. A page is **lost** when an access or the read-back is
  answered NOT_FOUND with reason PAGE_NOT_FOUND (``satpage_client.errinfo``; a batch
  answered so is sent again access by access, to find the
  page; a lost page is not asked for again: the engine counts each (session, page)
  once). A session whose page table is gone (its serving satellite died with R = 1)
  stops there: it counts in ``table_lost``, and its pages lost are the frames the dead
  satellite held for it (SessionStats just before the kill). Without ``read_back`` any
  error of a request ends the replay (an OSError naming the session).
"""

from __future__ import annotations

import logging
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np

__all__ = ["BUSIEST", "COUNT_KEYS", "STRATEGIES", "ClusterReplay", "Killer", "SessionCounts", "Target",
           "replay", "strategy_code"]

log = logging.getLogger(__name__)

#: satpage.v1.Strategy values of the strategies the service runs (push-ahead: the pages
#: used during a visit moved to the next serving satellite at the handover, i.e.
#: pager.PushAhead with recent_visits 1, not staged)
STRATEGIES = {"on-demand": 1, "ondemand": 1, "proactive": 2, "push-ahead": 3}
RPC_TIMEOUT_S = 120.0
#: sessions replayed at once (each session's requests are sequential). Through emulated
#: links a replay waits on the sky's delays, not on the CPU: at 4, make e2e-k8s's compare
#: replay took 392 s (15 s without emulation); the sessions are independent, so the
#: counts do not depend on it.
DEFAULT_CONCURRENCY = 16
#: the victim of a kill chosen at its time: the satellite holding the most frames
BUSIEST = -1
#: the counts a replay reads from the satellites, as `satpage compare --backend cluster`
#: names them
COUNT_KEYS = ("sessions", "accesses", "pages_created", "page_moves", "page_hops",
              "pages_left_behind", "pages_deleted")
_BATCH = 50_000  # accesses per ReadPages


class Killer(Protocol):
    """Takes satellite i's memory and returns once it serves again: the seconds that
    took (``LocalCluster``; ``failreplay.CommandKiller`` for any deployment)."""

    def fail(self, i: int) -> float: ...


@dataclass(frozen=True)
class Target:
    """Where a replay runs: the gateway (host:port), its TLS material (None: plain
    text), the number of satellites (0: unknown, for a failure-free run), and what kills
    one (None: nothing can be killed)."""

    gateway: str
    tls_dir: Path | None = None
    satellites: int = 0
    killer: Killer | None = None


@dataclass(frozen=True)
class SessionCounts:
    """One session replayed through the cluster (arrays over its V visits), as its
    satellites counted it."""

    rows: np.ndarray  # (V, V) int64: frames held by visit j's satellite at the end of visit k
    totals: np.ndarray  # (V,) page-table entries at the end of each visit
    ondemand_moves: int
    ondemand_hops: int
    proactive_moves: int
    proactive_hops: int
    accesses: int
    created: int
    pages_deleted: int
    pages_left_behind: int  # frames of the earlier visits at the session's end
    fault_ns: list = field(default_factory=list)  # each moved read's wait (ReadPageResponse.fault_ns)


@dataclass(frozen=True)
class ClusterReplay:
    """What one replay measured: per session its counts (None: it lost its page table
    before its end), and what was lost (arrays over the trace's sessions)."""

    sessions: list  # SessionCounts | None per session
    pages_lost: np.ndarray  # int64: pages found gone (reads), or held by the killer of the table
    table_lost: np.ndarray  # int64: 1 when the session's page table was lost
    frames_at_kills: np.ndarray  # int64: frames of the session the killed satellites held
    accesses_ok: int  # accesses (and read-back reads) answered
    kills: list  # {"satellite", "fail_ns", "restart_s"}

    def detailed_counts(self) -> dict[str, int]:
        """The counts summed over the sessions that ran to their end: COUNT_KEYS with the
        movements and their hops by kind (on demand, at handovers)."""
        out = dict.fromkeys(("sessions", "accesses", "pages_created", "ondemand_moves", "ondemand_hops",
                             "handover_moves", "handover_hops", "pages_left_behind", "pages_deleted"), 0)
        for c in self.sessions:
            if c is None:
                continue
            out["sessions"] += 1
            out["accesses"] += c.accesses
            out["pages_created"] += c.created
            out["ondemand_moves"] += c.ondemand_moves
            out["ondemand_hops"] += c.ondemand_hops
            out["handover_moves"] += c.proactive_moves
            out["handover_hops"] += c.proactive_hops
            out["pages_left_behind"] += c.pages_left_behind
            out["pages_deleted"] += c.pages_deleted
        out["page_moves"] = out["ondemand_moves"] + out["handover_moves"]
        out["page_hops"] = out["ondemand_hops"] + out["handover_hops"]
        return out

    @property
    def counts(self) -> dict[str, int]:
        """COUNT_KEYS summed over the sessions that ran to their end."""
        d = self.detailed_counts()
        return {k: d[k] for k in COUNT_KEYS}

    @property
    def sessions_hit(self) -> int:
        return int(np.sum((self.pages_lost > 0) | (self.table_lost > 0)))

    def losses(self) -> dict[str, int]:
        return {"sessions": int(self.pages_lost.size), "pages_lost": int(self.pages_lost.sum()),
                "sessions_hit": self.sessions_hit, "page_tables_lost": int(self.table_lost.sum()),
                "frames_at_killed_satellites": int(self.frames_at_kills.sum()),
                "accesses_answered": self.accesses_ok}


def strategy_code(strategy) -> int:
    """The satpage.v1.Strategy of a strategy name or a pager strategy with that ``name``."""
    name = getattr(strategy, "name", strategy)
    try:
        return STRATEGIES[str(name)]
    except KeyError:
        raise ValueError(f"the cluster implements the strategies on-demand, proactive and "
                         f"push-ahead, got {name!r}") from None


def _code(exc) -> str:
    try:
        return exc.code().name
    except Exception:  # noqa: BLE001 - not a grpc.RpcError
        return ""


def _details(exc) -> str:
    try:
        return exc.details() or ""
    except Exception:  # noqa: BLE001
        return str(exc)


@dataclass
class _Session:
    """One session's replay state."""

    index: int
    sid: str
    start_ns: int
    end_ns: int
    visit_sat: np.ndarray
    visit_start: np.ndarray
    visit_cut: np.ndarray  # (V + 1,) offsets of each visit's accesses
    pages: np.ndarray  # accesses' pages (int64)
    times: np.ndarray  # accesses' scenario times, clamped to their visit's start
    writes: np.ndarray | None  # accesses sent as WritePage
    place: tuple[float, float] | None = None  # (lat_deg, lon_deg): where the client is
    md: tuple = ()
    registered: bool = False
    ended: bool = False
    table_lost: bool = False
    cursor: int = 0
    seen: set = field(default_factory=set)  # pages answered at least once
    lost: set = field(default_factory=set)
    lost_with_table: int = 0  # frames the satellite that served it held when it was killed
    #: per kill: (victim, frames the victim held for the session, it served the session)
    at_kills: list = field(default_factory=list)
    accesses_ok: int = 0
    fault_ns: list = field(default_factory=list)  # each moved read's wait, as its server measured it
    rows: np.ndarray | None = None
    totals: np.ndarray | None = None
    stats: object = None  # its SessionStats at its end
    pages_deleted: int = 0

    def result(self) -> SessionCounts | None:
        st = self.stats
        if st is None:
            return None
        return SessionCounts(rows=self.rows, totals=self.totals, ondemand_moves=int(st.ondemand_moves),
                             ondemand_hops=int(st.ondemand_hops),
                             # moves at handovers: proactive's, or push-ahead's pushes
                             proactive_moves=int(st.proactive_moves) + int(st.push_moves),
                             proactive_hops=int(st.proactive_hops) + int(st.push_hops), accesses=int(st.accesses),
                             created=int(st.created), pages_deleted=self.pages_deleted,
                             pages_left_behind=int(sum(list(st.frames_by_visit)[:-1])),
                             fault_ns=self.fault_ns)


class _Replayer:
    def __init__(self, trace, strategy: int, session_end_ns, prefix: str, *, writes=None,
                 rows: bool = False, read_back: bool = False, places=None):
        self.trace, self.strategy, self.rows, self.read_back = trace, strategy, rows, read_back
        self.sessions: list[_Session] = []
        if places is not None and np.shape(places) != (trace.n_sessions, 2):
            raise ValueError(f"places has shape {np.shape(places)}, want ({trace.n_sessions}, 2)")
        for s in range(trace.n_sessions):
            v0, v1 = int(trace.visit_offsets[s]), int(trace.visit_offsets[s + 1])
            if v1 == v0:
                raise ValueError(f"session {s} of the trace has no visits")
            a0, a1 = int(trace.access_offsets[v0]), int(trace.access_offsets[v1])
            starts = np.asarray(trace.visit_start_ns[v0:v1], np.int64)
            cut = np.asarray(trace.access_offsets[v0:v1 + 1], np.int64) - a0
            # Accesses carry the visit's times; one clamped to the visit start keeps the
            # gateway's schedule and the trace's visit assignment the same.
            times = np.maximum(np.asarray(trace.access_time_ns[a0:a1], np.int64),
                               np.repeat(starts, np.diff(cut)))
            # a visit's last access (when it has one) before the next visit starts
            last = cut[1:-1] - 1
            late = np.flatnonzero((cut[1:-1] > cut[:-2])
                                  & (times[np.maximum(last, 0)] >= starts[1:])) if times.size else []
            if len(late):
                k = int(late[0])
                raise ValueError(f"session {s}: access at {int(times[cut[k + 1] - 1])} ns falls after "
                                 f"visit {k + 1} starts at {int(starts[k + 1])} ns")
            end = int(starts[-1]) if session_end_ns is None else max(int(session_end_ns[s]), int(starts[-1]))
            self.sessions.append(_Session(
                index=s, sid=f"{prefix}-{s}", start_ns=int(starts[0]), end_ns=end,
                visit_sat=np.asarray(trace.visit_satellite[v0:v1], np.int64), visit_start=starts,
                visit_cut=cut, pages=np.asarray(trace.access_page[a0:a1], np.int64), times=times,
                writes=None if writes is None else np.asarray(writes[a0:a1], bool),
                place=None if places is None else (float(places[s][0]), float(places[s][1])),
                rows=np.zeros((v1 - v0, v1 - v0), np.int64), totals=np.zeros(v1 - v0, np.int64)))
        self.until_end = session_end_ns is not None  # accesses after a session's end are not sent

    # -- requests ---------------------------------------------------------------------------

    def _register(self, stubs, s: _Session) -> None:
        from satpage_client.channel import token_metadata
        from satpage_client.rpc import satpage_pb2 as pb

        visits = [pb.Visit(satellite=int(a), start_ns=int(b))
                  for a, b in zip(s.visit_sat, s.visit_start, strict=True)]
        place = None if s.place is None else pb.GroundPlace(lat_deg=s.place[0], lon_deg=s.place[1])
        reg = stubs[1].RegisterSession(pb.RegisterSessionRequest(
            session_id=s.sid, visits=visits, strategy=self.strategy,
            table_pages=int(self.trace.n_pages), place=place), timeout=RPC_TIMEOUT_S)
        s.md = token_metadata(reg.token, reg.ticket)  # any gateway replica serves it
        s.registered = True

    def _table_gone(self, s: _Session, exc) -> bool:
        """exc says the session's page table is gone: the session stops, its pages lost
        are what the satellite that served it held when it was killed."""
        from satpage_client import errinfo

        if not self.read_back or errinfo.reason(exc) != errinfo.UNKNOWN_SESSION:
            return False
        s.table_lost = True
        served = [k for k in s.at_kills if k[2]]
        if served:
            s.lost_with_table = served[-1][1]
        log.info("session %s lost its page table: %s", s.sid, _details(exc))
        return True

    def _send(self, stubs, s: _Session, lo: int, hi: int) -> None:
        """s's accesses lo..hi in order: runs of reads as ReadPages, each write a WritePage."""
        from satpage_client.rpc import satpage_pb2 as pb

        if s.writes is None or not s.writes[lo:hi].any():
            self._read(stubs, s, s.pages[lo:hi], s.times[lo:hi])
            return
        w = lo + np.flatnonzero(s.writes[lo:hi])
        cuts = sorted({lo, hi, *w.tolist(), *(w + 1).tolist()})
        for a, b in zip(cuts[:-1], cuts[1:], strict=True):
            if a >= b or s.table_lost:
                continue
            if not s.writes[a]:
                self._read(stubs, s, s.pages[a:b], s.times[a:b])
                continue
            # the write's bytes: the session and the access's index in its visit
            v = int(np.searchsorted(s.visit_cut, a, side="right")) - 1
            stubs[0].WritePage(pb.WritePageRequest(
                session_id=s.sid, page=int(s.pages[a]), scenario_time_ns=int(s.times[a]),
                data=f"{s.sid}/{a - int(s.visit_cut[v])}".encode()), timeout=RPC_TIMEOUT_S, metadata=s.md)
            s.seen.add(int(s.pages[a]))
            s.accesses_ok += 1

    def _read(self, stubs, s: _Session, pages: np.ndarray, times: np.ndarray) -> None:
        """Read pages at times (one batch; access by access when one is gone)."""
        import grpc

        from satpage_client import errinfo
        from satpage_client.rpc import satpage_pb2 as pb

        if s.lost:
            keep = ~np.isin(pages, np.fromiter(s.lost, np.int64, len(s.lost)))
            pages, times = pages[keep], times[keep]
        if not pages.size or s.table_lost:
            return
        try:
            for b in range(0, pages.size, _BATCH):
                e = min(pages.size, b + _BATCH)
                r = stubs[0].ReadPages(pb.ReadPagesRequest(
                    session_id=s.sid, pages=pages[b:e].tolist(), scenario_time_ns=times[b:e].tolist(),
                    omit_data=True), timeout=RPC_TIMEOUT_S, metadata=s.md)
                s.fault_ns += [x.fault_ns for x in r.results if x.outcome == pb.OUTCOME_MOVED]
                if self.read_back:
                    s.seen.update(pages[b:e].tolist())
                s.accesses_ok += e - b
            return
        except grpc.RpcError as exc:
            if self._table_gone(s, exc):
                return
            if not self.read_back or errinfo.reason(exc) != errinfo.PAGE_NOT_FOUND:
                raise
        # One access at a time: the ones answered PAGE_NOT_FOUND name the pages lost.
        for p, t in zip(pages.tolist(), times.tolist(), strict=True):
            if p in s.lost:
                continue
            try:
                r = stubs[0].ReadPages(pb.ReadPagesRequest(session_id=s.sid, pages=[p], scenario_time_ns=[t],
                                                           omit_data=True), timeout=RPC_TIMEOUT_S, metadata=s.md)
                s.fault_ns += [x.fault_ns for x in r.results if x.outcome == pb.OUTCOME_MOVED]
                s.seen.add(p)
                s.accesses_ok += 1
            except grpc.RpcError as exc:
                if self._table_gone(s, exc):
                    return
                if errinfo.reason(exc) != errinfo.PAGE_NOT_FOUND:
                    raise
                s.lost.add(p)
                log.info("session %s: page %d lost (%s)", s.sid, p, _details(exc))

    def _stats(self, stubs, s: _Session, t_ns: int):
        """SessionStats of s at t_ns (performs its handovers due by then); None when its
        page table is gone."""
        import grpc

        from satpage_client.rpc import satpage_pb2 as pb

        try:
            return stubs[1].SessionStats(pb.SessionStatsRequest(session_id=s.sid, scenario_time_ns=t_ns),
                                         timeout=RPC_TIMEOUT_S, metadata=s.md)
        except grpc.RpcError as exc:
            if self._table_gone(s, exc):
                return None
            raise

    def _advance(self, stubs, s: _Session, t_ns: int) -> None:
        """Send s's accesses up to t_ns (inclusive), registering it first."""
        if s.ended or s.table_lost or s.start_ns > t_ns:
            return
        if not s.registered:
            self._register(stubs, s)
        hi = int(np.searchsorted(s.times, t_ns, side="right"))
        if hi > s.cursor:
            self._send(stubs, s, s.cursor, hi)
            s.cursor = hi

    def _holdings(self, stubs, s: _Session, t_ns: int) -> tuple[dict[int, int], int] | None:
        """Perform s's handovers due by t_ns; the frames of s each satellite holds, and
        the satellite serving it (None: s is not running)."""
        if not s.registered or s.ended or s.table_lost:
            return None
        st = self._stats(stubs, s, t_ns)
        if st is None:
            return None
        held: dict[int, int] = {}
        for v, f in zip(st.visits, st.frames_by_visit, strict=False):
            held.setdefault(int(v.satellite), int(f))  # a satellite of two visits: one count
        return held, int(st.visits[st.visit].satellite) if st.visits else -1

    def run_alone(self, stubs, s: _Session) -> None:
        """A session with no failure in its way: visit by visit to its end."""
        nv = s.visit_start.size
        stop = int(np.searchsorted(s.times, s.end_ns, side="right")) if self.until_end else s.pages.size
        self._register(stubs, s)
        for k in range(nv):
            hi = min(int(s.visit_cut[k + 1]), stop) if k + 1 < nv else stop
            if hi > s.cursor:
                self._send(stubs, s, s.cursor, hi)
                s.cursor = hi
            if self.rows and k + 1 < nv:
                st = self._stats(stubs, s, int(s.visit_start[k]))
                s.rows[k, : k + 1] = st.frames_by_visit
                s.totals[k] = st.table_pages[-1]
        self._end(stubs, s)

    def _end(self, stubs, s: _Session) -> None:
        """Read s's counts, then (read_back) every page it has back, then end it."""
        import grpc

        from satpage_client.rpc import satpage_pb2 as pb

        self._advance(stubs, s, s.end_ns)
        if not s.registered or s.ended:
            s.ended = True
            return
        if not s.table_lost:
            # the counts before the read-back: its reads are not the trace's
            st = self._stats(stubs, s, s.end_ns)
            if st is not None:
                s.stats = st
                f = list(st.frames_by_visit)[: s.visit_start.size]
                s.rows[-1, : len(f)] = f
                if self.rows:
                    s.totals[:] = list(st.table_pages)
                else:
                    s.totals[: len(st.table_pages)] = st.table_pages
        if self.read_back and not s.table_lost:
            back = np.array(sorted(p for p in s.seen if p not in s.lost), np.int64)
            self._read(stubs, s, back, np.full(back.size, s.end_ns, np.int64))
        s.ended = True
        try:
            end = stubs[0].EndSession(pb.EndSessionRequest(session_id=s.sid, scenario_time_ns=s.end_ns),
                                      timeout=RPC_TIMEOUT_S, metadata=s.md)
            s.pages_deleted = int(end.pages_deleted)
        except grpc.RpcError as exc:  # a lost page or table: the frames left are swept anyway
            if not self.read_back:
                raise
            log.info("EndSession %s: %s %s", s.sid, _code(exc), _details(exc))



#: how long a refused connection is tried again before the gateway counts as absent
REFUSED_S = 1.0


def wait_for_gateway(channel, gateway: str, timeout_s: float = 30.0) -> None:
    """Wait until channel (to gateway, "host:port") is ready; OSError naming gateway
    when it is not within timeout_s (a slow handshake on a loaded machine takes
    seconds). A port that refuses the connection has nothing listening on it: that
    is an error after REFUSED_S, not after timeout_s of gRPC's reconnect backoff."""
    import socket

    import grpc

    host, _, port = gateway.rpartition(":")
    if port.isdigit() and host:
        deadline = time.monotonic() + REFUSED_S
        while True:
            try:
                socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
                break
            except ConnectionRefusedError:
                if time.monotonic() >= deadline:
                    raise OSError(f"no gateway answers at {gateway!r}: connection refused") from None
                time.sleep(0.1)
            except OSError:
                break  # a name not resolved, a timeout: gRPC's own wait says
    try:
        grpc.channel_ready_future(channel).result(timeout=timeout_s)
    except grpc.FutureTimeoutError:
        raise OSError(f"no gateway answers at {gateway!r}") from None


def replay(trace, strategy, target: Target, failures=None, *, session_end_ns=None, writes=None,
           rows: bool = False, read_back: bool = False, busiest_ns: tuple[int, ...] = (),
           settle_s: float = 0.0, concurrency: int = DEFAULT_CONCURRENCY, progress=None,
           places=None) -> ClusterReplay:
    """Replay trace with strategy (``"on-demand"``, ``"proactive"`` or a pager strategy
    with that ``name``) through ``target``, killing the satellites of ``failures`` (a
    ``pager.FailureSchedule``; None: none) at their failure times with
    ``target.killer``, and a satellite holding the most frames at each of ``busiest_ns``.

    ``session_end_ns`` (n_sessions,): when each session ends
    (``satpage.workload.ChunkTrace.session_end_ns``; None: at its last visit's start,
    every access sent). ``writes`` bool (accesses,): the accesses sent as WritePage
    (``pager.write_mask``; None: every access a read). ``rows``: each session's frames
    per visit after every visit (the paper's Table I). ``read_back``: the loss check
    (module docstring). ``settle_s``: wall seconds to wait after a restart (0 at R = 1;
    at R > 1 the replicas' upkeep, every second, sends the restarted satellite its
    copies of the others' state). ``places`` float (n_sessions, 2): each session's client
    (lat_deg, lon_deg), registered with it, so that with link emulation every access
    waits the session's ground link both ways (docs/emulation.md); None: no place, no
    ground-link delay."""
    import grpc

    from satpage_client.channel import open_channel, tls_dir_for
    from satpage_client.rpc import satpage_pb2_grpc as pbg

    if writes is not None and np.shape(writes) != (trace.n_accesses,):
        raise ValueError(f"writes has shape {np.shape(writes)}, want ({trace.n_accesses},)")
    code = strategy_code(strategy)
    say = progress or (lambda msg: log.info("%s", msg))
    sat = np.zeros(0, np.int64) if failures is None else np.asarray(failures.satellite, np.int64)
    fail_ns = np.zeros(0, np.int64) if failures is None else np.asarray(failures.fail_ns, np.int64)
    if (sat.size or busiest_ns) and target.killer is None:
        raise ValueError(f"the replay through {target.gateway} has failures to inject and no killer")
    if sat.size and target.satellites and sat.max() >= target.satellites:
        raise ValueError(f"the failure schedule kills satellite {int(sat.max())}, but the cluster "
                         f"has {target.satellites}")
    rp = _Replayer(trace, code, None if session_end_ns is None else np.asarray(session_end_ns, np.int64),
                   uuid.uuid4().hex[:10], writes=writes, rows=rows, read_back=read_back, places=places)
    tls_dir = target.tls_dir if target.tls_dir is not None else tls_dir_for(target.gateway)
    opts = [("grpc.max_receive_message_length", 64 << 20), ("grpc.max_send_message_length", 64 << 20)]
    kills: list[dict] = []
    with open_channel(target.gateway, tls_dir, options=opts) as ch, \
            ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        wait_for_gateway(ch, target.gateway)
        stubs = (pbg.PageServiceStub(ch), pbg.GatewayServiceStub(ch))

        def guarded(fn):
            def call(s, *args):
                try:
                    return fn(stubs, s, *args)
                except grpc.RpcError as exc:
                    raise OSError(f"session {s.index} through {target.gateway}: {_code(exc)}: "
                                  f"{_details(exc)}") from None
            return call

        if not sat.size and not busiest_ns:
            list(pool.map(guarded(rp.run_alone), rp.sessions))
        else:
            _with_failures(rp, pool, guarded, sat, fail_ns, busiest_ns, target, settle_s, kills, say)
    n = len(rp.sessions)
    return ClusterReplay(
        sessions=[s.result() for s in rp.sessions],
        pages_lost=np.array([len(s.lost) + s.lost_with_table for s in rp.sessions], np.int64).reshape(n),
        table_lost=np.array([int(s.table_lost) for s in rp.sessions], np.int64).reshape(n),
        frames_at_kills=np.array([sum(k[1] for k in s.at_kills) for s in rp.sessions], np.int64).reshape(n),
        accesses_ok=sum(s.accesses_ok for s in rp.sessions), kills=kills)


def _with_failures(rp: _Replayer, pool, guarded, sat, fail_ns, busiest_ns, target: Target,
                   settle_s: float, kills: list, say) -> None:
    """The sessions in step through the events: a failure, a session's end."""
    # (time, 0 = a session ends / 1 = a satellite fails, session or satellite)
    events = sorted([(s.end_ns, 0, s.index) for s in rp.sessions]
                    + [(int(t), 1, int(v)) for t, v in zip(fail_ns, sat, strict=True)]
                    + [(int(t), 1, BUSIEST) for t in busiest_ns])

    def each(fn, *args):
        """fn(s, *args) for every session not ended: those sessions and fn's results."""
        live = [s for s in rp.sessions if not s.ended]
        return live, list(pool.map(lambda s: guarded(fn)(s, *args), live))

    for t_ns, kind, arg in events:
        each(rp._advance, t_ns)
        if kind == 0:
            guarded(rp._end)(rp.sessions[arg])
            continue
        live, holds = each(rp._holdings, t_ns)
        victim = arg
        if arg == BUSIEST:
            frames: dict[int, int] = {}
            for h in holds:
                for k, f in (h[0] if h else {}).items():
                    frames[k] = frames.get(k, 0) + f
            if not any(frames.values()):
                say(f"no satellite holds a page at scenario time {t_ns / 1e9:.1f} s: nothing killed")
                continue
            victim = max(frames, key=lambda k: (frames[k], -k))
        for s, h in zip(live, holds, strict=True):
            if h is not None:
                s.at_kills.append((victim, h[0].get(victim, 0), h[1] == victim))
        up_s = target.killer.fail(victim)
        if settle_s:
            time.sleep(settle_s)
        kills.append({"satellite": victim, "fail_ns": t_ns, "restart_s": round(up_s, 2)})
        say(f"killed satellite {victim} at scenario time {t_ns / 1e9:.1f} s; back and "
            f"SERVING {up_s:.1f} s later")
