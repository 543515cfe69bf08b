"""Benchmark of the default `satpage compare` with all ten strategies (issue 20: under
60 s on the project machine) against the five strategies it ran before, in the same run.

Runs the default scenario in-process twice (the five paging strategies, then all ten,
each after a warm-up so Numba's compile cache is loaded), and prints wall and CPU time
of each, the ratio, and the per-strategy replay and cost CPU of one chunk. Reports and
charts are not written (their time is the same for any strategy count, a few seconds).

    make bench-strategies
"""

from __future__ import annotations

import json
import logging
import sys
import time

FIVE = ["proactive", "on-demand", "hot-k", "ground-store", "push-ahead"]


def run(names: list[str]) -> dict:
    from satpage.scenario import default_scenario_path, load_scenario, with_overrides
    from satpage.simulate import run_scenario

    sc = with_overrides(load_scenario(default_scenario_path()), {"strategies.compare": names})
    w0, c0 = time.perf_counter(), time.process_time()
    res = run_scenario(sc)
    return {"strategies": len(names), "wall_s": round(time.perf_counter() - w0, 2),
            "cpu_s": round(time.process_time() - c0, 2), "passes": res.passes}


def per_strategy() -> dict:
    from satpage.scenario import default_scenario_path, load_scenario
    from satpage.simulate import _new_acc, chunk_trace, prepare, replay_strategy

    sc = load_scenario(default_scenario_path())
    w = prepare(sc)
    ct = chunk_trace(w, 0)
    base = w.links.wait_ms(w.links.background)
    out = {}
    for name, st in w.strategies().items():
        t0 = time.process_time()
        rl = replay_strategy(ct.trace, st)
        t1 = time.process_time()
        acc = _new_acc(w)
        acc.add(rl, ct, w.router, sc.step_ns, sc.network.per_hop_processing_ms, st, w.links,
                base)
        out[name] = {"events": int(rl.events.size), "replay_cpu_s": round(t1 - t0, 3),
                     "costs_cpu_s": round(time.process_time() - t1, 3)}
    return out


def main() -> int:
    logging.basicConfig(level=logging.WARNING)
    run(["on-demand"])                      # warm-up: Numba caches, population grid
    five = run(FIVE)
    ten = run(FIVE + ["container-migration", "replicate-next", "multipath", "custody",
                      "idle-link"])
    result = {"five": five, "ten": ten, "ten_over_five_wall": round(ten["wall_s"] / five["wall_s"], 2),
              "ten_under_60_s": ten["wall_s"] < 60.0, "one_chunk": per_strategy()}
    json.dump(result, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
