"""A trace replayed on a local cluster while satellites die at the scenario times of a
failure schedule (`satpage cluster chaos --failure-schedule FILE`, docs/faults.md).

The engine applies a ``pager.FailureSchedule`` to a replay (``pager.FaultModel``);
this module makes the real cluster live through the same schedule, so that the pages
it loses can be set beside the engine's ``pages_lost`` for the same trace:

- The sessions advance together in scenario time. Between two events (a failure, a
  session's end) every session sends the accesses it has up to the event's time
  (ReadPages through the gateway, which performs the handovers due); before a failure
  each session's handovers due by then are performed (SessionStats), so every page is
  where the engine has it at that instant.
- A failure SIGKILLs the satellite's satnode and redis-server (its memory is gone) and
  restarts both empty at once: no request is sent meanwhile, so in scenario time the
  satellite is back before the next one (a repair after zero seconds; see
  docs/faults.md for what that leaves out). With R > 1 it takes its state back from
  its replicas before it serves; the run then waits ``settle_s`` for the primaries
  whose replica it was to send it their copies again.
- A page is **lost** when an access or the read-back at the session's end is answered
  NOT_FOUND with reason PAGE_NOT_FOUND (its frame is gone; satpage_client.errinfo). An access batch answered so is sent again access by
  access, to find the page; a lost page is not asked for again (the engine counts each
  (session, page) once). A session whose page table is gone (its serving satellite
  died with R = 1; reason UNKNOWN_SESSION) stops there: it counts in ``page_tables_lost``, and its pages lost
  are the frames the dead satellite held for it (SessionStats just before the kill);
  its pages on other satellites are unreachable but not lost, as in the engine.
- At its end (``session_end_ns``, before a failure at the same instant, as the
  engine's holding intervals end there) each session's counts are read
  (SessionStats: accesses, pages created, movements and their hops, the frames of
  each visit) before it reads every page it has back, then ends (EndSession: the
  frames it still had). Those counts are the trace's alone, so with nothing lost
  (R >= 2) they must equal the engine's failure-free counts: a satellite that is back,
  from its replicas, before the next request changes no movement.
- The cluster is the local one (`_Cluster`: SIGKILL and restart), or any deployment
  reached at a gateway address with a kill command that takes a satellite's memory and
  returns once it serves again (``CommandKiller``: `kubectl delete pod`, `docker kill`;
  scripts/e2e-k8s.sh and scripts/e2e-swarm.sh use it).

What the cluster measured is all that is reported; nothing here computes a loss from
the schedule.
"""

from __future__ import annotations

import logging
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from satpage_client import errinfo

__all__ = ["COUNT_KEYS", "CommandKiller", "FailureReplay", "Target", "replay_with_failures",
           "run_schedule_replay"]

log = logging.getLogger(__name__)

RPC_TIMEOUT_S = 120.0
#: sessions advanced at once (each session's requests are sequential)
CONCURRENCY = 4


@dataclass
class _Session:
    """One session's replay state."""

    index: int
    sid: str
    start_ns: int
    end_ns: int
    visit_sat: np.ndarray
    visit_start: np.ndarray
    pages: np.ndarray  # accesses' pages (int64)
    times: np.ndarray  # accesses' scenario times, clamped to their visit's start
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
    error: str = ""
    counts: dict = field(default_factory=dict)  # SessionStats at its end (COUNT_KEYS)


@dataclass(frozen=True)
class FailureReplay:
    """What the cluster lost, per session (arrays over the trace's sessions)."""

    pages_lost: np.ndarray  # int64: pages found gone (reads), or held by the killer of the table
    table_lost: np.ndarray  # int64: 1 when the session's page table was lost
    frames_at_kills: np.ndarray  # int64: frames of the session the killed satellites held
    accesses_ok: int
    kills: list  # {"satellite", "fail_ns", "restart_s"}
    counts: dict  # COUNT_KEYS summed over the sessions (what the satellites counted)

    @property
    def sessions_hit(self) -> int:
        return int(np.sum((self.pages_lost > 0) | (self.table_lost > 0)))

    def summary(self) -> dict:
        return {"sessions": int(self.pages_lost.size), "pages_lost": int(self.pages_lost.sum()),
                "sessions_hit": self.sessions_hit, "page_tables_lost": int(self.table_lost.sum()),
                "frames_at_killed_satellites": int(self.frames_at_kills.sum()),
                "accesses_answered": self.accesses_ok}


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


class _Replayer:
    def __init__(self, trace, strategy: int, session_end_ns, prefix: str):
        self.trace, self.strategy = trace, strategy
        self.sessions: list[_Session] = []
        for s in range(trace.n_sessions):
            v0, v1 = int(trace.visit_offsets[s]), int(trace.visit_offsets[s + 1])
            if v1 == v0:
                raise ValueError(f"session {s} of the trace has no visits")
            a0, a1 = int(trace.access_offsets[v0]), int(trace.access_offsets[v1])
            starts = np.asarray(trace.visit_start_ns[v0:v1], np.int64)
            per = np.diff(np.asarray(trace.access_offsets[v0:v1 + 1], np.int64))
            times = np.maximum(np.asarray(trace.access_time_ns[a0:a1], np.int64),
                               np.repeat(starts, per))
            self.sessions.append(_Session(
                index=s, sid=f"{prefix}-{s}", start_ns=int(starts[0]),
                end_ns=max(int(session_end_ns[s]), int(starts[-1])),
                visit_sat=np.asarray(trace.visit_satellite[v0:v1], np.int64), visit_start=starts,
                pages=np.asarray(trace.access_page[a0:a1], np.int64), times=times))

    # -- requests ---------------------------------------------------------------------------

    def _register(self, stubs, s: _Session) -> None:
        from satpage_client.channel import token_metadata
        from satpage_client.rpc import satpage_pb2 as pb

        visits = [pb.Visit(satellite=int(a), start_ns=int(b))
                  for a, b in zip(s.visit_sat, s.visit_start, strict=True)]
        reg = stubs[1].RegisterSession(pb.RegisterSessionRequest(
            session_id=s.sid, visits=visits, strategy=self.strategy,
            table_pages=int(self.trace.n_pages)), timeout=RPC_TIMEOUT_S)
        s.md = token_metadata(reg.token)
        s.registered = True

    def _table_gone(self, s: _Session, exc) -> bool:
        """exc says the session's page table is gone: the session stops, its pages lost
        are what the satellite that served it held when it was killed."""
        if errinfo.reason(exc) != errinfo.UNKNOWN_SESSION:
            return False
        s.table_lost = True
        served = [k for k in s.at_kills if k[2]]
        if served:
            s.lost_with_table = served[-1][1]
        log.info("session %s lost its page table: %s", s.sid, _details(exc))
        return True

    def _read(self, stubs, s: _Session, pages: np.ndarray, times: np.ndarray) -> None:
        """Read pages at times (one batch; access by access when one is gone)."""
        import grpc

        from satpage_client.rpc import satpage_pb2 as pb

        keep = np.array([int(p) not in s.lost for p in pages], bool)
        pages, times = pages[keep], times[keep]
        if not pages.size or s.table_lost:
            return
        try:
            for b in range(0, pages.size, 50_000):
                e = min(pages.size, b + 50_000)
                stubs[0].ReadPages(pb.ReadPagesRequest(
                    session_id=s.sid, pages=pages[b:e].tolist(), scenario_time_ns=times[b:e].tolist(),
                    omit_data=True), timeout=RPC_TIMEOUT_S, metadata=s.md)
                s.seen.update(pages[b:e].tolist())
                s.accesses_ok += e - b
            return
        except grpc.RpcError as exc:
            if self._table_gone(s, exc):
                return
            if errinfo.reason(exc) != errinfo.PAGE_NOT_FOUND:
                raise
        # One access at a time: the ones answered PAGE_NOT_FOUND name the pages lost.
        for p, t in zip(pages.tolist(), times.tolist(), strict=True):
            if p in s.lost:
                continue
            try:
                stubs[0].ReadPages(pb.ReadPagesRequest(session_id=s.sid, pages=[p], scenario_time_ns=[t],
                                                       omit_data=True), timeout=RPC_TIMEOUT_S, metadata=s.md)
                s.seen.add(p)
                s.accesses_ok += 1
            except grpc.RpcError as exc:
                if self._table_gone(s, exc):
                    return
                if errinfo.reason(exc) != errinfo.PAGE_NOT_FOUND:
                    raise
                s.lost.add(p)
                log.info("session %s: page %d lost (%s)", s.sid, p, _details(exc))

    def _advance(self, stubs, s: _Session, t_ns: int) -> None:
        """Send s's accesses up to t_ns (inclusive), registering it first."""
        if s.ended or s.table_lost or s.start_ns > t_ns:
            return
        if not s.registered:
            self._register(stubs, s)
        hi = int(np.searchsorted(s.times, t_ns, side="right"))
        if hi > s.cursor:
            self._read(stubs, s, s.pages[s.cursor:hi], s.times[s.cursor:hi])
            s.cursor = hi

    def _holdings(self, stubs, s: _Session, t_ns: int) -> tuple[dict[int, int], int] | None:
        """Perform s's handovers due by t_ns; the frames of s each satellite holds, and
        the satellite serving it (None: s is not running)."""
        import grpc

        from satpage_client.rpc import satpage_pb2 as pb

        if not s.registered or s.ended or s.table_lost:
            return None
        try:
            st = stubs[1].SessionStats(pb.SessionStatsRequest(session_id=s.sid, scenario_time_ns=t_ns),
                                       timeout=RPC_TIMEOUT_S, metadata=s.md)
        except grpc.RpcError as exc:
            if self._table_gone(s, exc):
                return None
            raise
        held: dict[int, int] = {}
        for v, f in zip(st.visits, st.frames_by_visit, strict=False):
            held.setdefault(int(v.satellite), int(f))  # a satellite of two visits: one count
        return held, int(st.visits[st.visit].satellite) if st.visits else -1

    def _end(self, stubs, s: _Session) -> None:
        """Read s's counts, then every page it has back, then end it."""
        import grpc

        from satpage_client.rpc import satpage_pb2 as pb

        self._advance(stubs, s, s.end_ns)
        if not s.registered or s.ended:
            s.ended = True
            return
        if not s.table_lost:
            # the counts before the read-back: its reads are not the trace's
            try:
                st = stubs[1].SessionStats(pb.SessionStatsRequest(session_id=s.sid, scenario_time_ns=s.end_ns),
                                           timeout=RPC_TIMEOUT_S, metadata=s.md)
                s.counts = _stats_counts(st)
            except grpc.RpcError as exc:
                if not self._table_gone(s, exc):
                    raise
        if not s.table_lost:
            back = np.array(sorted(p for p in s.seen if p not in s.lost), np.int64)
            self._read(stubs, s, back, np.full(back.size, s.end_ns, np.int64))
        s.ended = True
        try:
            end = stubs[0].EndSession(pb.EndSessionRequest(session_id=s.sid, scenario_time_ns=s.end_ns),
                                      timeout=RPC_TIMEOUT_S, metadata=s.md)
            if s.counts:
                s.counts["pages_deleted"] = int(end.pages_deleted)
        except grpc.RpcError as exc:  # a lost page or table: the frames left are swept anyway
            log.info("EndSession %s: %s %s", s.sid, _code(exc), _details(exc))


#: the counts a replay reads from the satellites, as `satpage compare --backend cluster`
#: names them (driver.replay_trace)
COUNT_KEYS = ("sessions", "accesses", "pages_created", "page_moves", "page_hops",
              "pages_left_behind", "pages_deleted")


def _stats_counts(st) -> dict:
    """One session's COUNT_KEYS from its SessionStats at its end (pages_deleted: 0 until
    EndSession answers)."""
    frames = list(st.frames_by_visit)
    return {"sessions": 1, "accesses": int(st.accesses), "pages_created": int(st.created),
            "page_moves": int(st.ondemand_moves + st.proactive_moves),
            "page_hops": int(st.ondemand_hops + st.proactive_hops),
            "pages_left_behind": int(sum(frames[:-1])), "pages_deleted": 0}


class CommandKiller:
    """Takes a satellite's memory on any deployment by running a command (no shell):
    ``{satellite}`` in its words becomes the satellite's index. The command must return
    once the satellite serves again (a new pod Ready, a new task healthy); its exit
    status 0 says it did."""

    def __init__(self, command: str, timeout_s: float = 600.0) -> None:
        import shlex

        self.words = shlex.split(command)
        if not self.words:
            raise ValueError("--kill-command is empty")
        self.timeout_s = timeout_s

    def fail(self, i: int) -> float:
        argv = [w.replace("{satellite}", str(i)) for w in self.words]
        t0 = time.monotonic()
        try:
            out = subprocess.run(argv, capture_output=True, text=True, timeout=self.timeout_s)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise OSError(f"kill command {' '.join(argv)!r}: {exc}") from None
        if out.returncode != 0:
            raise OSError(f"kill command {' '.join(argv)!r} exited {out.returncode}: "
                          f"{(out.stderr or out.stdout).strip()[-500:]}")
        return time.monotonic() - t0


@dataclass(frozen=True)
class Target:
    """Where a failure replay runs: the gateway (host:port), its TLS material (None:
    plain text), the number of satellites, and what kills one (``fail(i)`` returns the
    seconds until it serves again, empty: ``chaos._Cluster`` on the local cluster,
    ``CommandKiller`` elsewhere)."""

    gateway: str
    tls_dir: Path | None
    satellites: int
    killer: object


#: the victim of a kill chosen at its time: the satellite holding the most frames
BUSIEST = -1


def replay_with_failures(trace, strategy, target: Target, schedule, session_end_ns, *,
                         busiest_ns: tuple[int, ...] = (), settle_s: float = 1.0,
                         progress=None) -> FailureReplay:
    """Replay trace with strategy (``"on-demand"`` or ``"proactive"``) through
    ``target``, killing the satellites of the ``pager.FailureSchedule`` at its failure
    times (every session paused there; the kill returns once the satellite serves
    again). ``session_end_ns`` (n_sessions,): when each session ends
    (``satpage.workload.ChunkTrace.session_end_ns``). ``settle_s``: wall seconds to wait
    after a restart (use 0 at R = 1; at R > 1 the replicas' upkeep, every second, sends
    the restarted satellite its copies of the others' state). ``busiest_ns``: more kill
    times, each of the satellite that holds the most frames of the sessions then (read
    from the satellites; ``kills`` says which). """
    import uuid

    import grpc

    from satpage.cluster.driver import _strategy
    from satpage_client.channel import open_channel
    from satpage_client.rpc import satpage_pb2_grpc as pbg

    code = _strategy(strategy)
    say = progress or (lambda msg: log.info("%s", msg))
    rp = _Replayer(trace, code, np.asarray(session_end_ns, np.int64), uuid.uuid4().hex[:10])
    sat = np.asarray(schedule.satellite, np.int64)
    if sat.size and sat.max() >= target.satellites:
        raise ValueError(f"the failure schedule kills satellite {int(sat.max())}, but the cluster "
                         f"has {target.satellites}")
    # (time, 0 = a session ends / 1 = a satellite fails, session or satellite)
    events = sorted([(s.end_ns, 0, s.index) for s in rp.sessions]
                    + [(int(t), 1, int(v)) for t, v in zip(schedule.fail_ns, sat, strict=True)]
                    + [(int(t), 1, BUSIEST) for t in busiest_ns])
    kills = []
    opts = [("grpc.max_receive_message_length", 64 << 20), ("grpc.max_send_message_length", 64 << 20)]
    with open_channel(target.gateway, target.tls_dir, options=opts) as ch, \
            ThreadPoolExecutor(max_workers=CONCURRENCY) as pool:
        grpc.channel_ready_future(ch).result(timeout=30)
        stubs = (pbg.PageServiceStub(ch), pbg.GatewayServiceStub(ch))

        def each(fn, *args):
            """fn(stubs, s, *args) for every session not ended: those sessions and fn's results."""
            live = [s for s in rp.sessions if not s.ended]
            return live, list(pool.map(lambda s: fn(stubs, s, *args), live))

        for t_ns, kind, arg in events:
            if kind == 0:
                s = rp.sessions[arg]
                each(_Replayer._advance.__get__(rp), t_ns)
                rp._end(stubs, s)
                continue
            each(_Replayer._advance.__get__(rp), t_ns)
            live, holds = each(_Replayer._holdings.__get__(rp), t_ns)
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
    n = len(rp.sessions)
    lost = np.array([len(s.lost) + s.lost_with_table for s in rp.sessions], np.int64)
    counts = dict.fromkeys(COUNT_KEYS, 0)
    for s in rp.sessions:
        for k, v in s.counts.items():
            counts[k] += v
    return FailureReplay(pages_lost=lost,
                         table_lost=np.array([int(s.table_lost) for s in rp.sessions], np.int64),
                         frames_at_kills=np.array([sum(k[1] for k in s.at_kills) for s in rp.sessions],
                                                  np.int64).reshape(n),
                         accesses_ok=sum(s.accesses_ok for s in rp.sessions), kills=kills,
                         counts=counts)


def _permanent(satellites: list[int], fail_ns: list[int]):
    """A failure schedule of permanent failures (what a kill is to the engine)."""
    import pager

    return pager.FailureSchedule(np.asarray(satellites, np.int32), np.asarray(fail_ns, np.int64),
                                 np.full(len(satellites), pager.NEVER_NS, np.int64))


#: the engine's figures set beside the cluster's (the replication ones are reported, not
#: held equal: docs/faults.md)
ENGINE_FIGURES = ("pages_lost", "sessions_hit", "page_tables_lost", "replication_copies",
                  "replication_page_hops", "rereplication_copies", "rereplication_page_hops")
#: the engine's failure-free counts (satpage.costs names) behind COUNT_KEYS
_ENGINE_COUNT = {"sessions": "sessions", "accesses": "accesses", "pages_created": "creates",
                 "page_moves": "page_moves", "page_hops": "page_hops",
                 "pages_left_behind": "pages_left_behind", "pages_deleted": "pages_at_session_end"}


def run_schedule_replay(path: Path, *, replicas: int | None = None,
                        strategies: list[str] | None = None, state_dir: Path | None = None,
                        progress=None, gateway: str | None = None, tls_dir: Path | None = None,
                        kill_command: str | None = None, satellites: list[int] | None = None,
                        fail_s: float | None = None, busiest: bool = False) -> dict:
    """`satpage cluster chaos --failure-schedule FILE`: rebuild the sessions of the run
    that wrote FILE (its ``config``), replay each strategy's sessions with the file's
    failures (``replay_with_failures``), and set what the cluster lost and counted
    beside the engine: ``pager.FaultModel`` for the same traces, schedule and R, and
    the failure-free counts (``counts_equal``: what R >= 2 promises).

    The cluster is a local one of the file's constellation started here with R =
    ``replicas`` (default: the file's), or, with ``gateway``, a running deployment
    (``tls_dir``: its client TLS material; ``kill_command``: see ``CommandKiller``;
    ``replicas``: its R, for the engine). ``satellites`` and ``fail_s`` replace the
    file's failures: each satellite dies once, at ``fail_s`` scenario seconds; with
    ``busiest`` the one satellite killed at ``fail_s`` is the one holding the most frames
    of the replayed sessions then (per strategy and chunk; the engine is given the
    satellites actually killed)."""
    import json
    import tempfile

    import pager
    from satpage.cluster.chaos import _Cluster
    from satpage.cluster.counters import read_replication
    from satpage.cluster.driver import STRATEGIES
    from satpage.cluster.local import cluster_down, cluster_up, free_port_base, satellites_in
    from satpage.costs import CostAccumulator
    from satpage.faults_io import read_failure_scenario, read_failure_schedule
    from satpage.simulate import chunk_trace, prepare, replay_strategy, strategy_for
    from satpage.version import code_version

    path = Path(path)
    schedule = read_failure_schedule(path)
    sc = read_failure_scenario(path)
    doc = json.loads(path.read_text())
    spec = sc.constellation.spec
    if not spec.startswith("walker"):
        raise ValueError(f"{path}: the cluster runs Walker constellations; the schedule's is {spec!r}")
    if (gateway is None) != (kill_command is None):
        raise ValueError("--target and --kill-command go together: a deployment's satellites are "
                         "killed by the command")
    busiest_ns: tuple[int, ...] = ()
    if satellites or busiest or fail_s is not None:
        if fail_s is None or not (satellites or busiest):
            raise ValueError("--fail-at goes with --fail-satellite or --fail-busiest, and they need it "
                             "(scenario seconds)")
        t_ns = int(round(fail_s * 1e9))
        if not 0 <= t_ns < sc.duration_ns:
            raise ValueError(f"--fail-at {fail_s}: the run lasts {sc.duration_ns / 1e9:g} s")
        sats = list(satellites or [])
        schedule = _permanent(sats, [t_ns] * len(sats))
        busiest_ns = (t_ns,) if busiest else ()
    r = int(doc.get("replicas", 1)) if replicas is None else replicas
    names = strategies or [n for n in ("on-demand", "proactive") if n in sc.strategies.compare] \
        or ["on-demand", "proactive"]
    bad = [n for n in names if n not in STRATEGIES]
    if bad:
        raise ValueError(f"--strategies {','.join(bad)}: the cluster implements on-demand and proactive")
    say = progress or (lambda msg: log.info("%s", msg))
    world = prepare(sc)
    if not world.router.static:
        raise ValueError(f"{path}: the scenario cuts ISLs above {sc.constellation.isl_latitude_cutoff_deg} "
                         "deg; the failure replay runs on the time-invariant +Grid only")
    if schedule.n_failures and int(np.max(schedule.satellite)) >= world.sats.n_sats:
        raise ValueError(f"{path}: failure of satellite {int(np.max(schedule.satellite))}, but {spec} "
                         f"has {world.sats.n_sats}")
    cl = sdir = None
    if gateway is None:
        own = state_dir is None
        sdir = Path(tempfile.mkdtemp(prefix="chaos-replay-", dir=".")) if own else Path(state_dir)
        t = satellites_in(spec)
        say(f"starting {t} satellites with R = {r} in {sdir}")
        state = cluster_up(spec, state_dir=sdir, port_base=free_port_base(t), replicas=r)
        cl = _Cluster(state)  # one for every replay: its records follow the restarts
        target = Target(state.gateway, Path(state.tls_dir) if state.tls_dir else None,
                        state.satellites, cl)
    else:
        from satpage_client.channel import tls_dir_for

        target = Target(gateway, tls_dir if tls_dir is not None else tls_dir_for(gateway),
                        world.sats.n_sats, CommandKiller(kill_command))
    cluster: dict[str, dict] = {}
    engine: dict[str, dict] = {}
    free = {n: CostAccumulator(world.sats.n_sats, world.topology.n_link_ids, 1, sc.duration_ns,
                               sc.workload.page_bytes) for n in names}
    kills: dict[str, list] = {}
    try:
        for i in range(world.n_chunks):
            ct = chunk_trace(world, i)

            def fault_model(failures, ct=ct):
                return pager.FaultModel(ct.trace, failures, world.ring, r, ct.session_end_ns,
                                        recovery_ns=int(round(sc.faults.recovery_s * 1e9)))

            # the file's failures: one model per chunk; busiest kills: per replay (below)
            fm = None if busiest_ns else fault_model(schedule)
            for name in names:
                say(f"chunk {i}: {name}, {ct.trace.n_sessions} sessions, "
                    f"{schedule.n_failures + len(busiest_ns)} failures")
                before = read_replication(cl.state) if cl is not None else None
                got = replay_with_failures(ct.trace, name, target, schedule, ct.session_end_ns,
                                           busiest_ns=busiest_ns, settle_s=0.0 if r == 1 else 1.0,
                                           progress=say)
                if busiest_ns:  # the engine gets the satellites the replay chose
                    fm = fault_model(_permanent([k["satellite"] for k in got.kills],
                                                [k["fail_ns"] for k in got.kills]))
                counted = (read_replication(cl.state) - before).as_dict() if cl is not None else {}
                rl = replay_strategy(ct.trace, strategy_for(sc, name))
                free[name].add(rl, ct, world.router, sc.step_ns, sc.network.per_hop_processing_ms)
                o = fm.apply(rl.events)
                c = cluster.setdefault(name, {})
                for k, v in {**got.summary(), **got.counts, **counted}.items():
                    c[k] = c.get(k, 0) + v
                e = engine.setdefault(name, dict.fromkeys(ENGINE_FIGURES, 0))
                e["pages_lost"] += int(o.pages_lost.sum())
                e["sessions_hit"] += o.sessions_hit
                e["page_tables_lost"] += int(o.table_lost.sum())
                e["replication_copies"] += int(o.replica_copies.sum())
                e["replication_page_hops"] += int(o.replica_hops.sum())
                e["rereplication_copies"] += int(o.rereplica_copies.sum())
                e["rereplication_page_hops"] += int(o.rereplica_hops.sum())
                kills.setdefault(name, []).extend(got.kills)
    finally:
        if sdir is not None:
            cluster_down(sdir)  # the logs stay in sdir
    for n in names:
        engine[n].update({k: int(free[n].counts[v]) for k, v in _ENGINE_COUNT.items()})
    return {
        "failure_schedule": str(path), "scenario": sc.name, "seed": sc.seed, "version": code_version(),
        "constellation": spec, "replicas": r, "failures": schedule.n_failures,
        "target": target.gateway if gateway is not None else "local",
        "restart": "at once (empty): a killed satellite is back before the next request",
        "strategies": cluster, "engine": engine,
        "equal": {n: all(cluster[n][k] == engine[n][k] for k in ("pages_lost", "sessions_hit",
                                                               "page_tables_lost")) for n in names},
        # the movements of a run that lost nothing are the failure-free run's
        "counts_equal": {n: all(cluster[n][k] == engine[n][k] for k in COUNT_KEYS) for n in names},
        "engine_in_file": {n: doc.get("engine", {}).get(n) for n in names},
        "replicas_in_file": doc.get("replicas"),
        "kills": kills, "state_dir": str(sdir) if sdir is not None else None,
    }
