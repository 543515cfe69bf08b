"""Benchmark of `satpage compare faults` (issue 15: the default run with failures on
stays under 60 s on the project machine) against the default run without failures,
in the same run.

Runs in-process, after a warm-up (Numba's compile cache, the population grid): the
default scenario, then the shipped `faults` scenario with R = 1 and with R = 2, and
prints wall and CPU time of each, the ratios to the default run, and the CPU of the
failure pass (pager.FaultModel) per strategy on one chunk. Reports and charts are not
written (the same few seconds with or without failures).

    make bench-faults
"""

from __future__ import annotations

import json
import logging
import sys
import time


def run(name: str, overrides: dict) -> dict:
    from satpage.scenario import load_scenario, shipped_scenario, with_overrides
    from satpage.simulate import run_scenario

    sc = with_overrides(load_scenario(shipped_scenario(name)), overrides)
    w0, c0 = time.perf_counter(), time.process_time()
    res = run_scenario(sc)
    sums = res.summaries()
    return {"scenario": name, **overrides, "wall_s": round(time.perf_counter() - w0, 2),
            "cpu_s": round(time.process_time() - c0, 2),
            "pages_lost": sum(s["pages_lost"] for s in sums.values()),
            "replication_page_hops": sum(s["replication_page_hops"] for s in sums.values())}


def one_chunk(replicas: int) -> dict:
    from satpage.scenario import load_scenario, shipped_scenario, with_overrides
    from satpage.simulate import (
        chunk_trace,
        fault_model,
        fault_outcome,
        prepare,
        replay_strategy,
    )

    sc = with_overrides(load_scenario(shipped_scenario("faults")),
                        {"faults.replicas": replicas})
    w = prepare(sc)
    ct = chunk_trace(w, 0)
    t0 = time.process_time()
    fm = fault_model(w, ct)
    out = {"model_cpu_s": round(time.process_time() - t0, 3)}
    for name, st in w.strategies().items():
        rl = replay_strategy(ct.trace, st)
        t1 = time.process_time()
        fault_outcome(fm, rl, st)
        out[name] = round(time.process_time() - t1, 3)
    return out


def main() -> int:
    logging.basicConfig(level=logging.WARNING)
    run("faults", {"sessions.count": 250})      # warm-up
    base = run("default", {})
    r1 = run("faults", {})
    r2 = run("faults", {"faults.replicas": 2})
    result = {"default": base, "faults_r1": r1, "faults_r2": r2,
              "r1_over_default_cpu": round(r1["cpu_s"] / base["cpu_s"], 2),
              "r2_over_default_cpu": round(r2["cpu_s"] / base["cpu_s"], 2),
              "r1_over_default_wall": round(r1["wall_s"] / base["wall_s"], 2),
              "faults_r1_under_60_s": r1["wall_s"] < 60.0,
              "one_chunk_fault_pass_cpu_s": {"R1": one_chunk(1), "R2": one_chunk(2)}}
    json.dump(result, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
