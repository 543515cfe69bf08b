"""`satpage cluster chaos`: kill satellites and cut ISLs under load on a local
cluster, then check what the clients saw (docs/faults.md).

The run starts its own local cluster (loopback only) with replication factor
R, replays sessions of reads and writes through the gateway (every write a
fresh value with a CRC-32), SIGKILLs whole satellites (satnode and its
redis-server: the memory is gone) at seeded times, one at a time, restarting
each empty after ``restart_after_s``, pauses satnodes (SIGSTOP for ``pause_s``,
past the failure detector's bound, then SIGCONT: the satellite serving a seeded
session, taken over while it sleeps and fenced when it wakes), partitions
satellites (a seeded session's serving one cut off from the gateways and its
ISL neighbours for ``partition_s``), kills gateways (with ``gateways`` >= 2:
SIGKILL, restarted empty after ``restart_after_s``; the sessions go on at
another gateway, which serves them from their tickets), cuts ISLs at seeded
times (SetFaults to every satnode), and stops by itself after ``seconds``. At the end every page a
session touched is read back, the history goes to ``bin/satcheck`` (Porcupine,
one register per page) and the result is one dict:

- requests_total / requests_failed: every attempt; a failed one is retried
  (same value) until it succeeds or the session's patience runs out.
- pages_lost: pages whose last acknowledged write cannot be read back (a read
  answered NOT_FOUND, or returned an older value, or never succeeded).
- sessions_failed: sessions that lost a page or gave up (patience exhausted).
- linearizable: Porcupine's verdict on the whole history.
- unavailability_ms: for every streak of failed attempts, the time from the
  first failed call to the success that ended it (p50, p99, max), per kill too.
- call_ms: latency of the successful calls (p50, p99, max), and per kill
  slowest_call_ms: the slowest successful call made while the satellite was down
  (a request that waited for a takeover).
- satellites_killed, pauses, partitions, gateway_kills, links_cut: the events
  injected (kills, paused, partitioned, gateways_killed, cuts list each).
- sessions_rebuilt: sessions a gateway found from their ticket (read from the
  gateways at the end: a killed gateway's count before its kill is not in it);
  gateway_switches: times a session went on at another gateway.
- takeovers: the gateway's failovers (docs/faults.md): sessions taken over from a
  dead serving satellite, handovers sent to the stand-in of a dead next one.
"""

from __future__ import annotations

import contextlib
import json
import logging
import subprocess
import threading
import time
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from satpage.cluster.local import ClusterState, LocalCluster, find_binary, run_state_dir

__all__ = ["ChaosConfig", "run_chaos"]

log = logging.getLogger(__name__)

HISTORY_FORMAT = "satpage-history/1"
RPC_TIMEOUT_S = 3.0
#: A session gives up when one operation has failed for this long.
PATIENCE_S = 45.0


@dataclass(frozen=True)
class ChaosConfig:
    """What to run (every count and time is checked by ``check``)."""

    replicas: int = 2
    kill: int = 3
    cut_links: int = 2
    #: satellites (a seeded session's serving one) SIGSTOPped for pause_s, then SIGCONTed
    pause: int = 0
    #: longer than the failure detector's bound (liveness.DetectionBound, 3.5 s):
    #: the paused satellite's sessions are taken over while it sleeps, and the
    #: fencing (docs/faults.md) must keep it from acknowledging anything when it wakes
    pause_s: float = 6.0
    #: satellites (a seeded session's serving one) cut off from their ISL
    #: neighbours for partition_s, then healed: both ways (every satellite holds
    #: the links cut) or one way (only the victim does: it cannot send on them,
    #: its neighbours still can), alternately; the gateway still reaches it
    partition: int = 0
    partition_s: float = 6.0
    #: gateway replicas; a session starts at gateway k mod G and goes on at the next one
    #: when its gateway does not answer
    gateways: int = 1
    #: gateways SIGKILLed (in turn), each restarted empty after restart_after_s
    kill_gateway: int = 0
    seed: int = 0
    sessions: int = 8
    seconds: float = 60.0
    constellation: str = "walker-star:150/10/1:500:87"
    pages: int = 16  # pages per session
    write_fraction: float = 0.5
    restart_after_s: float = 1.0
    #: every victim is the satellite serving a seeded session when it dies (the
    #: failover case: the gateway has the satellite behind it take the session
    #: over); otherwise half of them are the one before it on the session's trail
    kill_serving: bool = False
    handovers: int = 3  # per session, spread over the run
    #: None: a temporary directory, removed after a run that ends well (run_state_dir)
    state_dir: Path | None = None
    #: keep that temporary directory after a run that ends well too
    keep: bool = False
    history: Path | None = None
    #: the cluster's links timed by the sky (cluster_up's emulate_links)
    emulate_links: bool = True

    def check(self) -> None:
        problems = []
        if self.replicas < 1:
            problems.append(f"--replicas {self.replicas} must be at least 1")
        if min(self.kill, self.cut_links, self.pause, self.partition, self.kill_gateway) < 0:
            problems.append(f"--kill {self.kill}, --cut-links {self.cut_links}, --pause {self.pause}, "
                            f"--partition {self.partition} and --kill-gateway {self.kill_gateway} must be >= 0")
        if not 1 <= self.gateways <= 8:
            problems.append(f"--gateways {self.gateways} outside [1, 8]")
        elif self.kill_gateway and self.gateways < 2:
            problems.append(f"--kill-gateway {self.kill_gateway} needs --gateways 2 or more "
                            f"(got {self.gateways}): the sessions go on at another gateway")
        if not 0.0 < self.partition_s <= 60.0:
            problems.append(f"partition of {self.partition_s} s outside (0, 60] s")
        if not 0.0 < self.pause_s <= 60.0:
            problems.append(f"pause of {self.pause_s} s outside (0, 60] s")
        if self.sessions < 1 or self.pages < 1:
            problems.append(f"--sessions {self.sessions} and --pages {self.pages} must be >= 1")
        if not 5.0 <= self.seconds <= 3600.0:
            problems.append(f"--seconds {self.seconds} outside [5, 3600]")
        if not 0.0 <= self.write_fraction <= 1.0:
            problems.append(f"write fraction {self.write_fraction} outside [0, 1]")
        if not 0.0 <= self.restart_after_s <= 60.0:
            problems.append(f"--restart-after {self.restart_after_s} outside [0, 60] s")
        if problems:
            raise ValueError("; ".join(problems))


def _checksummed(value: str) -> bytes:
    raw = value.encode()
    return raw + b"#" + f"{zlib.crc32(raw):08x}".encode()


def _unchecksum(data: bytes) -> str | None:
    """The value of a page's bytes ("" for a page never written), None when corrupt."""
    if not data:
        return ""
    raw, _, crc = data.rpartition(b"#")
    if not raw or crc != f"{zlib.crc32(raw):08x}".encode():
        return None
    return raw.decode(errors="replace")


class _Recorder:
    """The history and the counters, shared by the session threads."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.ops: list[dict] = []
        self.failed = 0
        self.streaks: list[tuple[int, int]] = []  # (first failed call, success) monotonic ns
        self.corrupt = 0

    def add(self, op: dict) -> None:
        with self.lock:
            self.ops.append(op)
            if not op["ok"]:
                self.failed += 1


class _Session(threading.Thread):
    """One client session: reads and writes until the deadline, retrying failures."""

    def __init__(self, k: int, cfg: ChaosConfig, targets: list[str], tls_dir, visits, rec: _Recorder,
                 t0_ns: int, deadline: float, rng: np.random.Generator) -> None:
        super().__init__(name=f"chaos-session-{k}", daemon=True)
        self.k, self.cfg, self.targets, self.tls_dir = k, cfg, targets, tls_dir
        self.g = k % len(targets)  # the gateway it talks to now
        self.chans: list = []  # a channel per gateway
        self.stubs: list = []  # PageService stub per gateway
        self.switches = 0  # times it went on at another gateway
        self.visits, self.rec, self.t0_ns, self.deadline, self.rng = visits, rec, t0_ns, deadline, rng
        self.sid = f"chaos-{cfg.seed}-{k}"
        self.acked: dict[int, str] = {}  # page -> last acknowledged value
        self.unsure: dict[int, list[str]] = {}  # page -> writes that failed after it (may have landed)
        self.lost: set[int] = set()
        self.gave_up = False
        self.error = ""
        self.last_read: str | None = None
        self.ops = 0
        self.final: dict[int, str | None] = {}

    def _scenario_ns(self) -> int:
        return time.monotonic_ns() - self.t0_ns

    def _call(self, stub, md, kind: str, page: int, value: str | None, rid: str):
        """One attempt; returns (ok, value read or written, grpc code name). rid is the
        request id, the same for every attempt of one operation (exactly-once)."""
        import grpc

        from satpage_client.rpc import satpage_pb2 as pb

        call = time.monotonic_ns()
        try:
            if kind == "write":
                stub.WritePage(pb.WritePageRequest(session_id=self.sid, page=page, data=_checksummed(value),
                                                   scenario_time_ns=self._scenario_ns(), request_id=rid),
                               timeout=RPC_TIMEOUT_S, metadata=md)
                got, ok, code = value, True, "OK"
            else:
                r = stub.ReadPage(pb.ReadPageRequest(session_id=self.sid, page=page,
                                                     scenario_time_ns=self._scenario_ns(), request_id=rid),
                                  timeout=RPC_TIMEOUT_S, metadata=md)
                got = _unchecksum(r.data)
                if got is None:
                    with self.rec.lock:
                        self.rec.corrupt += 1
                    got = f"CORRUPT:{r.data[:32]!r}"
                ok, code = True, "OK"
        except grpc.RpcError as exc:
            got, ok, code = value if kind == "write" else "", False, exc.code().name
        ret = time.monotonic_ns()
        self.rec.add({"client": self.k, "key": f"{self.sid}/{page}", "kind": kind, "value": got or "",
                      "call_ns": call, "return_ns": ret, "ok": ok})
        return ok, got, code, call, ret

    def op(self, md, kind: str, page: int, value: str | None, until: float) -> bool:
        """Run one operation to success, retrying (at the next gateway when this one does not
        answer); False when the page is lost or time is up. The value of the last successful
        read is in self.last_read."""
        first_fail = None
        self.ops += 1
        rid = f"{self.sid}/{self.ops}"
        while True:
            ok, got, code, call, ret = self._call(self.stubs[self.g], md, kind, page, value, rid)
            if ok:
                self.last_read = got
                if first_fail is not None:
                    with self.rec.lock:
                        self.rec.streaks.append((first_fail, ret))
                if kind == "write":
                    self.acked[page] = value
                    self.unsure.pop(page, None)
                return True
            if kind == "write":
                self.unsure.setdefault(page, []).append(value)
            if code == "NOT_FOUND":
                # The page table or the frame is gone: the page is lost (never stale).
                if page in self.acked or kind == "read":
                    self.lost.add(page)
                return False
            if first_fail is None:
                first_fail = call
            if code in ("UNAVAILABLE", "DEADLINE_EXCEEDED") and len(self.stubs) > 1 and not self._gateway_up():
                # Its gateway is lost: the next one serves the session from its ticket. Only
                # then: a gateway left alive keeps where it had the session, and another
                # gateway may move the session on meanwhile (docs/faults.md, "Lost gateways").
                self.g = (self.g + 1) % len(self.stubs)
                self.switches += 1
            if time.monotonic() > until or (time.monotonic_ns() - first_fail) / 1e9 > PATIENCE_S:
                self.gave_up, self.error = True, f"{kind} page {page}: {code}"
                return False
            time.sleep(0.1)

    def _gateway_up(self) -> bool:
        """Whether the gateway it talks to now answers its health check."""
        import grpc
        from grpc_health.v1 import health_pb2, health_pb2_grpc

        try:
            r = health_pb2_grpc.HealthStub(self.chans[self.g]).Check(health_pb2.HealthCheckRequest(), timeout=1.0)
        except grpc.RpcError:
            return False
        return r.status == health_pb2.HealthCheckResponse.SERVING

    def run(self) -> None:
        from satpage_client.channel import open_channel, token_metadata
        from satpage_client.rpc import satpage_pb2 as pb
        from satpage_client.rpc import satpage_pb2_grpc as rpc

        try:
            with contextlib.ExitStack() as stack:
                self.chans = [stack.enter_context(open_channel(t, self.tls_dir)) for t in self.targets]
                self.stubs = [rpc.PageServiceStub(ch) for ch in self.chans]
                reg = rpc.GatewayServiceStub(self.chans[self.g]).RegisterSession(pb.RegisterSessionRequest(
                    session_id=self.sid, visits=[pb.Visit(satellite=s, start_ns=t) for s, t in self.visits],
                    table_pages=self.cfg.pages), timeout=30)
                md = token_metadata(reg.token, reg.ticket)
                weights = 1.0 / np.arange(1, self.cfg.pages + 1)  # Zipf s = 1, as the paper's workload
                weights /= weights.sum()
                n = 0
                while time.monotonic() < self.deadline:
                    page = int(self.rng.choice(self.cfg.pages, p=weights))
                    if page in self.lost:
                        continue
                    if self.rng.random() < self.cfg.write_fraction:
                        n += 1
                        self.op(md, "write", page, f"{self.sid}/{page}/{n}", self.deadline + PATIENCE_S)
                    else:
                        self.op(md, "read", page, None, self.deadline + PATIENCE_S)
                    if self.gave_up:
                        return
                # The final check: every page touched is read back.
                for page in sorted(set(self.acked) | set(self.unsure) | self.lost):
                    ok = self.op(md, "read", page, None, time.monotonic() + PATIENCE_S)
                    self.final[page] = self.last_read if ok else None
        except Exception as exc:  # noqa: BLE001 - a session that breaks is reported, not raised
            self.gave_up, self.error = True, f"{type(exc).__name__}: {exc}"

    def pages_lost(self) -> set[int]:
        """Pages whose acknowledged value is not what the final read returned."""
        lost = set(self.lost)
        final = self.final
        for page, value in self.acked.items():
            got = final.get(page)
            if got is None or (got != value and got not in self.unsure.get(page, [])):
                lost.add(page)
        return lost


def _takeovers(state: ClusterState) -> dict[str, int]:
    """The gateways' failovers (satpage_takeovers_total by kind: ``serving``, a session
    taken over from its dead serving satellite; ``next``, a handover sent to the stand-in
    of a dead next satellite; ``open``), summed over the gateways, and ``rebuilt``
    (satpage_sessions_rebuilt_total), read from their /metrics now: a gateway killed and
    restarted counts from its restart. {} when none is readable."""
    import urllib.request

    out: dict[str, int] = {}
    for g in range(state.gateways):
        url = f"http://127.0.0.1:{state.gateway_metrics_port(g)}/metrics"
        try:
            with urllib.request.urlopen(url, timeout=10) as r:  # noqa: S310 - loopback
                text = r.read().decode()
        except OSError as exc:
            log.warning("gateway %d metrics unreadable: %s", g, exc)
            continue
        out |= {k: out.get(k, 0) for k in ("serving", "next")}
        for line in text.splitlines():
            if line.startswith("satpage_takeovers_total{"):
                labels, _, value = line.rpartition(" ")
                kind = labels.split('kind="', 1)[1].split('"', 1)[0]
                out[kind] = out.get(kind, 0) + int(float(value))
            elif line.startswith("satpage_sessions_rebuilt_total "):
                out["rebuilt"] = out.get("rebuilt", 0) + int(float(line.rpartition(" ")[2]))
    return out


def _percentiles(ms: list[float]) -> dict:
    if not ms:
        return {"p50": 0.0, "p99": 0.0, "max": 0.0, "streaks": 0}
    a = np.asarray(ms)
    return {"p50": round(float(np.percentile(a, 50)), 1), "p99": round(float(np.percentile(a, 99)), 1),
            "max": round(float(a.max()), 1), "streaks": len(ms)}


def run_chaos(cfg: ChaosConfig, *, progress=None) -> dict:
    """Run the chaos experiment of cfg on a fresh local cluster and return the report."""
    from orbit_model import parse_walker_spec

    cfg.check()
    _kind, t, planes, _f, _alt, _inc = parse_walker_spec(cfg.constellation)
    per = t // planes
    if cfg.replicas > per:
        raise ValueError(f"--replicas {cfg.replicas} exceeds the {per} satellites per plane")
    satcheck = find_binary("satcheck")
    rng = np.random.default_rng(cfg.seed)
    say = progress or (lambda msg: log.info("%s", msg))
    # not the working directory: the state holds every satellite's TLS key (run_state_dir)
    with run_state_dir(cfg.state_dir, prefix="satpage-chaos-", keep=cfg.keep, say=say) as rd:
        report = _chaos_in(cfg, rd.path, t, planes, per, satcheck, rng, say)
        rd.failed = bool(report["pages_lost"] or report["sessions_failed"] or report["corrupt_reads"]
                         or not report["linearizable"])
    report["state_dir"] = str(rd.path) if rd.kept else None
    if not rd.kept and cfg.history is None:
        report["history"] = None  # it was in the state directory, removed with it
    return report


def _chaos_in(cfg: ChaosConfig, sdir: Path, t: int, planes: int, per: int, satcheck: Path,
              rng: np.random.Generator, say) -> dict:
    """run_chaos's run on a cluster whose state goes to sdir."""
    say(f"starting {t} satellites with R = {cfg.replicas} in {sdir}")
    # the history and the logs stay in sdir for a look afterwards
    with LocalCluster.up(cfg.constellation, state_dir=sdir, replicas=cfg.replicas, gateways=cfg.gateways,
                         emulate_links=cfg.emulate_links) as cl:
        # Sessions: each served by a trail of satellites, the next one the slot
        # behind in the plane (the satellite that covers the region next), now
        # and then the neighbouring plane's.
        visit_s = cfg.seconds / (cfg.handovers + 1)
        visits = []
        for _ in range(cfg.sessions):
            s = int(rng.integers(t))
            trail = []
            for j in range(cfg.handovers + 1):
                trail.append((s, int(j * visit_s * 1e9)))
                p, k = divmod(s, per)
                if planes > 1 and rng.random() < 0.25:
                    p = p + 1 if p + 1 < planes else p - 1
                else:
                    k = (k - 1) % per
                s = p * per + k
            visits.append(trail)
        # The schedule of faults: kills one at a time (each satellite back and
        # SERVING, its copies re-made, before the next), cuts at seeded times.
        kill_at = np.sort(rng.uniform(0.1, 0.75, size=cfg.kill)) * cfg.seconds
        # Victims are picked when they die: the satellite serving a seeded session
        # then, or the one before it on its trail (it owns the pages not yet moved).
        victim_of = [(int(rng.integers(cfg.sessions)), bool(rng.random() < 0.5)) for _ in range(cfg.kill)]

        def victim(k: int, previous: bool, at_ns: int) -> int:
            trail = visits[k]
            j = max(v for v in range(len(trail)) if trail[v][1] <= at_ns)
            return trail[j - 1][0] if previous and j > 0 and not cfg.kill_serving else trail[j][0]
        links = cl.isls()
        cut_at = np.sort(rng.uniform(0.05, 0.8, size=cfg.cut_links)) * cfg.seconds
        cut_pick = [links[int(x)] for x in rng.choice(len(links), size=cfg.cut_links, replace=False)]
        # Pauses: the satellite serving a seeded session then (its session is taken
        # over while it sleeps), drawn after the kills and cuts so that a run
        # without pauses has the schedule it had before.
        pause_at = np.sort(rng.uniform(0.1, 0.75, size=cfg.pause)) * cfg.seconds
        pause_of = [(int(rng.integers(cfg.sessions)), False) for _ in range(cfg.pause)]
        part_at = np.sort(rng.uniform(0.1, 0.75, size=cfg.partition)) * cfg.seconds
        part_of = [(int(rng.integers(cfg.sessions)), False) for _ in range(cfg.partition)]
        # Gateway kills: in turn, drawn last (the schedules of runs without them stay).
        gw_at = np.sort(rng.uniform(0.1, 0.75, size=cfg.kill_gateway)) * cfg.seconds

        rec = _Recorder()
        t0 = time.monotonic()
        t0_ns = time.monotonic_ns()
        deadline = t0 + cfg.seconds
        sessions = [_Session(k, cfg, cl.gateways, cl.tls_dir,
                             visits[k], rec, t0_ns, deadline, np.random.default_rng([cfg.seed, k]))
                    for k in range(cfg.sessions)]
        for s in sessions:
            s.start()
        kills, cuts, pauses, partitions, gateway_kills = [], [], [], [], []
        events = sorted([(float(a), "kill", v) for a, v in zip(kill_at, victim_of, strict=True)]
                        + [(float(a), "cut", c) for a, c in zip(cut_at, cut_pick, strict=True)]
                        + [(float(a), "pause", v) for a, v in zip(pause_at, pause_of, strict=True)]
                        + [(float(a), "partition", v) for a, v in zip(part_at, part_of, strict=True)]
                        + [(float(a), "kill-gateway", j % cfg.gateways) for j, a in enumerate(gw_at)])
        for at, what, arg in events:
            now = time.monotonic() - t0
            if at > now:
                time.sleep(at - now)
            if time.monotonic() > deadline:
                break
            if what == "cut":
                cl.cut_links([arg])
                cuts.append({"link": list(arg), "at_s": round(time.monotonic() - t0, 2)})
                say(f"cut ISL {arg[0]}-{arg[1]}")
                continue
            if what == "kill-gateway":
                k_ns = time.monotonic_ns()
                cl.kill_gateway(arg)
                say(f"killed gateway {arg} at {time.monotonic() - t0:.1f} s")
                time.sleep(cfg.restart_after_s)
                up_s = cl.restart_gateway(arg)
                gateway_kills.append({"gateway": arg, "at_s": round((k_ns - t0_ns) / 1e9, 2),
                                      "down_ms": round(cfg.restart_after_s * 1e3 + up_s * 1e3, 1)})
                say(f"gateway {arg} back and SERVING {cfg.restart_after_s + up_s:.1f} s after the kill, empty")
                continue
            k_ns = time.monotonic_ns()
            arg = victim(*arg, k_ns - t0_ns)
            if what == "partition":
                both = len(partitions) % 2 == 0
                cl.partition(arg, both_ways=both, ground=True)
                say(f"partitioned satellite {arg} from the gateways and its ISL neighbours "
                    f"({'both ways' if both else 'one way'}) "
                    f"at {time.monotonic() - t0:.1f} s")
                try:
                    time.sleep(cfg.partition_s)
                finally:
                    cl.heal(arg)
                partitions.append({"satellite": arg, "at_s": round((k_ns - t0_ns) / 1e9, 2),
                                   "both_ways": both, "seconds": cfg.partition_s})
                say(f"healed the partition of satellite {arg}")
                continue
            if what == "pause":
                cl.stop(arg)
                say(f"paused satellite {arg} (SIGSTOP) at {time.monotonic() - t0:.1f} s")
                try:
                    time.sleep(cfg.pause_s)
                finally:
                    cl.cont(arg)
                pauses.append({"satellite": arg, "at_s": round((k_ns - t0_ns) / 1e9, 2), "paused_s": cfg.pause_s})
                say(f"resumed satellite {arg} (SIGCONT) after {cfg.pause_s:.1f} s")
                continue
            cl.kill(arg)
            say(f"killed satellite {arg} (satnode and redis-server) at {time.monotonic() - t0:.1f} s")
            time.sleep(cfg.restart_after_s)
            up_s = cl.restart(arg)
            kills.append({"satellite": arg, "at_s": round((k_ns - t0_ns) / 1e9, 2), "kill_ns": k_ns,
                          "down_ms": round(cfg.restart_after_s * 1e3 + up_s * 1e3, 1)})
            say(f"satellite {arg} back and SERVING {cfg.restart_after_s + up_s:.1f} s after the kill")
        for s in sessions:
            s.join(timeout=cfg.seconds + 4 * PATIENCE_S)

        history = Path(cfg.history) if cfg.history else sdir / "history.json"
        with rec.lock:
            ops = list(rec.ops)
        history.write_text(json.dumps({"format": HISTORY_FORMAT, "ops": ops}))
        say(f"checking {len(ops)} operations with Porcupine")
        out = subprocess.run([str(satcheck), "--timeout", "120s", str(history)], capture_output=True,
                             text=True, timeout=1800)
        if out.returncode not in (0, 1):
            raise OSError(f"satcheck failed: {out.stderr.strip()}")
        lin = json.loads(out.stdout)

        # Unavailability: each streak of failures belongs to the last kill before it.
        per_kill = {k["kill_ns"]: [] for k in kills}
        all_ms = []
        for first, end in rec.streaks:
            ms = (end - first) / 1e6
            all_ms.append(ms)
            before = [k for k in per_kill if k <= first]
            if before:
                per_kill[max(before)].append(ms)
        for k in kills:
            k["unavailability_ms"] = _percentiles(per_kill.pop(k["kill_ns"]))
            # Failover shows here, not as failures: the slowest successful call made
            # while the satellite was down (the one that waited for the takeover).
            down_end = k["kill_ns"] + int(k["down_ms"] * 1e6)
            k["slowest_call_ms"] = round(max(((o["return_ns"] - o["call_ns"]) / 1e6 for o in ops
                                              if o["ok"] and k["kill_ns"] <= o["call_ns"] <= down_end),
                                             default=0.0), 1)
            del k["kill_ns"]
        takeovers = _takeovers(cl.state)
        rebuilt = takeovers.pop("rebuilt", 0)
        lost = {s.sid: sorted(s.pages_lost()) for s in sessions}
        failed = [s for s in sessions if s.gave_up or lost[s.sid] or s.is_alive()]
        return {
            "replicas": cfg.replicas, "constellation": cfg.constellation, "satellites": t,
            "seed": cfg.seed, "seconds": cfg.seconds, "sessions": cfg.sessions,
            "gateways": cfg.gateways,
            "satellites_killed": len(kills), "links_cut": len(cuts), "pauses": len(pauses), "partitions": len(partitions),
            "gateway_kills": len(gateway_kills),
            "requests_total": len(ops), "requests_failed": rec.failed,
            "reads": sum(o["kind"] == "read" for o in ops), "writes": sum(o["kind"] == "write" for o in ops),
            "pages_checked": sum(len(s.final) for s in sessions),
            "pages_lost": sum(len(v) for v in lost.values()),
            "corrupt_reads": rec.corrupt,
            "sessions_failed": len(failed),
            "session_errors": {s.sid: s.error for s in failed if s.error},
            "linearizable": bool(lin["linearizable"]),
            "linearizability": lin,
            "unavailability_ms": _percentiles(all_ms),
            "call_ms": {k: v for k, v in _percentiles([(o["return_ns"] - o["call_ns"]) / 1e6
                                                       for o in ops if o["ok"]]).items() if k != "streaks"},
            "takeovers": takeovers,
            # sessions a gateway did not know (or had elsewhere) and found from their ticket
            "sessions_rebuilt": rebuilt, "gateway_switches": sum(s.switches for s in sessions),
            "kills": kills, "cuts": cuts, "paused": pauses, "partitioned": partitions,
            "gateways_killed": gateway_kills,
            "history": str(history),
        }

