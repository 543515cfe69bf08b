"""A local cluster of real processes on loopback: one redis-server and one satnode
per satellite, and a gateway, started from the binaries ``make build`` puts in bin/.

Everything started is recorded in ``<state_dir>/cluster.json`` (pid, process start
time, command line, ports), so that ``down`` stops exactly those processes and
nothing else, even from another shell. The cluster is gentle on a small machine:
each Redis has a small ``maxmemory`` (noeviction: a page is never silently
dropped), no persistence and the lowest timer rate; nodes log warnings only.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import itertools
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from satpage_client.channel import register_tls_dir

__all__ = [
    "DEFAULT_CONSTELLATION",
    "DEFAULT_PORT_BASE",
    "ClusterState",
    "LocalCluster",
    "PortsTaken",
    "ProcessRecord",
    "RunDir",
    "cluster_down",
    "cluster_status",
    "cluster_up",
    "default_state_dir",
    "find_binary",
    "load_state",
    "run_state_dir",
    "satellites_in",
]

log = logging.getLogger(__name__)

DEFAULT_CONSTELLATION = "walker-star:150/10/1:500:87"
#: gateway gRPC = base, gateway metrics = base + 1, satellite i gRPC = base + 2 + i,
#: satellite i metrics = base + 2 + T + i; gateway g > 0 gRPC = base + 2 + 2T + 2(g - 1),
#: its metrics the port after.
DEFAULT_PORT_BASE = 17000
#: the most gateways `cluster up` starts (docs/faults.md, "Lost gateways")
MAX_GATEWAYS = 8
STATE_FILE = "cluster.json"
#: Page frames of one satellite; 150 x 48 MB stays far below this machine's memory.
REDIS_MAXMEMORY = "48mb"

def satellites_in(constellation: str) -> int:
    """T of a Walker spec, parsed and checked by orbit_model (the one parser of the
    notation; its errors quote the spec and name the bad value)."""
    from orbit_model import parse_walker_spec

    return parse_walker_spec(constellation)[1]


@dataclass
class RunDir:
    """The state directory of a cluster started for one run (``run_state_dir``)."""

    path: Path
    #: made by run_state_dir (and removed by it unless kept), not given by the caller
    own: bool
    #: keep it after the run even when it ends well (``--keep``)
    keep: bool = False
    #: set by the caller when the run's outcome is bad: the directory is kept for a look
    failed: bool = False
    #: whether the directory is still there after the run
    kept: bool = True


@contextmanager
def run_state_dir(state_dir: Path | None, *, prefix: str, keep: bool = False,
                  say: Callable[[str], None] | None = None) -> Iterator[RunDir]:
    """The state directory of a cluster started for one run (``cluster chaos``, a failure replay).

    Given a state_dir, that directory, left in place. Otherwise a fresh one under the
    system's temporary directory (``tempfile.mkdtemp``: mode 0700, ``$TMPDIR`` honoured),
    never the working directory: it holds every satellite's TLS private key and the
    token signing key, and a ``git add -A`` in a checkout would commit them. That one is
    removed when the run ends well, and kept (and named through say) when the run raised,
    when the caller set ``failed``, or with keep: its logs and history are what a failed
    run leaves to look at.
    """
    if state_dir is not None:
        yield RunDir(Path(state_dir), own=False, keep=True)
        return
    rd = RunDir(Path(tempfile.mkdtemp(prefix=prefix)), own=True, keep=keep)
    ok = False
    try:
        yield rd
        ok = True
    finally:
        if ok and not rd.failed and not rd.keep:
            shutil.rmtree(rd.path, ignore_errors=True)
            rd.kept = False
        elif say is not None:
            why = "kept (--keep)" if ok and not rd.failed else "kept after a failed run"
            say(f"state directory {why}: {rd.path} (logs, history; TLS keys in tls/)")


def default_state_dir() -> Path:
    """``$SATPAGE_CLUSTER_DIR`` or ``.cluster`` in the working directory."""
    return Path(os.environ.get("SATPAGE_CLUSTER_DIR", ".cluster"))


def find_binary(name: str) -> Path:
    """``$SATPAGE_BIN_DIR/name``, the wheel's ``satpage/bin/name`` (the linux wheel
    carries the Go binaries: sim/setup.py), the repository's bin/name, or name on PATH."""
    candidates = []
    if os.environ.get("SATPAGE_BIN_DIR"):
        candidates.append(Path(os.environ["SATPAGE_BIN_DIR"]) / name)
    candidates.append(Path(__file__).resolve().parents[1] / "bin" / name)
    candidates.append(Path(__file__).resolve().parents[3] / "bin" / name)
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return c
    found = shutil.which(name)
    if found:
        return Path(found)
    raise OSError(f"{name} not found in {', '.join(str(c) for c in candidates)} or on PATH: "
                  "run `make build` (redis-server comes from the Debian package)")


@dataclass(frozen=True)
class ProcessRecord:
    """One process the cluster started."""

    role: str  # redis | satnode | gateway
    index: int  # satellite index (gateway g: -1 - g)
    pid: int
    start_ticks: int  # /proc/<pid>/stat field 22: tells a reused pid apart
    argv: list[str]
    log_file: str


@dataclass(frozen=True)
class ClusterState:
    """What ``cluster.json`` holds."""

    constellation: str
    port_base: int
    state_dir: str
    gateway: str  # HOST:PORT
    processes: list[ProcessRecord] = field(default_factory=list)
    store: str = "redis"
    isl_schedule: str | None = None  # the satnodes' --isl-schedule (None: time-invariant +Grid)
    isl_schedule_sha256: str | None = None
    replicas: int = 1  # R: the satnodes' --replicas (docs/faults.md)
    tls_dir: str | None = None  # TLS material (docs/security.md); None: started --insecure
    #: live mode (docs/live.md): {"ephemeris", "epoch", "clock_start", "speed", "idle_timeout_s", "push_lead_s"}; None: replay only
    live: dict | None = None
    #: link emulation (docs/emulation.md): {"ephemeris", "epoch", "hours", "isl_capacity_gbps",
    #: "per_hop_processing_ms"}; None: off
    links: dict | None = None
    gateways: int = 1  # gateway replicas; gateway 0 is ``gateway``

    @property
    def satellites(self) -> int:
        return satellites_in(self.constellation)

    def satellite_addr(self, i: int) -> str:
        return f"127.0.0.1:{self.port_base + 2 + i}"

    def _gateway_port(self, g: int) -> int:
        return self.port_base if g == 0 else self.port_base + 2 * self.satellites + 2 * g

    def gateway_addr(self, g: int) -> str:
        """gateway g's gRPC address (g = 0: ``gateway``)."""
        return f"127.0.0.1:{self._gateway_port(g)}"

    def gateway_metrics_port(self, g: int) -> int:
        return self._gateway_port(g) + 1

    @property
    def gateway_addrs(self) -> list[str]:
        return [self.gateway_addr(g) for g in range(self.gateways)]


def _start_ticks(pid: int) -> int | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # comm may contain spaces and parentheses: fields resume after the last ')'.
    rest = text[text.rindex(")") + 2:].split()
    if rest[0] == "Z":
        return None  # a zombie has exited
    return int(rest[19])


def _alive(rec: ProcessRecord) -> bool:
    return _start_ticks(rec.pid) == rec.start_ticks


#: the processes this one started (pid -> Popen), held until reaped: a Popen collected
#: while its process runs warns (and the warning is an error in the tests)
_CHILDREN: dict[int, subprocess.Popen] = {}


def _reap(pid: int, wait: bool = False) -> None:
    """Collect pid's exit status if it has exited (wait: once it has)."""
    proc = _CHILDREN.get(pid)
    if proc is not None:
        if wait:
            proc.wait()
        if proc.poll() is not None:
            _CHILDREN.pop(pid, None)
        return
    try:
        os.waitpid(pid, 0 if wait else os.WNOHANG)
    except ChildProcessError:
        if wait:  # not our child (`satpage cluster kill`): wait till it exited
            _wait_exited(pid)


def _port_free(port: int) -> bool:
    """A daemon could listen on the loopback port now. SO_REUSEADDR as the daemons bind
    (Go's net.Listen and redis-server set it): a socket of a stopped cluster in
    TIME_WAIT does not hold the port, a listener does (listen() fails beside it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
            s.listen(1)
        except OSError:
            return False
    return True


#: Ranges handed out by free_port_base, machine-wide: a range is free when checked but
#: its cluster binds it seconds later, and another process (a second `cluster up`, a
#: parallel test worker) may pick it meanwhile. A booking holds for PORT_BOOKING_S
#: seconds, and for as long as a cluster recorded on the range is (cluster_up claims
#: it): a satellite killed and restarted leaves its port free for seconds, and a
#: cluster that has run for minutes must not lose it to a new one meanwhile.
PORT_BOOK = Path(tempfile.gettempdir()) / "satpage-port-ranges.json"
PORT_BOOKING_S = 120.0


def _booked(h: list) -> bool:
    """A booking still holds: young, or claimed by a cluster whose record is there."""
    if time.time() - float(h[2]) < PORT_BOOKING_S:
        return True
    return len(h) > 3 and (Path(h[3]) / STATE_FILE).is_file()


@contextlib.contextmanager
def _port_book():
    """The bookings still held, under the book's file lock; what the block leaves in
    the list is written back."""
    import fcntl

    with open(PORT_BOOK, "a+") as book:
        fcntl.flock(book, fcntl.LOCK_EX)         # released when the file closes
        book.seek(0)
        try:
            held = [h for h in json.loads(book.read() or "[]") if _booked(h)]
        except (ValueError, TypeError, IndexError, KeyError):
            held = []                            # a damaged book only loses the bookings
        yield held
        book.seek(0)
        book.truncate()
        book.write(json.dumps(held))


def _claim_ports(base: int, n: int, state_dir: Path) -> None:
    """Book ports base..base+n-1 for the cluster recorded in state_dir while it is."""
    with _port_book() as held:
        held[:] = [h for h in held if h[0] != base]
        held.append([base, n, time.time(), str(state_dir)])


def free_port_base(n_satellites: int, low: int = 18000, gateways: int = 1) -> int:
    """A base whose ``2 * gateways + 2 * n_satellites`` ports are free on loopback: random between
    ``low`` (away from the default 17000) and the kernel's ephemeral ports (below them, an
    outgoing connection anywhere on the machine cannot take a killed satellite's port as
    its source port before it restarts), and not handed out to another process in the
    last PORT_BOOKING_S seconds or held by a recorded cluster (the book is shared under
    a file lock)."""
    import numpy as np

    n = 2 * int(gateways) + 2 * int(n_satellites)
    try:
        top = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        top = 32768
    top = max(top, low + n + 1)
    rng = np.random.default_rng()
    with _port_book() as held:
        for _ in range(100):
            base = int(rng.integers(low, top - n))
            if any(base < h[0] + h[1] and h[0] < base + n for h in held):
                continue
            if all(_port_free(p) for p in range(base, base + n)):
                held.append([base, n, time.time()])
                return base
    raise OSError(f"no free range of {n} loopback ports between {low} and {top}")


def schedule_digest(path: Path) -> str:
    """sha256 of an ISL schedule file: which schedule a recorded cluster routes on."""
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError as exc:
        raise OSError(f"cannot read ISL schedule {path}: {exc.strerror or exc}") from exc


def load_state(state_dir: Path | None = None) -> ClusterState | None:
    """The recorded cluster in state_dir, or None when there is none."""
    path = Path(state_dir or default_state_dir()) / STATE_FILE
    try:
        raw = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise OSError(f"cannot read cluster state {path}: {exc}") from exc
    raw["processes"] = [ProcessRecord(**p) for p in raw["processes"]]
    return ClusterState(**raw)


def _save(state: ClusterState) -> None:
    path = Path(state.state_dir) / STATE_FILE
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(asdict(state), indent=1))
    tmp.replace(path)


def _spawn(role: str, index: int, argv: list[str], log_dir: Path,
           env: dict[str, str] | None = None) -> ProcessRecord:
    log_file = log_dir / (f"{role}-{index}.log" if index >= 0 else f"{role}.log" if index == -1
                          else f"{role}-{-1 - index}.log")
    with open(log_file, "ab") as out:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                start_new_session=True, env=env, close_fds=True)
    _CHILDREN[proc.pid] = proc
    ticks = None
    for _ in range(100):
        ticks = _start_ticks(proc.pid)
        if ticks is not None:
            break
        time.sleep(0.001)
    if ticks is None:
        # a daemon that refuses its flags exits within milliseconds: its reason is in the log
        _reap(proc.pid, wait=True)
        raise _exited(f"{_label(role, index)} exited at once", log_file)
    return ProcessRecord(role, index, proc.pid, ticks, argv, str(log_file))


class PortsTaken(OSError):
    """A port of the cluster's range is in use: at cluster_up's check, or taken by
    another process between that check and a daemon's bind. Another range may do
    (cluster_up with no port base)."""


def _exited(what: str, log_file: Path | str) -> OSError:
    """The error of a daemon that exited while starting, with its log's tail; PortsTaken
    when it could not bind its port."""
    tail = _log_tail(log_file)
    cls = PortsTaken if "address already in use" in tail else OSError
    return cls(f"{what}; {log_file}: {tail}")


def _label(role: str, index: int) -> str:
    """A process as errors name it: ``satnode 5``, ``gateway 1`` (its record index is -1 - g)."""
    return f"gateway {-1 - index}" if role == "gateway" else f"{role} {index}"


def _log_tail(path: Path | str, n_chars: int = 400) -> str:
    p = Path(path)
    return p.read_text(errors="replace")[-n_chars:].strip() if p.exists() else ""


def _wait(what: str, check, timeout_s: float, records: list[ProcessRecord]) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        dead = [r for r in records if not _alive(r)]
        if dead:
            r = dead[0]
            raise _exited(f"{_label(r.role, r.index)} (pid {r.pid}) exited while waiting for {what}", r.log_file)
        if time.monotonic() > deadline:
            raise OSError(f"timed out after {timeout_s:.0f} s waiting for {what}")
        time.sleep(0.05)


def _grpc_serving(addrs: list[str], timeout_s: float, tls_dir: str | None = None,
                  server_names: list[str] | None = None) -> list[str]:
    """The addresses whose standard gRPC health check does not say SERVING (over
    TLS with tls_dir, checking that addrs[k] presents server_names[k])."""
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    from satpage_client.channel import insecure_channel, secure_channel

    bad = []
    for k, a in enumerate(addrs):
        ch = (insecure_channel(a) if tls_dir is None else
              secure_channel(a, Path(tls_dir), server_name=server_names[k], client_cert=False))
        with ch:
            try:
                r = health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest(),
                                                         timeout=timeout_s)
                if r.status != health_pb2.HealthCheckResponse.SERVING:
                    bad.append(a)
            except grpc.RpcError:
                bad.append(a)
    return bad


LINK_EPHEMERIS_FILE = "link-ephemeris.bin"


def write_link_ephemeris(sdir: Path, constellation: str, epoch: str | None, hours: float,
                         live: dict | None = None) -> dict:
    """The ephemeris that times a cluster's links (docs/emulation.md): a live cluster's
    own, else ``hours`` of positions from ``epoch`` (default: the default scenario's)
    written to ``<sdir>/link-ephemeris.bin`` (12 bytes per satellite per minute: 2.6 MB
    for 150 satellites over a day). Returns what ClusterState.links records."""
    if live:
        return {"ephemeris": str(live["ephemeris"]), "epoch": str(live.get("epoch")),
                "hours": float(live.get("hours", 0.0))}
    path = sdir / LINK_EPHEMERIS_FILE
    sdir.mkdir(parents=True, exist_ok=True)
    when = write_positions(path, constellation, epoch, hours)
    return {"ephemeris": str(path), "epoch": when.isoformat(), "hours": float(hours)}


def write_positions(path: Path, constellation: str, epoch: str | None, hours: float, *,
                    compress: bool = False) -> dt.datetime:
    """Write ``hours`` of ``constellation``'s positions from ``epoch`` (ISO 8601; default: the
    default scenario's) to ``path`` (orbit_model's ephemeris, 60 s knots; ``compress``: the
    delta-coded body, about a sixth of the size) and return the epoch (UTC)."""
    if not 0 < hours <= 24 * 31:
        raise ValueError(f"link ephemeris horizon {hours} h must be above 0 and at most 31 days")
    from orbit_model import Constellation
    from orbit_model.io import write_ephemeris
    from satpage.scenario import TimeSection

    text = epoch or TimeSection().epoch
    try:
        when = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"link epoch {text!r} is not an ISO 8601 time") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    when = when.astimezone(dt.UTC)
    write_ephemeris(path, Constellation.from_spec(constellation, epoch=when),
                    int(round(hours * 3600 * 1e9)), compress=compress)
    return when


def cluster_up(constellation: str = DEFAULT_CONSTELLATION, *, state_dir: Path | None = None,
               port_base: int | None = DEFAULT_PORT_BASE, store: str = "redis",
               isl_schedule: Path | None = None, timeout_s: float = 120.0,
               insecure: bool = False, live: dict | None = None,
               replicas: int = 1, tls_dir: Path | None = None, emulate_links: bool = True,
               link_epoch: str | None = None, link_hours: float = 24.0,
               isl_capacity_gbps: float = 100.0, per_hop_processing_ms: float = 0.1,
               pprof: bool = False, gateways: int = 1, daemon: str = "satnode") -> ClusterState:
    """Start the cluster and return its state once every process answers. With
    isl_schedule (a satpage-isl-schedule/1 file) the satnodes route on its
    time-varying +Grid; the daemons check the file and name it when it is wrong.
    With replicas = R > 1 every page is also held by the R-1 satellites behind
    its owner in its plane (docs/faults.md).

    Secure by default: a fresh CA, certificates and token keys are written to
    ``<state_dir>/tls`` (docs/security.md) and every connection is mutual TLS;
    insecure=True starts plain-text daemons with no access control (debugging);
    tls_dir brings your own material in the same layout instead (checked for the
    files each daemon needs before anything starts).

    port_base None: a range free_port_base picks, and another when a port of it is
    taken while the daemons start (PortsTaken), three in all.

    Raises OSError when a cluster is already recorded in state_dir and running, when
    a port is taken (PortsTaken), or when a process does not come up (the ones
    started are stopped again).

    pprof serves the Go profiler on every satnode's metrics port (``--pprof``;
    bench/profile_fault.py reads it).

    daemon "floornode" starts, in each satnode's place, the floor under a page
    fault (the satnode's transport and security without its page logic; store
    "memory" only: it keeps nothing), which bench/bench_services.py measures
    beside the satnodes (docs/services.md, "The floor, measured as the fault is",
    "The floor under the p99 added per hop").

    gateways starts that many gateway replicas (``ClusterState.gateway_addrs``): each
    serves every session, one registered at another included (docs/faults.md, "Lost
    gateways").

    live puts the gateway in live mode: ``{"ephemeris": PATH, "speed": FACTOR,
    "idle_timeout_s": S}`` (``satpage.live.live_up`` writes the ephemeris); the
    clock runs in real time from the ephemeris' epoch until the gateway starts, and
    at ``speed`` from there (``clock_start`` is recorded).

    emulate_links (on by default, docs/emulation.md): relayed hops wait their ISL's
    delay and the gateway the ground link of a session with a place, timed by an
    ephemeris of ``link_hours`` from ``link_epoch`` (ISO 8601; default: the default
    scenario's epoch) written into the state directory, or by the live ephemeris;
    every directed ISL carries ``isl_capacity_gbps`` and every hop adds
    ``per_hop_processing_ms`` each way (the engine's terms of the same names)."""
    if port_base is None:
        return _up_on_free_ports(
            constellation, state_dir=state_dir, store=store, isl_schedule=isl_schedule, timeout_s=timeout_s,
            insecure=insecure, live=live, replicas=replicas, tls_dir=tls_dir, emulate_links=emulate_links,
            link_epoch=link_epoch, link_hours=link_hours, isl_capacity_gbps=isl_capacity_gbps,
            per_hop_processing_ms=per_hop_processing_ms, pprof=pprof, gateways=gateways, daemon=daemon)
    n = satellites_in(constellation)
    if store not in ("redis", "memory"):
        raise ValueError(f"store must be redis or memory, got {store!r}")
    if daemon not in ("satnode", "floornode"):
        raise ValueError(f"daemon must be satnode or floornode, got {daemon!r}")
    if daemon == "floornode" and store != "memory":
        raise ValueError(f"daemon floornode keeps no page: store must be memory, got {store!r}")
    from orbit_model import parse_walker_spec

    per_plane = n // parse_walker_spec(constellation)[2]
    if not 1 <= replicas <= per_plane:
        raise ValueError(f"replicas {replicas} outside [1, {per_plane}] (satellites per plane)")
    if not 1 <= gateways <= MAX_GATEWAYS:
        raise ValueError(f"gateways {gateways} outside [1, {MAX_GATEWAYS}]")
    sdir = Path(state_dir or default_state_dir()).resolve()
    old = load_state(sdir)
    if old is not None and any(_alive(p) for p in old.processes):
        raise OSError(f"a cluster recorded in {sdir} is running (gateway {old.gateway}): "
                      "run `satpage cluster down` first")
    ports = [port_base + k for k in range(2 * gateways + 2 * n)]
    if ports[-1] > 65535 or port_base < 1024:
        raise ValueError(f"port base {port_base}: ports {ports[0]}..{ports[-1]} must lie in 1024..65535")
    taken = [p for p in ports if not _port_free(p)]
    if taken:
        raise PortsTaken(f"ports {taken[:5]}{'...' if len(taken) > 5 else ''} on 127.0.0.1 are in use: "
                         "pick another --port-base")
    satnode, gateway = find_binary(daemon), find_binary("gateway")
    redis_bin = find_binary("redis-server") if store == "redis" else None
    log_dir, redis_dir = sdir / "logs", sdir / "redis"
    log_dir.mkdir(parents=True, exist_ok=True)
    redis_dir.mkdir(parents=True, exist_ok=True)
    sock_len = len(str(redis_dir / f"{n - 1}.sock"))
    if sock_len > 100:
        raise ValueError(f"state dir {sdir} is too long for Unix sockets ({sock_len} > 100 bytes)")
    schedule_args: list[str] = []
    digest = None
    if isl_schedule is not None:
        isl_schedule = Path(isl_schedule).resolve()
        digest = schedule_digest(isl_schedule)
        schedule_args = ["--isl-schedule", str(isl_schedule)]
    security_args = ["--insecure"]
    if insecure and tls_dir is not None:
        raise ValueError("insecure and tls_dir exclude each other")
    if tls_dir is not None:
        tls_dir = Path(tls_dir).resolve()
        need = ["ca.pem", "gateway.pem", "gateway-key.pem", "token-signing-key.pem", "token-verify-keys.pem"]
        need += [f"satellite-{i}{s}.pem" for i in range(n) for s in ("", "-key")]
        missing = [f for f in need if not (tls_dir / f).is_file()]
        if missing:
            raise ValueError(f"TLS directory {tls_dir} lacks {', '.join(missing[:4])}"
                             f"{' ...' if len(missing) > 4 else ''} (layout: docs/security.md)")
        tls_dir = str(tls_dir)
        security_args = ["--tls-dir", tls_dir]
    elif not insecure:
        from satpage.cluster.certs import write_tls_dir

        tls_dir = str(write_tls_dir(sdir / "tls", n).tls_dir)
        security_args = ["--tls-dir", tls_dir]
    link_args, links = ["--emulate-links=false"], None
    if emulate_links:
        links = write_link_ephemeris(sdir, constellation, link_epoch, link_hours, live)
        links |= {"isl_capacity_gbps": float(isl_capacity_gbps),
                  "per_hop_processing_ms": float(per_hop_processing_ms)}
        link_args = ["--link-ephemeris", links["ephemeris"], "--isl-capacity-gbps", repr(float(isl_capacity_gbps)),
                     "--per-hop-processing-ms", repr(float(per_hop_processing_ms))]
    state = ClusterState(constellation=constellation, port_base=port_base, state_dir=str(sdir),
                         gateway=f"127.0.0.1:{port_base}", store=store,
                         isl_schedule=None if isl_schedule is None else str(isl_schedule),
                         isl_schedule_sha256=digest, tls_dir=tls_dir, live=dict(live) if live else None,
                         replicas=replicas, links=links, gateways=gateways)
    records = state.processes
    try:
        _save(state)
        _claim_ports(port_base, len(ports), sdir)
        if redis_bin is not None:
            for i in range(n):
                sock = redis_dir / f"{i}.sock"
                sock.unlink(missing_ok=True)
                argv = [str(redis_bin), "--port", "0", "--unixsocket", str(sock),
                        "--unixsocketperm", "700", "--save", "", "--appendonly", "no",
                        "--maxmemory", REDIS_MAXMEMORY, "--maxmemory-policy", "noeviction",
                        "--hz", "1", "--dynamic-hz", "no", "--databases", "1",
                        "--dir", str(redis_dir), "--loglevel", "warning"]
                records.append(_spawn("redis", i, argv, log_dir))
            _save(state)
            _wait("redis-server sockets", lambda: all((redis_dir / f"{i}.sock").exists()
                                                      for i in range(n)), timeout_s, records)
        env = _daemon_env()
        for i in range(n):
            argv = [str(satnode), "--index", str(i), "--constellation", constellation,
                    "--listen", state.satellite_addr(i),
                    "--metrics-listen", f"127.0.0.1:{port_base + 2 + n + i}",
                    "--store", store, "--redis", str(redis_dir / f"{i}.sock"),
                    "--peer-template", "127.0.0.1:{port}", "--peer-port-base", str(port_base + 2),
                    "--log-level", "warn", "--stop-timeout", "5s", "--replicas", str(replicas),
                    *schedule_args, *security_args, *link_args, *(["--pprof"] if pprof else [])]
            records.append(_spawn("satnode", i, argv, log_dir, env))
        _save(state)
        sat_addrs = [state.satellite_addr(i) for i in range(n)]
        _wait("satnodes to listen", lambda: not any(_port_free(port_base + 2 + i) for i in range(n)),
              timeout_s, records)
        live_args = []
        if live:
            start = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
            state.live["clock_start"] = start
            live_args = ["--ephemeris", str(live["ephemeris"]), "--speed", repr(float(live.get("speed", 1.0))),
                         "--clock-start", start, "--session-idle", f"{float(live.get('idle_timeout_s', 3600.0))}s",
                         "--push-lead", f"{float(live.get('push_lead_s', 10.0))}s"]
        for g in range(gateways):
            argv = [str(gateway), "--constellation", constellation, "--listen", state.gateway_addr(g),
                    "--metrics-listen", f"127.0.0.1:{state.gateway_metrics_port(g)}",
                    "--peer-template", "127.0.0.1:{port}", "--peer-port-base", str(port_base + 2),
                    "--log-level", "warn", "--stop-timeout", "5s", *security_args, *link_args, *live_args]
            records.append(_spawn("gateway", -1 - g, argv, log_dir, _daemon_env(gomaxprocs=False)))
        _save(state)
        _wait("the gateways to listen", lambda: not any(_port_free(state._gateway_port(g)) for g in range(gateways)),
              timeout_s, records)
        # A satnode reports SERVING once it has its state (with replicas: taken
        # back from them), a moment after it listens: wait for it.
        names = dict(zip(sat_addrs, _server_names(n)[:n], strict=True))
        names |= {a: "gateway.satpage" for a in state.gateway_addrs}
        bad = sat_addrs + state.gateway_addrs
        deadline = time.monotonic() + timeout_s
        while bad:
            bad = _grpc_serving(bad, timeout_s=5.0, tls_dir=tls_dir,
                                server_names=[names[a] for a in bad])
            dead = [r for r in records if not _alive(r)]
            if bad and dead:
                r = dead[0]
                raise _exited(f"{_label(r.role, r.index)} (pid {r.pid}) exited while waiting for SERVING",
                              r.log_file)
            if bad and time.monotonic() > deadline:
                raise OSError(f"not SERVING by gRPC health after {timeout_s:.0f} s: {bad[:5]}")
            if bad:
                time.sleep(0.2)
    except BaseException:
        cluster_down(sdir)
        raise
    for a in state.gateway_addrs:
        register_tls_dir(a, state.tls_dir)  # replays in this process find the material
    log.info("cluster up: %d satellites, gateways %s, state %s", n, ", ".join(state.gateway_addrs), sdir)
    return state


def _up_on_free_ports(constellation: str, *, attempts: int = 3, **kwargs) -> ClusterState:
    """``cluster_up`` (its keyword arguments but port_base) on a range free_port_base
    picks. Ranges are booked among satpage's processes, but any other process may take
    a port between the check and a daemon's bind: then another range, up to
    ``attempts`` in all."""
    n, gateways = satellites_in(constellation), kwargs.get("gateways", 1)
    for _ in range(attempts - 1):
        base = free_port_base(n, gateways=gateways)
        try:
            return cluster_up(constellation, port_base=base, **kwargs)
        except PortsTaken as exc:
            log.warning("port range at %d taken while the cluster started (%s): another range", base, exc)
    return cluster_up(constellation, port_base=free_port_base(n, gateways=gateways), **kwargs)


def _server_names(n: int) -> list[str]:
    """TLS server names of satellites 0..n-1, then the gateway."""
    from satpage.cluster.certs import satellite_name

    return [satellite_name(i) for i in range(n)] + ["gateway.satpage"]


def cluster_status(state_dir: Path | None = None, *, check_health: bool = True) -> dict:
    """Which recorded processes are alive, and (optionally) gRPC health of the daemons."""
    state = load_state(state_dir)
    if state is None:
        return {"running": False, "state_dir": str(Path(state_dir or default_state_dir()).resolve()),
                "processes": 0}
    alive = {"redis": 0, "satnode": 0, "gateway": 0}
    dead = []
    for p in state.processes:
        if _alive(p):
            alive[p.role] = alive.get(p.role, 0) + 1  # redis, satnode, gateway, refresher (live)
        else:
            dead.append({"role": p.role, "index": p.index, "pid": p.pid})
    out = {"running": bool(sum(alive.values())) and not dead, "state_dir": state.state_dir,
           "constellation": state.constellation, "satellites": state.satellites,
           "gateway": state.gateway, "gateways": state.gateway_addrs, "tls_dir": state.tls_dir,
           "insecure": state.tls_dir is None, "store": state.store, "alive": alive,
           "processes": len(state.processes), "dead": dead}
    if check_health and alive["satnode"] + alive["gateway"]:
        addrs = [state.satellite_addr(i) for i in range(state.satellites)] + state.gateway_addrs
        out["not_serving"] = _grpc_serving(addrs, timeout_s=2.0, tls_dir=state.tls_dir,
                                           server_names=_server_names(state.satellites)
                                           + ["gateway.satpage"] * (state.gateways - 1))
        out["running"] = out["running"] and not out["not_serving"]
    return out


def cluster_down(state_dir: Path | None = None, *, timeout_s: float = 10.0) -> int:
    """Stop exactly the processes recorded in state_dir (SIGTERM, then SIGKILL after
    timeout_s) and remove the record; returns how many were running."""
    sdir = Path(state_dir or default_state_dir()).resolve()
    state = load_state(sdir)
    if state is None:
        return 0
    # Gateway (and a live cluster's ephemeris refresher) first, then nodes, then their
    # Redis: nothing is left talking to a dead store.
    order = {"refresher": 0, "gateway": 0, "satnode": 1, "redis": 2}
    procs = sorted(state.processes, key=lambda p: order.get(p.role, 3))
    running = 0
    for group in (0, 1, 2):
        batch = [p for p in procs if order.get(p.role) == group and _alive(p)]
        running += len(batch)
        for p in batch:
            try:
                os.kill(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + timeout_s
        while True:
            for p in batch:
                _reap(p.pid)
            left = [p for p in batch if _alive(p)]
            if not left:
                break
            if time.monotonic() > deadline:
                for p in left:
                    log.warning("%s (pid %d) ignored SIGTERM for %.0f s: killing",
                                _label(p.role, p.index), p.pid, timeout_s)
                    try:
                        os.kill(p.pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                time.sleep(0.1)
                for p in left:
                    _reap(p.pid)
                break
            time.sleep(0.05)
    for a in state.gateway_addrs:
        register_tls_dir(a, None)
    (sdir / STATE_FILE).unlink(missing_ok=True)
    shutil.rmtree(sdir / "redis", ignore_errors=True)
    log.info("cluster down: stopped %d processes recorded in %s", running, sdir)
    return running


def _wait_exited(pid: int, timeout_s: float = 10.0) -> None:
    """Wait until pid has exited: gone, or a zombie with no other thread left. A
    killed multi-threaded process's leader turns zombie before its other threads
    have exited, and their shared descriptors (its listening sockets) close with the
    last of them: a satnode started again at once found its port in use."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout_s:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            if stat.rpartition(")")[2].split()[0] == "Z" and len(os.listdir(f"/proc/{pid}/task")) <= 1:
                return
        except OSError:
            return
        time.sleep(0.01)
    raise OSError(f"process {pid} did not exit {timeout_s:.0f} s after SIGKILL")


def _daemon_env(gomaxprocs: bool = True) -> dict[str, str]:
    """The environment of a satnode (one P each: 150 daemons on 2 cores) or, without
    GOMAXPROCS, of a gateway (it fans out); none of the caller's SATPAGE_ settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SATPAGE_")}
    if gomaxprocs:
        env["GOMAXPROCS"] = "1"
    env["GOGC"] = "200"
    return env


def isls(constellation: str) -> list[tuple[int, int]]:
    """The +Grid ISLs of a Walker spec (a < b, sorted): orbit_model's, which the Go
    satellites' own grid is checked against (services/testdata/isl_vectors.json)."""
    from orbit_model import Constellation, IslNetwork

    # a Walker shell's links do not depend on the epoch it is placed at
    ends = IslNetwork(Constellation.from_spec(constellation, epoch="2000-01-01T12:00:00Z")).links.endpoints
    return [(int(a), int(b)) for a, b in ends.tolist()]


class LocalCluster:
    """The one owner of a local cluster's processes: it starts them (``up``), takes a
    satellite's or the gateway's process down in the ways a fault injector wants (SIGKILL,
    SIGSTOP/SIGCONT, SIGTERM), starts them again with the same command line, cuts ISLs,
    and stops everything (``down``). Every change is written to ``cluster.json`` at once,
    so ``satpage cluster down`` from another shell stops exactly what runs.

    Thread-safe: chaos's nemesis and its sessions' threads share one instance."""

    def __init__(self, state: ClusterState, *, owned: bool = False) -> None:
        self._state = state
        self.owned = owned  # down() on leaving the with-block
        self.lock = threading.Lock()  # guards _state (records replaced on restart), cut and _partitions
        self.cut: list[tuple[int, int]] = []
        #: satellite -> (its links added to cut, or held cut by it alone: one way; both ways;
        #: cut off from the gateways too)
        self._partitions: dict[int, tuple[list[tuple[int, int]], bool, bool]] = {}

    @classmethod
    def up(cls, constellation: str = DEFAULT_CONSTELLATION, *, state_dir: Path | None = None,
           port_base: int | None = None, **kwargs) -> LocalCluster:
        """``cluster_up`` (its keyword arguments) on a free port range unless port_base is
        given; the cluster is owned: ``down`` (or leaving a with-block) stops it."""
        return cls(cluster_up(constellation, state_dir=state_dir, port_base=port_base, **kwargs),
                   owned=True)

    @classmethod
    def attach(cls, state_dir: Path | None = None) -> LocalCluster | None:
        """The cluster recorded in state_dir (None when none is), not owned."""
        state = load_state(state_dir)
        return None if state is None or not state.processes else cls(state)

    def __enter__(self) -> LocalCluster:
        return self

    def __exit__(self, *exc) -> None:
        if self.owned:
            self.down()

    # -- what it is ---------------------------------------------------------------------

    @property
    def state(self) -> ClusterState:
        with self.lock:
            return self._state

    @property
    def gateway(self) -> str:
        return self.state.gateway

    @property
    def tls_dir(self) -> Path | None:
        d = self.state.tls_dir
        return Path(d) if d else None

    @property
    def satellites(self) -> int:
        return self.state.satellites

    def _records(self, index: int, roles: tuple[str, ...]) -> list[ProcessRecord]:
        with self.lock:
            return [p for p in self._state.processes if p.index == index and p.role in roles]

    @staticmethod
    def _signal(recs: list[ProcessRecord], sig: int) -> None:
        for p in recs:
            if not _alive(p):
                continue
            try:
                os.kill(p.pid, sig)
            except ProcessLookupError:
                pass

    @staticmethod
    def _wait_gone(recs: list[ProcessRecord]) -> None:
        for p in recs:
            _reap(p.pid, wait=True)

    def _replace(self, old: list[ProcessRecord], new: list[ProcessRecord]) -> None:
        with self.lock:
            keep = [p for p in self._state.processes if p not in old]
            self._state = replace(self._state, processes=keep + new)
            _save(self._state)

    def _check_satellite(self, i: int) -> None:
        if not 0 <= i < self.satellites:
            raise ValueError(f"satellite {i}: the cluster has satellites 0-{self.satellites - 1}")

    def _check_gateway(self, g: int) -> None:
        if not 0 <= g < self.state.gateways:
            raise ValueError(f"gateway {g}: the cluster has gateways 0-{self.state.gateways - 1}")

    @property
    def gateways(self) -> list[str]:
        """Every gateway's address, gateway 0 first."""
        return self.state.gateway_addrs

    # -- satellites ---------------------------------------------------------------------

    def kill(self, i: int) -> None:
        """SIGKILL satellite i's satnode and redis-server (its memory is gone); returns
        once both have exited."""
        self._check_satellite(i)
        recs = self._records(i, ("satnode", "redis"))
        self._signal(recs, signal.SIGKILL)
        self._wait_gone(recs)

    def stop(self, i: int) -> None:
        """SIGSTOP satellite i's satnode (a pause: it holds its connections and memory and
        answers nothing until ``cont``)."""
        self._check_satellite(i)
        self._signal(self._records(i, ("satnode",)), signal.SIGSTOP)

    def cont(self, i: int) -> None:
        """SIGCONT satellite i's satnode (the end of a ``stop``)."""
        self._check_satellite(i)
        self._signal(self._records(i, ("satnode",)), signal.SIGCONT)

    def restart(self, i: int, timeout_s: float = 120.0) -> float:
        """Start satellite i's redis-server and satnode again, empty, with their recorded
        command lines (killing them first if they still run); seconds until SERVING. It
        gets the ISLs cut now (``set_faults``)."""
        from satpage.cluster.certs import satellite_name

        self._check_satellite(i)
        t0 = time.monotonic()
        st = self.state
        log_dir = Path(st.state_dir) / "logs"
        old = {p.role: p for p in self._records(i, ("satnode", "redis"))}
        if any(_alive(p) for p in old.values()):
            self.kill(i)
        new = []
        if "redis" in old:
            sock = Path(st.state_dir) / "redis" / f"{i}.sock"
            sock.unlink(missing_ok=True)
            new.append(_spawn("redis", i, old["redis"].argv, log_dir))
            while not sock.exists():
                if time.monotonic() - t0 > timeout_s:
                    raise OSError(f"redis-server of satellite {i} did not come back")
                time.sleep(0.02)
        # Its ports, free once the killed process has closed them: a bind before fails.
        ports = [int(a.rpartition(":")[2]) for flag, a in itertools.pairwise(old["satnode"].argv)
                 if flag in ("--listen", "--metrics-listen")]
        while not all(_port_free(p) for p in ports):
            if time.monotonic() - t0 > timeout_s:
                raise OSError(f"satellite {i}: ports {ports} still in use {timeout_s:.0f} s after its kill")
            time.sleep(0.02)
        new.append(_spawn("satnode", i, old["satnode"].argv, log_dir, _daemon_env()))
        self._replace(list(old.values()), new)
        addr = st.satellite_addr(i)
        names = [satellite_name(i)]
        while _grpc_serving([addr], timeout_s=2.0, tls_dir=st.tls_dir, server_names=names):
            if time.monotonic() - t0 > timeout_s:
                raise OSError(f"satellite {i} not SERVING {timeout_s:.0f} s after its restart")
            time.sleep(0.05)
        self.set_faults([i])
        return time.monotonic() - t0

    def fail(self, i: int) -> float:
        """Kill satellite i and start it again at once, empty; seconds until SERVING
        (the failure replay's killer, ``failreplay.Killer``)."""
        self.kill(i)
        return self.restart(i)

    # -- gateways -----------------------------------------------------------------------

    def kill_gateway(self, g: int = 0, sig: int = signal.SIGKILL) -> None:
        """Send gateway g sig (SIGKILL, or SIGTERM: a graceful stop) and wait until it
        exited."""
        if sig not in (signal.SIGKILL, signal.SIGTERM):
            raise ValueError(f"kill_gateway sends SIGKILL or SIGTERM, got {sig!r} (a pause: stop_gateway)")
        self._check_gateway(g)
        recs = self._records(-1 - g, ("gateway",))
        self._signal(recs, sig)
        self._wait_gone(recs)

    def stop_gateway(self, g: int = 0) -> None:
        """SIGSTOP gateway g (a pause)."""
        self._check_gateway(g)
        self._signal(self._records(-1 - g, ("gateway",)), signal.SIGSTOP)

    def cont_gateway(self, g: int = 0) -> None:
        """SIGCONT gateway g."""
        self._check_gateway(g)
        self._signal(self._records(-1 - g, ("gateway",)), signal.SIGCONT)

    def restart_gateway(self, g: int = 0, timeout_s: float = 120.0) -> float:
        """Start gateway g again with its recorded command line (killing it first if it
        still runs); seconds until SERVING."""
        self._check_gateway(g)
        t0 = time.monotonic()
        (old,) = self._records(-1 - g, ("gateway",))
        if _alive(old):
            self.kill_gateway(g)
        st = self.state
        new = _spawn("gateway", -1 - g, old.argv, Path(st.state_dir) / "logs", _daemon_env(gomaxprocs=False))
        self._replace([old], [new])
        while _grpc_serving([st.gateway_addr(g)], timeout_s=2.0, tls_dir=st.tls_dir,
                            server_names=["gateway.satpage"]):
            if not _alive(new):
                raise OSError(f"gateway {g} exited at its restart; {new.log_file}: {_log_tail(new.log_file)}")
            if time.monotonic() - t0 > timeout_s:
                raise OSError(f"gateway {g} not SERVING {timeout_s:.0f} s after its restart")
            time.sleep(0.05)
        return time.monotonic() - t0

    # -- links and other processes ------------------------------------------------------

    def _satellite_channel(self, i: int):
        import grpc

        from satpage.cluster.certs import satellite_name

        st = self.state
        addr = st.satellite_addr(i)
        if not st.tls_dir:
            return grpc.insecure_channel(addr)
        d = Path(st.tls_dir)
        # The ground segment sets the cut ISLs with the gateway's certificate.
        creds = grpc.ssl_channel_credentials(root_certificates=(d / "ca.pem").read_bytes(),
                                             private_key=(d / "gateway-key.pem").read_bytes(),
                                             certificate_chain=(d / "gateway.pem").read_bytes())
        return grpc.secure_channel(addr, creds, options=[("grpc.ssl_target_name_override", satellite_name(i))])

    def cut_links(self, links: list[tuple[int, int]]) -> None:
        """Cut these ISLs (a < b) as well as the ones cut before, on every satellite."""
        with self.lock:
            self.cut.extend(tuple(sorted(ab)) for ab in links)
        self.set_faults(list(range(self.satellites)))

    def partition(self, i: int, *, both_ways: bool = True, ground: bool = False) -> list[tuple[int, int]]:
        """Cut satellite i off from its ISL neighbours until ``heal(i)``: both ways (every
        satellite holds its links cut) or one way (only i does: it cannot send on them, its
        neighbours still can); with ground, from the gateways too (it refuses their requests:
        SetFaults ground_cut). Returns the links cut."""
        self._check_satellite(i)
        mine = [lk for lk in self.isls() if i in lk]
        with self.lock:
            if i in self._partitions:
                raise ValueError(f"satellite {i} is partitioned already")
            added = [lk for lk in mine if lk not in self.cut] if both_ways else mine
            if both_ways:
                self.cut.extend(added)
            self._partitions[i] = (added, both_ways, ground)
        self.set_faults(list(range(self.satellites)) if both_ways else [i])
        return mine

    def heal(self, i: int) -> None:
        """End satellite i's ``partition``."""
        with self.lock:
            added, both_ways, _ = self._partitions.pop(i)
            if both_ways:
                self.cut = [lk for lk in self.cut if lk not in added]
        self.set_faults(list(range(self.satellites)) if both_ways else [i])

    def isls(self) -> list[tuple[int, int]]:
        """The cluster's +Grid ISLs (``isls``)."""
        return isls(self.state.constellation)

    def set_faults(self, satellites: list[int]) -> None:
        """Send the faults of now to these satellites (SetFaults: the ISLs cut, with the
        ones a one-way partition cuts at that satellite alone; a dead one gets its set when
        it restarts)."""
        from satpage_client.rpc import satpage_pb2 as pb
        from satpage_client.rpc import satpage_pb2_grpc as rpc

        with self.lock:
            cut = list(self.cut)
            one_way = {k: links for k, (links, both, _) in self._partitions.items() if not both}
            ground = {k for k, (_, _, g) in self._partitions.items() if g}
        for i in satellites:
            req = pb.SetFaultsRequest(cut=[pb.Link(a=a, b=b) for a, b in cut + one_way.get(i, [])],
                                      ground_cut=i in ground)
            with self._satellite_channel(i) as ch:
                try:
                    rpc.SatelliteServiceStub(ch).SetFaults(req, timeout=5)
                except Exception as exc:  # noqa: BLE001 - a dead satellite gets the set when it restarts
                    log.info("SetFaults to satellite %d: %s", i, exc)

    def spawn(self, role: str, index: int, argv: list[str], env: dict[str, str] | None = None) -> ProcessRecord:
        """Start another process of the cluster (a live cluster's ephemeris refresher),
        recorded so that ``down`` stops it too."""
        rec = _spawn(role, index, argv, Path(self.state.state_dir) / "logs", env)
        self._replace([], [rec])
        return rec

    def down(self, timeout_s: float = 10.0) -> int:
        """Stop every recorded process (``cluster_down``); how many were running."""
        return cluster_down(Path(self.state.state_dir), timeout_s=timeout_s)
