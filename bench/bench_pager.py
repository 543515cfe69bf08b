"""Benchmark of the pager engine (issue 4): page accesses per second against the plain
scalar implementation (pager/tests/reference.py) measured in the same run, peak
memory for a million sessions, and the wall time of `satpage paper --runs 500000`.

    make bench-pager                       # the whole benchmark (about 3-5 minutes)
    .venv/bin/python bench/bench_pager.py --runs 100000 --cli-runs 0

"Accesses" are paper accesses: runs x (handovers + 1) x accesses, each replayed under
both on-demand and proactive (what `satpage paper` computes). The scalar baseline
does the same work (same sampler recipe, both strategies) one access at a time.
The machine is shared: the load average is printed beside the figures, and only
the ratio (engine / scalar, same run) is comparable between runs.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

import pager

ROOT = Path(__file__).resolve().parents[1]


def _reference():
    spec = importlib.util.spec_from_file_location("pager_tests_reference",
                                                  ROOT / "pager/tests/reference.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _timed(fn):
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - t0, time.process_time() - c0


def bench_engine(params: pager.PaperParams, runs: int) -> dict:
    pager.run_paper(params, 64, np.random.default_rng(0))  # compile / load the cache
    _, wall, cpu = _timed(lambda: pager.run_paper(params, runs, np.random.default_rng(1)))
    n = runs * params.n_visits * params.accesses
    return {"runs": runs, "accesses": n, "wall_s": wall, "cpu_s": cpu,
            "accesses_per_s": n / wall, "accesses_per_cpu_s": n / cpu}


def bench_scalar(params: pager.PaperParams, runs: int) -> dict:
    ref = _reference()
    key = int(pager.paper_key(np.random.default_rng(1)))
    sampler = params.sampler()

    def loop():
        for s in range(runs):
            ref.paper_session(key, s, params.n_pages, params.accesses, params.handovers,
                              sampler.threshold, sampler.alias)

    _, wall, cpu = _timed(loop)
    n = runs * params.n_visits * params.accesses
    return {"runs": runs, "accesses": n, "wall_s": wall, "cpu_s": cpu,
            "accesses_per_s": n / wall, "accesses_per_cpu_s": n / cpu}


def bench_trace(params: pager.PaperParams, runs: int) -> dict:
    trace = pager.paper_trace(params, runs, np.random.default_rng(2))
    out = {}
    for strategy in (pager.OnDemand(), pager.Proactive()):
        pager.replay(trace, strategy)  # compile / load the cache
        _, wall, _ = _timed(lambda s=strategy: pager.replay(trace, s))
        out[strategy.name] = trace.n_accesses / wall
        _, wall, _ = _timed(lambda s=strategy: pager.replay(trace, s, events=True))
        out[strategy.name + "+events"] = trace.n_accesses / wall
    return out


_CHILD = r"""
import json, sys, time
import numpy as np
import pager
mode, sessions, pages, accesses, handovers = sys.argv[1], *map(int, sys.argv[2:6])
params = pager.PaperParams(n_pages=pages, accesses=accesses, handovers=handovers)
t0 = time.perf_counter()
if mode == "paper":
    counts = pager.run_paper(params, sessions, np.random.default_rng(3))
    assert counts.runs == sessions
else:
    trace = pager.paper_trace(params, sessions, np.random.default_rng(3))
    result = pager.replay(trace, pager.OnDemand())
    assert result.counters.size == sessions
# VmHWM: this process's own peak (ru_maxrss would include the parent's, kept across exec).
hwm_kb = next(int(line.split()[1]) for line in open("/proc/self/status")
              if line.startswith("VmHWM:"))
print(json.dumps({"peak_rss_mb": hwm_kb / 1024, "wall_s": time.perf_counter() - t0}))
"""


def bench_memory(mode: str, sessions: int, pages: int, accesses: int, handovers: int) -> dict:
    out = subprocess.run([sys.executable, "-c", _CHILD, mode, str(sessions), str(pages),
                          str(accesses), str(handovers)], capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def bench_cli(runs: int) -> tuple[float, float]:
    """Wall time and CPU time (all threads) of `satpage paper --runs RUNS --json`."""
    exe = Path(sys.executable).with_name("satpage")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run([str(exe), "paper", "--runs", str(runs), "--json"], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=100_000, help="engine runs (paper workload)")
    ap.add_argument("--scalar-runs", type=int, default=30, help="scalar loop runs")
    ap.add_argument("--trace-runs", type=int, default=5_000, help="Trace replay sessions")
    ap.add_argument("--memory-sessions", type=int, default=1_000_000)
    ap.add_argument("--cli-runs", type=int, default=500_000, help="0 skips the CLI timing")
    args = ap.parse_args()

    import numba

    params = pager.PaperParams()
    load0 = os.getloadavg()
    print(f"machine: {os.cpu_count()} cores, numba threads {numba.get_num_threads()}, "
          f"load average {load0[0]:.1f} (other work shares the cores)")
    print(f"paper workload: N={params.n_pages}, A={params.accesses}, H={params.handovers}, "
          f"s={params.zipf_s:g}; both strategies per access")

    eng = bench_engine(params, args.runs)
    sca = bench_scalar(params, args.scalar_runs)
    print(f"engine  (run_paper, {eng['runs']} runs): {eng['accesses_per_s'] / 1e6:8.1f} M "
          f"accesses/s wall, {eng['accesses_per_cpu_s'] / 1e6:.1f} M per CPU-second "
          f"({eng['wall_s']:.1f} s)")
    print(f"scalar  (reference.py, {sca['runs']} runs):  {sca['accesses_per_s'] / 1e6:8.3f} M "
          f"accesses/s wall, {sca['accesses_per_cpu_s'] / 1e6:.3f} M per CPU-second "
          f"({sca['wall_s']:.1f} s)")
    print(f"ratio engine / scalar: {eng['accesses_per_s'] / sca['accesses_per_s']:.0f}x wall, "
          f"{eng['accesses_per_cpu_s'] / sca['accesses_per_cpu_s']:.0f}x per CPU-second "
          f"(target >= 50x)")

    tr = bench_trace(params, args.trace_runs)
    print("Trace replay (materialised paper trace, "
          f"{args.trace_runs} sessions): " + ", ".join(
              f"{k} {v / 1e6:.1f} M/s" for k, v in tr.items()))

    m1 = bench_memory("paper", args.memory_sessions, 1000, 10, 5)
    print(f"memory: run_paper with {args.memory_sessions} sessions of 1000 pages "
          f"(A=10, H=5): peak RSS {m1['peak_rss_mb']:.0f} MB ({m1['wall_s']:.1f} s; "
          "accesses are generated per chunk, so A does not change the peak)")
    m2 = bench_memory("trace", args.memory_sessions, 1000, 5, 1)
    print(f"memory: replay of one Trace of {args.memory_sessions} sessions of 1000 pages "
          f"(2 visits x 5 accesses): peak RSS {m2['peak_rss_mb']:.0f} MB "
          f"({m2['wall_s']:.1f} s) (target < 2048 MB)")

    if args.cli_runs:
        wall, cpu = bench_cli(args.cli_runs)
        n = args.cli_runs * params.n_visits * params.accesses
        print(f"satpage paper --runs {args.cli_runs}: {wall:.1f} s wall, {cpu:.1f} CPU-seconds "
              f"({n / wall / 1e6:.1f} M accesses/s end to end; "
              f"{cpu / 2:.0f} s if both cores were free)")
        print(f"ratio whole process / scalar: {n / wall / sca['accesses_per_s']:.0f}x wall, "
              f"{n / cpu / sca['accesses_per_cpu_s']:.0f}x per CPU-second "
              "(target >= 50x, goal 100x)")
    load1 = os.getloadavg()
    print(f"load average at the end: {load1[0]:.1f}; "
          f"peak RSS of this process {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024} MB")


if __name__ == "__main__":
    main()
