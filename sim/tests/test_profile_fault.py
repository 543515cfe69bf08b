"""bench/profile_fault.py's reading of `go tool pprof -top` (the JSON's pprof_cum_share) and of
Redis's INFO commandstats (redis_calls_per_fault, redis_usec_per_call)."""

from __future__ import annotations

import mmap
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from profile_fault import (  # noqa: E402
    ROLES,
    commandstats,
    cum_shares,
    parse_traces,
    proc_stat,
    roles_us,
    split_calls,
)

TOP = """File: satnode
Type: cpu
Duration: 480.33s, Total samples = 5.38s ( 1.12%)
Showing nodes accounting for 5.38s, 100% of 5.38s total
      flat  flat%   sum%        cum   cum%
         0     0%     0%      2.76s 51.30%  google.golang.org/grpc.(*Server).processRPC
     0.03s  0.56%  0.56%      0.49s  9.11%  google.golang.org/grpc.(*ClientConn).Invoke
      10ms  0.19%  0.74%      0.11s  2.04%  slices.Clone[go.shape.[]uint8,go.shape.uint8] (inline)
"""


def test_every_row_gives_its_cumulative_share_and_the_header_none():
    assert cum_shares(TOP) == {
        "google.golang.org/grpc.(*Server).processRPC": 51.30,
        "google.golang.org/grpc.(*ClientConn).Invoke": 9.11,
        "slices.Clone[go.shape.[]uint8,go.shape.uint8]": 2.04,
    }


TRACES = """File: floornode
Type: cpu
Duration: 1200.78s, Total samples = 6.88s ( 0.57%)
-----------+-------------------------------------------------------
      10ms   runtime.memmove
             github.com/satpage/satpage/services/internal/floor.pageServer.ReadStream.func1
             github.com/satpage/satpage/services/internal/streams.Serve[go.shape.int,go.shape.int].func1
-----------+-------------------------------------------------------
     1.50s   internal/runtime/syscall/linux.Syscall6
             internal/runtime/syscall/linux.EpollWait
             runtime.netpoll
             runtime.findRunnable
             runtime.schedule
             runtime.park_m
             runtime.mcall
-----------+-------------------------------------------------------
     250us   crypto/tls.(*Conn).Write
             google.golang.org/grpc/internal/transport.(*loopyWriter).run
-----------+-------------------------------------------------------
      20ms   github.com/satpage/satpage/services/internal/streams.Serve[go.shape.int,go.shape.int].func1
-----------+-------------------------------------------------------
      30ms   main.somethingElse
"""


def test_traces_give_each_sample_its_time_and_frames_and_roles_sum_them_per_request():
    samples = parse_traces(TRACES)
    assert [round(t, 6) for t, _ in samples] == [0.01, 1.5, 0.00025, 0.02, 0.03]
    assert samples[0][1][0] == "runtime.memmove" and len(samples[1][1]) == 7
    # The read stream's handler wins over the message loop it runs in (ROLES' order).
    got = roles_us(samples, requests=1000)
    want = dict.fromkeys([r for r, _ in ROLES] + ["other"], 0.0)
    want["S: read stream handler (the read, its fetch sent)"] = 10.0
    want["runtime: scheduler, idle, netpoll"] = 1500.0
    want["gRPC transport: writing (loopy writer)"] = 0.25
    want["stream message loops (receive, dispatch)"] = 20.0
    want["other"] = 30.0
    assert list(got) == list(want) and got == pytest.approx(want)


@pytest.mark.integration
def test_redis_calls_and_the_time_inside_them_come_from_a_real_redis_servers_commandstats(tmp_path):
    if not shutil.which("redis-server"):
        pytest.skip("redis-server not installed")
    sock = tmp_path / "r.sock"
    server = subprocess.Popen(["redis-server", "--port", "0", "--unixsocket", str(sock), "--save", "",
                               "--appendonly", "no", "--dir", str(tmp_path)], stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while not sock.exists() and time.monotonic() < deadline:
            time.sleep(0.05)

        def cli(*args: str) -> str:
            return subprocess.run(["redis-cli", "-s", str(sock), *args], capture_output=True, text=True,
                                  check=True, timeout=10).stdout

        before = commandstats(cli("INFO", "commandstats"))
        for i in range(4):
            cli("HSET", "f:s", str(i), "x" * 4096)
        cli("EVAL", "redis.call('HSET', KEYS[1], '9', ARGV[1]) return 0", "1", "f:s", "y")
        after = commandstats(cli("INFO", "commandstats"))
    finally:
        server.terminate()
        server.wait(timeout=10)
    # The first INFO is counted in the second, and the script's HSET in hset.
    calls, usec = split_calls(after - before, 2)
    assert calls == {"hset": 2.5, "eval": 0.5, "info": 0.5}
    assert set(usec) == {"hset", "eval", "info"} and all(v >= 0 for v in usec.values())
    assert usec["eval"] == after["usec:eval"] - before["usec:eval"]


def test_proc_stat_counts_the_minor_page_faults_of_memory_touched_for_the_first_time():
    cpu0, faults0 = proc_stat([os.getpid()])
    # A fresh anonymous mapping, written through: every page is new to the process
    # (a zeroed bytearray may come from calloc'd pages the kernel has not faulted in yet).
    touched = mmap.mmap(-1, 32 << 20)
    touched.write(b"\1" * (32 << 20))
    cpu1, faults1 = proc_stat([os.getpid()])
    touched.close()
    assert faults1 - faults0 >= (32 << 20) // (2 << 20)  # one per page, or per 2 MiB huge page at least
    assert cpu1 >= cpu0 > 0
    assert proc_stat([2 ** 22 + 7]) == (0.0, 0)  # a process that is not there counts nothing
