"""Where the CPU of a one-page, one-hop page fault goes (docs/services.md, "Speed").

    .venv/bin/python bench/profile_fault.py [--seconds 5] [--perf] [--switches] [--syscalls] [--floor]
        [--read-stream] [--out DIR] [--json]

Starts the default local cluster (150 satellites, mutual TLS) with the Go
profiler on every satnode, and in the same run:

- measures the bare gRPC round trip (health Check, before and after the
  faults: the ratios use the mean) and one-hop page faults at one page per
  request (bin/satload, 32 sessions, closed loop), their ratio and the CPU per
  request of the cluster's processes and the load generator;
- counts the context switches (wake-ups) per request of the satnodes and the
  redis-servers (every thread, /proc/PID/task/*/status), net of what the idle
  cluster does in the same time (its timers: measured for IDLE_S first);
- measures the same faults again with a request_id each (exactly-once, as the
  gateway and the replayer send them): rate, CPU, switches and Redis calls;
- counts the Redis commands per fault (INFO commandstats of all 150
  redis-servers, before and after; the load generator's set-up, 64 writes per
  session, is counted in the calls and subtracted from nothing: it is printed);
- records a CPU profile of every satnode during the fault run (pprof, merged
  into DIR/pprof-satnodes.pb.gz when `go` is on PATH; the JSON's pprof_cum_share
  is each top function's share of its samples) and, with --perf, a
  system-wide `perf record -a -g` (DIR/perf.data) whose satnode samples are
  grouped by what their stack holds (the first rule that matches wins);
- with --syscalls, counts the system calls of the satnodes and of the
  redis-servers by kind over a window in the middle of the bare run and of the
  fault run (`perf stat -e syscalls:sys_enter_*`, counting only), per request
  (the requests in a window: each run's rate times the window), and the CPU per
  request of the satnodes, the redis-servers and the load generator over the
  same windows (/proc);
- with --switches, records every context switch of the fault run with its
  stack (`perf record -e sched:sched_switch -a -g`, DIR/switches.data) and
  groups the satnodes' by what the thread that slept was doing (SWITCHES).
  Recording every switch costs CPU itself: take rates from a run without it.

- with --floor, after the satnodes' cluster, starts the floor's (floornodes: a
  satnode's transport and security without its page logic; docs/services.md,
  "The floor, measured as the fault is") and measures the same bare round trips
  and one-hop reads there, profiled over the same window; both profiles' CPU
  per read is grouped by the goroutine each sample ran on (ROLES: the read
  stream's handler at S, the fetch stream's at O, their readers and writers,
  unary calls, background releases, the scheduler). Read it with --read-stream:
  without, the reads themselves are unary calls. It needs `go` (pprof) on PATH.

Not a make target (about two minutes; three with --floor). perf needs the `linux-perf` package; on a VM
without hardware counters it samples the cpu-clock.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from bench_services import floor_cluster, satload

from satpage.cluster import cluster_down, cluster_up
from satpage.cluster.local import DEFAULT_CONSTELLATION

# Stack contents -> bucket, first match wins (Go symbols as perf prints them).
BUCKETS = [
    ("page faults (first touch of heap memory)", ["asm_exc_page_fault"]),
    ("garbage collector", ["gcBgMarkWorker", "gcAssistAlloc", "runtime.gcStart", "bgsweep", "bgscavenge"]),
    ("runtime: sysmon thread", ["runtime.sysmon"]),
    ("Redis client (go-redis, its syscalls)", ["go-redis"]),
    ("TLS record crypto", ["crypto/internal/fips140/aes", "gcmAes"]),
    ("gRPC client call S -> O", ["grpc.(*ClientConn).Invoke"]),
    ("gRPC transport: reading (read syscalls, HTTP/2 frames, TLS open)", ["http2Server).HandleStreams",
                                                                          "http2Client).reader"]),
    ("gRPC transport: writing (loopy writer, write syscalls, TLS seal)", ["loopyWriter"]),
    ("access control (token, request codec)", ["auth.(*Policy).admit"]),
    ("metrics (Prometheus)", ["prometheus"]),
    ("satnode handlers (page tables, frames, routing)", ["internal/node."]),
    ("gRPC server: decode, dispatch, encode", ["grpc.(*Server).processRPC", "grpc.(*Server).handleStream"]),
    ("runtime: scheduler, idle, netpoll", ["runtime.schedule", "runtime.findRunnable", "runtime.park_m",
                                           "runtime.mcall", "runtime.netpoll", "runtime.stopm", "runtime.mstart",
                                           "runtime.goexit"]),
]

# A redis-server sample -> what it was doing (kernel frames; Redis's own code
# is stripped of most symbols, so the rest is one bucket).
REDIS_BUCKETS = [
    ("page faults (first touch of memory)", ["asm_exc_page_fault"]),
    ("epoll_wait: idle, then switched in when a command arrives", ["do_epoll_wait"]),
    ("reading a command from the socket", ["sock_read_iter", "unix_stream_recvmsg"]),
    ("writing the reply (and waking the satnode)", ["sock_write_iter", "unix_stream_sendmsg"]),
    ("other kernel work (scheduler, interrupts)", ["[kernel.kallsyms]"]),
]

# A satnode thread's context switch -> why it slept: the first whose patterns
# the stack holds all of wins.
SWITCHES = [
    ("preempted while running (the machine is shared)", ["prev_state=R"]),
    ("sysmon thread, short sleep between its checks (usleep, 20 us and up)", ["runtime.usleep", "runtime.sysmon"]),
    ("sysmon thread, deep sleep until the process is busy again (notetsleep)", ["runtime.notetsleep",
                                                                                 "runtime.sysmon"]),
    ("sysmon thread, other", ["runtime.sysmon"]),
    ("a syscall waking the sysmon thread (entersyscallWakeSysmon)", ["entersyscallWakeSysmon"]),
    ("idle, waiting for the network (netpoll: a request, a reply, Redis)", ["runtime.netpoll"]),
    ("a thread without work parked (stopm)", ["runtime.stopm"]),
    ("Redis client (go-redis)", ["go-redis"]),
    ("socket write (gRPC, TLS)", ["internal/poll.(*FD).Write"]),
    ("socket read (gRPC, TLS)", ["internal/poll.(*FD).Read"]),
    ("garbage collector", ["gcBgMarkWorker", "runtime.gcStart", "bgsweep", "bgscavenge"]),
    # Stacks perf could not unwind past the kernel (a busy machine): by the syscall.
    ("kernel stack only: nanosleep (the sysmon thread's short sleep)", ["do_nanosleep"]),
    ("kernel stack only: epoll wait (idle, waiting for the network)", ["do_epoll_wait"]),
    ("kernel stack only: futex wait (sysmon's deep sleep or a parked thread)", ["futex_wait"]),
]


SETUP_S = 4  # seconds the profiles wait for the load generator's set-up

# --floor: a pprof sample -> the goroutine it ran on, by the first of these
# whose patterns its stack holds (satnodes and floornodes alike).
ROLES = [
    ("S: read stream handler (the read, its fetch sent)", ["ReadStream.func1"]),
    ("O: fetch stream handler (the fetch answered)", ["FetchStream.func1"]),
    ("S: fetch stream reader (the answer to the read)", ["peers.(*fetchStream).read"]),
    ("unary calls (handovers, tables, releases)", ["wrapUnaryHandler"]),
    ("background releases and held adopts", ["releaseInBackground", "heldWaitPassed"]),
    ("stream message loops (receive, dispatch)", ["streams.Serve"]),
    ("gRPC transport: reading", ["http2Server).HandleStreams", "http2Client).reader"]),
    ("gRPC transport: writing (loopy writer)", ["loopyWriter"]),
    ("garbage collector", ["gcBgMarkWorker", "bgsweep", "bgscavenge", "gcAssistAlloc"]),
    ("runtime: scheduler, idle, netpoll", ["runtime.mcall", "runtime.mstart", "runtime.morestack"]),
]


def redis_calls(redis_dir: Path, n: int) -> collections.Counter:
    """Calls per command summed over every satellite's redis-server, and (keys
    "usec:<command>") the microseconds Redis itself counted inside each command
    (INFO commandstats: a script's includes the commands it calls)."""
    total: collections.Counter = collections.Counter()
    for i in range(n):
        total += commandstats(subprocess.run(["redis-cli", "-s", str(redis_dir / f"{i}.sock"), "INFO",
                                              "commandstats"], capture_output=True, text=True, timeout=30).stdout)
    return total


def commandstats(info: str) -> collections.Counter:
    """INFO commandstats as calls by command and "usec:<command>"."""
    total: collections.Counter = collections.Counter()
    for m in re.finditer(r"cmdstat_([\w|]+):calls=(\d+),usec=(\d+)", info):
        total[m.group(1)] += int(m.group(2))
        total["usec:" + m.group(1)] += int(m.group(3))
    return total


def split_calls(calls: collections.Counter, requests: int) -> tuple[dict[str, float], dict[str, float]]:
    """redis_calls' difference over a run as (calls per request, Redis's own
    microseconds per call) by command."""
    per = {k: v / requests for k, v in calls.most_common() if not k.startswith("usec:")}
    usec = {k: calls["usec:" + k] / calls[k] for k in per if calls[k] > 0}
    return per, usec


IDLE_S = 3  # seconds of an idle cluster whose wake-ups are subtracted

# --syscalls: the kinds counted (what a one-page fault's path makes: the
# network, the Go runtime's thread wake-ups (futex) and sysmon's sleeps).
SYSCALLS = ("read", "write", "epoll_pwait", "epoll_wait", "futex", "nanosleep", "sched_yield")


def count_syscalls(pids: list[int], delay_s: float, window_s: float, out: Path) -> None:
    """perf stat of pids' system calls by kind, over window_s after delay_s, into out (CSV)."""
    time.sleep(delay_s)
    events = ",".join(["raw_syscalls:sys_enter", *(f"syscalls:sys_enter_{k}" for k in SYSCALLS)])
    subprocess.run(["perf", "stat", "-x,", "-o", str(out), "-e", events, "-p", ",".join(map(str, pids)),
                    "--", "sleep", str(window_s)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)


def cpu_seconds(pids: list[int]) -> float:
    """utime + stime of pids so far (/proc; clock ticks of 1/100 s)."""
    return proc_stat(pids)[0]


def proc_stat(pids: list[int]) -> tuple[float, int]:
    """utime + stime (seconds) and minor page faults (first touches of memory) of pids so far (/proc)."""
    total, minflt = 0.0, 0
    for pid in pids:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:  # ended meanwhile
            continue
        fields = stat.rpartition(")")[2].split()
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        minflt += int(fields[7])
    return total, minflt


def load_generator() -> list[int]:
    """The pids of this process's satload children (the load generator of the run under way)."""
    me, found = os.getpid(), []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        comm, _, rest = text.partition(" (")[2].rpartition(")")
        if comm == "satload" and int(rest.split()[1]) == me:
            found.append(int(stat.parent.name))
    return found


def count_cpu(pids: dict[str, list[int]], delay_s: float, window_s: float, into: dict[str, float]) -> None:
    """CPU seconds by role over window_s after delay_s, into into (the load generator as "satload")."""
    time.sleep(delay_s)
    roles = {**pids, "satload": load_generator()}
    before = {role: proc_stat(ps) for role, ps in roles.items()}
    time.sleep(window_s)
    after = {role: proc_stat(ps) for role, ps in roles.items()}
    into.update({role: after[role][0] - before[role][0] for role in roles})
    into.update({"minflt:" + role: after[role][1] - before[role][1] for role in roles})


def syscalls_per_request(out: Path, requests: float) -> dict[str, float]:
    """count_syscalls' CSV as calls per request, by kind ("all": every system call)."""
    per: dict[str, float] = {}
    for line in out.read_text().splitlines():
        cells = line.split(",")
        if len(cells) > 2 and cells[0].isdigit():
            kind = cells[2].removeprefix("syscalls:sys_enter_").replace("raw_syscalls:sys_enter", "all")
            per[kind] = int(cells[0]) / requests
    return per


def switches(processes) -> collections.Counter:
    """Context switches so far (voluntary and not) of every thread of processes, by role."""
    total: collections.Counter = collections.Counter()
    for p in processes:
        for status in Path(f"/proc/{p.pid}/task").glob("*/status"):
            try:
                text = status.read_text()
            except OSError:  # a thread that ended meanwhile
                continue
            for m in re.finditer(r"^(?:non)?voluntary_ctxt_switches:\s+(\d+)", text, re.M):
                total[p.role] += int(m.group(1))
    return total


def per_request(before: collections.Counter, after: collections.Counter, seconds: float,
                idle_per_s: dict[str, float], requests: int) -> dict[str, float]:
    """Context switches per request by role, net of the idle cluster's over seconds."""
    return {role: (after[role] - before[role] - idle_per_s.get(role, 0.0) * seconds) / requests
            for role in ("satnode", "redis")}


def fetch_profiles(st, n: int, seconds: int, out: Path) -> list[Path]:
    """CPU profiles of every satnode over the next seconds (pprof on its metrics port)."""
    files = [out / f"satnode-{i}.pb.gz" for i in range(n)]

    def get(i: int) -> None:
        url = f"http://127.0.0.1:{st.port_base + 2 + n + i}/debug/pprof/profile?seconds={seconds}"
        with urllib.request.urlopen(url, timeout=seconds + 60) as r:
            files[i].write_bytes(r.read())

    threads = [threading.Thread(target=get, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return [f for f in files if f.exists() and f.stat().st_size > 0]


def perf_buckets(perf_data: Path, comm: str, buckets=BUCKETS, match=any) -> tuple[dict[str, float], int]:
    """Share of comm's samples (or switches) per bucket of buckets (and 'other'):
    the first bucket whose patterns match the stack (any of them, or all with match=all)."""
    out = subprocess.run(["perf", "script", "-i", str(perf_data), "--comm", comm],
                         capture_output=True, text=True, timeout=600).stdout
    counts: collections.Counter = collections.Counter()
    total = 0
    for block in out.split("\n\n"):
        lines = block.strip().splitlines()
        if len(lines) < 2:
            continue
        total += 1
        stack = "\n".join(lines)  # the event line (a switch's prev_state) and the frames
        counts[next((name for name, pats in buckets if match(p in stack for p in pats)), "other")] += 1
    return {k: v / total for k, v in counts.most_common()}, total


def perf_comms(perf_data: Path) -> dict[str, float]:
    """Share of all samples per command name."""
    out = subprocess.run(["perf", "report", "-i", str(perf_data), "--no-children", "--sort", "comm", "-g", "none",
                          "--stdio"], capture_output=True, text=True, timeout=600).stdout
    shares = {}
    for line in out.splitlines():
        m = re.match(r"\s*([\d.]+)%\s+(\S.*?)\s*$", line)
        if m:
            shares[m.group(2)] = float(m.group(1)) / 100
    return shares


#: pprof_cum_share: how many of the merged profile's functions, by cumulative samples.
PPROF_TOP = 300


def pprof_traces(profile: Path) -> list[tuple[float, list[str]]]:
    """The samples of a profile as (seconds, frames from the leaf to the root),
    from `go tool pprof -traces` (one block per stack, the leaf first)."""
    out = subprocess.run(["go", "tool", "pprof", "-traces", str(profile)], capture_output=True, text=True,
                         check=True, cwd=Path(__file__).resolve().parents[1] / "services").stdout
    return parse_traces(out)


def parse_traces(text: str) -> list[tuple[float, list[str]]]:
    """The samples of `go tool pprof -traces` output (blocks between dashed lines:
    the sample's time and its leaf frame, then the callers' frames)."""
    samples = []
    for block in re.split(r"^-+\+-+$", text, flags=re.M):
        lines = [ln.strip() for ln in block.strip().splitlines() if ln.strip()]
        if not lines:
            continue
        m = re.match(r"^([\d.]+)(ms|s|us|µs)\s+(\S.*)$", lines[0])
        if not m:
            continue
        scale = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6}[m.group(2)]
        samples.append((float(m.group(1)) * scale, [m.group(3), *lines[1:]]))
    return samples


def roles_us(samples: list[tuple[float, list[str]]], requests: float) -> dict[str, float]:
    """Microseconds of samples per request by ROLES (the rest: "other"), in ROLES' order."""
    out = dict.fromkeys([r for r, _ in ROLES] + ["other"], 0.0)
    for secs, frames in samples:
        role = next((r for r, pats in ROLES if any(p in f for p in pats for f in frames)), "other")
        out[role] += secs / requests * 1e6
    return out


def pprof_cum_share(profile: Path) -> dict[str, float]:
    """The share of the satnodes' pprof samples under each of the PPROF_TOP functions
    with the most cumulative samples (`go tool pprof -top -cum`), in % of all."""
    top = subprocess.run(["go", "tool", "pprof", "-top", "-cum", "-nodefraction=0", f"-nodecount={PPROF_TOP}", str(profile)],
                         capture_output=True, text=True, check=False,
                         cwd=Path(__file__).resolve().parents[1] / "services").stdout
    return cum_shares(top)


def cum_shares(top: str) -> dict[str, float]:
    """{function: cum %} from the rows of `go tool pprof -top` (flat, flat%, sum%, cum, cum%, name)."""
    share = {}
    for line in top.splitlines():
        f = line.split(maxsplit=5)
        if len(f) == 6 and f[1].endswith("%") and f[4].endswith("%"):
            share[f[5].removesuffix(" (inline)")] = float(f[4].rstrip("%"))
    return share


def merge_profiles(profiles: list[Path], merged: Path) -> None:
    """`go tool pprof -proto` of profiles into merged."""
    with merged.open("wb") as f:
        subprocess.run(["go", "tool", "pprof", "-proto", *map(str, profiles)], stdout=f,
                       stderr=subprocess.DEVNULL, check=False, cwd=Path(__file__).resolve().parents[1] / "services")


def measure_floor(args, out: Path) -> dict:
    """--floor: on a cluster of floornodes of the same size, the bare round trip
    (before and after) and one-hop reads as the satnodes' faults were made,
    profiled over the same window of the run; CPU per read by ROLES."""
    with floor_cluster(args.constellation, pprof=True) as (st, base, pid_file):
        run = lambda h, **kw: satload(base, args.constellation, pid_file, h, tls_dir=st.tls_dir,  # noqa: E731
                                      workers=args.workers, **{"duration": args.seconds, **kw})[0]
        echo = run("echo")
        (out / "floor").mkdir(exist_ok=True)
        profiles: list[Path] = []

        def profile() -> None:
            time.sleep(SETUP_S)
            profiles.extend(fetch_profiles(st, st.satellites, args.seconds, out / "floor"))

        side = threading.Thread(target=profile)
        side.start()
        reads = run("1", duration=args.seconds + SETUP_S + 2, read_stream=args.read_stream)
        side.join()
        echo_after = run("echo")
    merged = out / "pprof-floornodes.pb.gz"
    merge_profiles(profiles, merged)
    bare_rate = (echo["accesses_per_s"] + echo_after["accesses_per_s"]) / 2
    bare_cpu = (echo["cpu_us_per_access"] + echo_after["cpu_us_per_access"]) / 2
    return {"bare_round_trips_per_s": bare_rate, "bare_cpu_us": bare_cpu, "reads_per_s": reads["accesses_per_s"],
            "read_cpu_us": reads["cpu_us_per_access"], "vs_bare": reads["accesses_per_s"] / bare_rate,
            "cpu_in_bare_round_trips": reads["cpu_us_per_access"] / bare_cpu,
            "hops_ok": reads["measured_hops_sum"] == reads["accesses"] and reads["unexpected_outcomes"] == 0,
            "pprof": str(merged),
            "roles_us_per_read": roles_us(pprof_traces(merged), reads["accesses_per_s"] * args.seconds)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--constellation", default=DEFAULT_CONSTELLATION)
    ap.add_argument("--seconds", type=int, default=5, help="length of each measurement")
    ap.add_argument("--workers", type=int, default=32)
    ap.add_argument("--perf", action="store_true", help="also perf record -a -g during the fault run")
    ap.add_argument("--switches", action="store_true",
                    help="also perf record -e sched:sched_switch -a -g during the fault run (costs CPU itself)")
    ap.add_argument("--syscalls", action="store_true",
                    help="also count the satnodes' and redis-servers' system calls per request (perf stat)")
    ap.add_argument("--out", type=Path, help="keep the profiles here (default: a temporary directory)")
    ap.add_argument("--read-stream", action="store_true",
                    help="the faults as messages of read streams (PageService.ReadStream), not ReadPage calls")
    ap.add_argument("--floor", action="store_true",
                    help="also the floor (floornodes, no page logic; docs/services.md, \"The floor, measured as the "
                         "fault is\"): its cluster after the satnodes', the same runs and profiles, and both "
                         "profiles' CPU per read by goroutine role")
    ap.add_argument("--json", action="store_true", help="one JSON object on stdout")
    args = ap.parse_args()
    if args.seconds < 2 or args.seconds > 60:
        print(f"error: --seconds {args.seconds} outside [2, 60]", file=sys.stderr)
        return 2
    if args.floor and not shutil.which("go"):
        print("error: --floor: go not found on PATH (its profiles are read with go tool pprof)", file=sys.stderr)
        return 2
    if (args.perf or args.switches or args.syscalls) and not shutil.which("perf"):
        print("error: --perf/--switches/--syscalls: perf not found (apt-get install linux-perf)", file=sys.stderr)
        return 2
    out = args.out or Path(tempfile.mkdtemp(prefix="satpage-profile-"))
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="satpage-profile-cluster-") as tmp:
        st = cluster_up(args.constellation, state_dir=Path(tmp), port_base=None, pprof=True, emulate_links=False)
        base = st.port_base
        n = st.satellites
        try:
            pid_file = Path(tmp) / "pids.txt"
            pid_file.write_text("\n".join(str(p.pid) for p in st.processes))
            run = lambda h, **kw: satload(base, args.constellation, pid_file, h, tls_dir=st.tls_dir,  # noqa: E731
                                          workers=args.workers, **{"duration": args.seconds, **kw})[0]
            s0, t0 = switches(st.processes), time.monotonic()
            time.sleep(IDLE_S)
            s1, t1 = switches(st.processes), time.monotonic()
            idle = {role: (s1[role] - s0[role]) / (t1 - t0) for role in s1}
            pids = {role: [p.pid for p in st.processes if p.role == role] for role in ("satnode", "redis")}
            counters: list[threading.Thread] = []

            cpu: dict[str, dict[str, float]] = {"bare": {}, "fault": {}}

            def count(what: str, window: float) -> None:
                # In the middle of the run: after the load generator's set-up, before its end.
                for role, ps in pids.items():
                    counters.append(threading.Thread(target=count_syscalls,
                                                     args=(ps, SETUP_S, window, out / f"syscalls-{what}-{role}.csv")))
                    counters[-1].start()
                counters.append(threading.Thread(target=count_cpu, args=(pids, SETUP_S, window, cpu[what])))
                counters[-1].start()

            if args.syscalls:
                count("bare", args.seconds)
                echo = run("echo", duration=args.seconds + SETUP_S + 2)
            else:
                echo = run("echo")
            for t in counters:
                t.join()
            s2, t2 = switches(st.processes), time.monotonic()
            calls0 = redis_calls(Path(tmp) / "redis", n)
            side: list[threading.Thread] = []
            profiles: list[Path] = []
            # The profiles cover the middle of the fault run: they start after the
            # load generator's set-up (sessions opened, 64 pages written each:
            # seconds on a loaded machine) and end before its measurement does.
            window = args.seconds
            perf: list[subprocess.Popen] = []

            def profile() -> None:
                if args.perf:
                    # Started now, recording after the set-up (-D): perf takes seconds
                    # to read the maps of every process on a busy machine.
                    perf.append(subprocess.Popen(["perf", "record", "-a", "-g", "-F", "499", "-D",
                                                  str(SETUP_S * 1000), "-o", str(out / "perf.data"), "--",
                                                  "sleep", str(SETUP_S + window)],
                                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
                if args.switches:
                    perf.append(subprocess.Popen(["perf", "record", "-e", "sched:sched_switch", "-a", "-g", "-D",
                                                  str(SETUP_S * 1000), "-o", str(out / "switches.data"), "--",
                                                  "sleep", str(SETUP_S + window)],
                                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
                if args.syscalls:
                    count("fault", window)
                time.sleep(SETUP_S)
                profiles.extend(fetch_profiles(st, n, window, out))

            side.append(threading.Thread(target=profile))
            for t in side:
                t.start()
            s3, t3 = switches(st.processes), time.monotonic()
            fault = satload(base, args.constellation, pid_file, "1", tls_dir=st.tls_dir, workers=args.workers,
                            duration=args.seconds + SETUP_S + 2, batch=1, read_stream=args.read_stream)[0]
            s4, t4 = switches(st.processes), time.monotonic()
            for t in side:
                t.join()
            for p in perf:
                p.wait()
            for t in counters:
                t.join()
            calls1 = redis_calls(Path(tmp) / "redis", n)
            calls = calls1 - calls0
            # The same faults with a request_id each (exactly-once: what the
            # gateway and the replayer send), not profiled.
            s5, t5 = switches(st.processes), time.monotonic()
            with_ids = satload(base, args.constellation, pid_file, "1", tls_dir=st.tls_dir, workers=args.workers,
                               duration=args.seconds, batch=1, request_ids=True, read_stream=args.read_stream)[0]
            s6, t6 = switches(st.processes), time.monotonic()
            calls_ids = redis_calls(Path(tmp) / "redis", n) - calls1
            # The bare round trip again: the ratios use the mean of before and
            # after, so that a drift of the machine's other work hits both sides.
            echo_after = run("echo")
        finally:
            cluster_down(Path(tmp))
    faults = fault["accesses"]
    bare_rate = (echo["accesses_per_s"] + echo_after["accesses_per_s"]) / 2
    bare_cpu = (echo["cpu_us_per_access"] + echo_after["cpu_us_per_access"]) / 2
    result = {
        "bare_round_trips_per_s": bare_rate, "bare_cpu_us": bare_cpu,
        "bare_before_after_per_s": [echo["accesses_per_s"], echo_after["accesses_per_s"]],
        "one_hop_faults_per_s": fault["accesses_per_s"], "fault_cpu_us": fault["cpu_us_per_access"],
        "single_page_vs_bare": fault["accesses_per_s"] / bare_rate,
        "fault_cpu_in_bare_round_trips": fault["cpu_us_per_access"] / bare_cpu,
        "idle_switches_per_s": idle,
        "switches_per_bare_round_trip": per_request(s1, s2, t2 - t1, idle, echo["accesses"]),
        # The fault run's set-up (sessions opened, 64 writes each) is counted in it.
        "switches_per_fault": per_request(s3, s4, t4 - t3, idle, fault["accesses"]),
        "hops_ok": fault["measured_hops_sum"] == faults and fault["unexpected_outcomes"] == 0,
        "faults": faults, "setup_writes": args.workers * 64,
        "redis_calls_per_fault": split_calls(calls, faults)[0],
        # Redis's own time inside each command (commandstats usec / calls): set
        # against the redis-servers' CPU per fault, the rest is the event loop,
        # the socket reads and writes and the wake-up.
        "redis_usec_per_call": split_calls(calls, faults)[1],
        "with_ids": {
            "one_hop_faults_per_s": with_ids["accesses_per_s"], "fault_cpu_us": with_ids["cpu_us_per_access"],
            "vs_bare": with_ids["accesses_per_s"] / bare_rate,
            "fault_cpu_in_bare_round_trips": with_ids["cpu_us_per_access"] / bare_cpu,
            "switches_per_fault": per_request(s5, s6, t6 - t5, idle, with_ids["accesses"]),
            "hops_ok": (with_ids["measured_hops_sum"] == with_ids["accesses"]
                        and with_ids["unexpected_outcomes"] == 0),
            "redis_calls_per_fault": split_calls(calls_ids, with_ids["accesses"])[0],
        },
        "load_average": os.getloadavg(), "out": str(out),
    }
    if profiles and shutil.which("go"):
        merged = out / "pprof-satnodes.pb.gz"
        merge_profiles(profiles, merged)
        result["pprof"] = str(merged)
        result["pprof_cum_share"] = pprof_cum_share(merged)
        if args.floor:
            result["roles_us_per_fault"] = roles_us(pprof_traces(merged), fault["accesses_per_s"] * window)
    if args.floor:
        fl = result["floor"] = measure_floor(args, out)
        fl["fault_vs_floor"] = fault["accesses_per_s"] / fl["reads_per_s"]
    if args.syscalls:
        # Requests in a window: each run's rate times the window (set-ups are outside
        # both). Not the redis-servers' replies: a read fault's adopt is stored with
        # its session's next batch (services/internal/node/releases.go, held).
        requests = {"bare": echo["accesses_per_s"] * args.seconds, "fault": fault["accesses_per_s"] * args.seconds}
        result["syscalls_per_request"] = {
            what: {role: syscalls_per_request(out / f"syscalls-{what}-{role}.csv", requests[what])
                   for role in ("satnode", "redis")} for what in requests}
        result["cpu_us_per_request"] = {
            what: {role: v / requests[what] * 1e6 for role, v in cpu[what].items() if ":" not in role}
            for what in requests}
        # Minor page faults: memory a process touches for the first time (or again
        # after its allocator gave it back to the kernel).
        result["minor_faults_per_request"] = {
            what: {role.partition(":")[2]: v / requests[what] for role, v in cpu[what].items() if ":" in role}
            for what in requests}
    if args.perf:
        buckets, samples = perf_buckets(out / "perf.data", "satnode")
        result["perf_satnode_buckets"], result["perf_satnode_samples"] = buckets, samples
        result["perf_comms"] = perf_comms(out / "perf.data")
        result["perf_redis_buckets"], result["perf_redis_samples"] = perf_buckets(
            out / "perf.data", "redis-server", REDIS_BUCKETS)
    if args.switches:
        result["switches_satnode"], result["switches_satnode_recorded"] = perf_buckets(
            out / "switches.data", "satnode", SWITCHES, all)
    if args.json:
        print(json.dumps(result))
        return 0
    print(f"bare gRPC round trip {bare_rate:,.0f}/s (before and after: {echo['accesses_per_s']:,.0f}, "
          f"{echo_after['accesses_per_s']:,.0f}; {bare_cpu:.0f} us CPU each); "
          f"one-hop fault, one page per request {fault['accesses_per_s']:,.0f}/s "
          f"({fault['cpu_us_per_access']:.0f} us CPU each): ratio {result['single_page_vs_bare']:.3f}, "
          f"CPU {result['fault_cpu_in_bare_round_trips']:.2f} bare round trips; hops ok {result['hops_ok']}; "
          f"load average {result['load_average'][0]:.1f}")
    sw, swb = result["switches_per_fault"], result["switches_per_bare_round_trip"]
    print(f"context switches per request (every thread; the idle cluster's subtracted): one-hop fault: "
          f"satnodes {sw['satnode']:.1f}, redis-servers {sw['redis']:.1f}; bare round trip: satnodes "
          f"{swb['satnode']:.1f}")
    print(f"Redis calls per fault ({faults:,} faults; the set-up's {result['setup_writes']:,} writes included):")
    for k, v in result["redis_calls_per_fault"].items():
        us = result["redis_usec_per_call"].get(k)
        print(f"  {k:<14} {v:6.3f}" + (f"  ({us:.1f} us inside Redis per call)" if us is not None else ""))
    ids = result["with_ids"]
    print(f"with a request_id each: {ids['one_hop_faults_per_s']:,.0f}/s ({ids['fault_cpu_us']:.0f} us CPU each): "
          f"ratio {ids['vs_bare']:.3f}, CPU {ids['fault_cpu_in_bare_round_trips']:.2f} bare round trips; "
          f"switches: satnodes {ids['switches_per_fault']['satnode']:.1f}, redis-servers "
          f"{ids['switches_per_fault']['redis']:.1f}; hops ok {ids['hops_ok']}; Redis calls per fault: "
          + ", ".join(f"{k} {v:.3f}" for k, v in ids["redis_calls_per_fault"].items() if v >= 0.01))
    if args.syscalls:
        sc = result["syscalls_per_request"]
        print("system calls per request (perf stat, a window in the middle of each run):")
        print(f"  {'':<12}" + "".join(f"{k:>12}" for k in ("all", *SYSCALLS)))
        for what in ("bare", "fault"):
            for role in ("satnode", "redis"):
                print(f"  {what + ' ' + role:<12}" + "".join(f"{sc[what][role].get(k, 0):>12.2f}"
                                                            for k in ("all", *SYSCALLS)))
        cu = result["cpu_us_per_request"]
        print("CPU per request by process, us (the same windows): " + "; ".join(
            f"{what}: " + ", ".join(f"{role} {v:.0f}" for role, v in cu[what].items()) for what in ("bare", "fault")))
        mf = result["minor_faults_per_request"]
        print("minor page faults per request by process (the same windows): " + "; ".join(
            f"{what}: " + ", ".join(f"{role} {v:.2f}" for role, v in mf[what].items()) for what in ("bare", "fault")))
    if args.perf:
        comms = result["perf_comms"]
        print("perf, share of all samples: " + ", ".join(f"{c} {comms.get(c, 0):.1%}"
                                                        for c in ("satnode", "redis-server", "satload")))
        print(f"satnode samples ({result['perf_satnode_samples']:,}) by what their stack holds:")
        for k, v in result["perf_satnode_buckets"].items():
            print(f"  {v:6.1%}  {k}")
        print(f"redis-server samples ({result['perf_redis_samples']:,}; 'other': Redis's own code, Lua):")
        for k, v in result["perf_redis_buckets"].items():
            print(f"  {v:6.1%}  {k}")
    if args.switches:
        print(f"satnode context switches ({result['switches_satnode_recorded']:,} recorded) by what the thread "
              "that slept was doing:")
        for k, v in result["switches_satnode"].items():
            print(f"  {v:6.1%}  {k}")
    if args.floor:
        fl = result["floor"]
        print(f"the floor (floornodes, no page logic): bare {fl['bare_round_trips_per_s']:,.0f}/s; one-hop reads "
              f"{fl['reads_per_s']:,.0f}/s ({fl['read_cpu_us']:.0f} us CPU each): ratio {fl['vs_bare']:.3f}, CPU "
              f"{fl['cpu_in_bare_round_trips']:.2f} bare round trips; hops ok {fl['hops_ok']}; the fault's rate "
              f"over the floor's {fl['fault_vs_floor']:.3f}")
        if "roles_us_per_fault" in result:
            sat, flo = result["roles_us_per_fault"], fl["roles_us_per_read"]
            print("CPU per read in the profiles, us, by goroutine (pprof: the daemons' own threads)")
            print(f"{'':<52} {'satnodes':>8} {'floor':>8}")
            for role in sat:
                print(f"{role:<52} {sat[role]:>8.1f} {flo[role]:>8.1f}")
            print(f"{'all':<52} {sum(sat.values()):>8.1f} {sum(flo.values()):>8.1f}")
    print(f"profiles in {out}" + (f" (go tool pprof -top {result['pprof']})" if "pprof" in result else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
