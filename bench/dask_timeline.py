"""Where a Dask run's wall time goes: the client's phases and every group of chunks.

Runs `satpage compare large` through the library on a LocalCluster and prints, in
seconds from the start of the process: when the imports, `prepare` and the cluster
were done, and each group of chunks (Dask's task stream: worker, start, end),
then how long each worker waited at the end for the other. This is how docs/scale.md
found the serial setup and the short last group that kept two workers from 1.7x.

    .venv/bin/python bench/dask_timeline.py --sessions 100000 --dask local:2
    .venv/bin/python bench/dask_timeline.py --sessions 2000 --hours 1 --json
"""

from __future__ import annotations

import time

T0 = time.perf_counter()

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
from contextlib import contextmanager  # noqa: E402

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

import satpage.parallel as parallel  # noqa: E402
from satpage.scenario import load_scenario, shipped_scenario, with_overrides  # noqa: E402
from satpage.simulate import prepare, run_scenario  # noqa: E402

STRATEGIES = ["proactive", "on-demand", "hot-k", "ground-store", "push-ahead"]


def since_start() -> float:
    return round(time.perf_counter() - T0, 2)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--constellation", default="starlink-gen1")
    ap.add_argument("--sessions", type=int, default=100_000)
    ap.add_argument("--hours", type=float, default=24.0)
    ap.add_argument("--dask", default="local:2", help="local[:N] (a LocalCluster)")
    ap.add_argument("--json", action="store_true", help="JSON on stdout")
    args = ap.parse_args()
    target = parallel.parse_dask(args.dask)
    if target.n_workers is None:
        sys.exit(f"--dask {args.dask!r}: the timeline needs a LocalCluster (local[:N])")

    phases = {"imported": since_start()}
    sc = with_overrides(load_scenario(shipped_scenario("large")), [
        ("constellation.spec", args.constellation), ("sessions.count", args.sessions),
        ("time.duration_s", args.hours * 3600.0), ("strategies.compare", STRATEGIES)])
    world = prepare(sc)
    phases["prepared"] = since_start()
    stream: list[dict] = []
    opened = parallel.dask_client

    @contextmanager
    def recorded(t):
        # run_scenario looks dask_client up when it runs: this wraps the real one
        from distributed import get_task_stream
        with opened(t) as client:
            phases["cluster up"] = since_start()
            with get_task_stream(client) as ts:
                yield client
            stream.extend(ts.data)

    parallel.dask_client = recorded
    res = run_scenario(sc, world=world, dask=args.dask)
    phases["chunks merged"] = since_start()
    # the task stream's clock is the wall clock; this process's start on that clock
    wall0 = time.time() - time.perf_counter() + T0
    groups = []
    for t in stream:
        compute = [s for s in t["startstops"] if s["action"] == "compute"]
        if not compute:
            continue
        start, stop = compute[0]["start"] - wall0, compute[-1]["stop"] - wall0
        groups.append({"worker": t["worker"], "start_s": round(start, 2),
                       "end_s": round(stop, 2), "compute_s": round(stop - start, 2)})
    groups.sort(key=lambda g: g["start_s"])
    ends = {}
    for g in groups:
        ends[g["worker"]] = max(ends.get(g["worker"], 0.0), g["end_s"])
    last = max(ends.values(), default=0.0)
    out = {"sessions": args.sessions, "hours": args.hours, "dask": args.dask,
           "chunks": world.n_chunks, "groups": len(groups), "phases_s": phases,
           "process_s": since_start(), "tasks": groups,
           "idle_at_end_s": {w: round(last - e, 2) for w, e in ends.items()},
           "stages_s": {k: round(v, 2) for k, v in res.stage_s.items()}}
    if args.json:
        print(json.dumps(out, indent=1))
        return 0
    con = Console()
    con.print(f"{args.sessions:,} sessions, {args.hours:g} h, {args.constellation}, "
              f"--dask {args.dask}: {world.n_chunks} chunks in {len(groups)} groups")
    con.print("client: " + ", ".join(f"{k} at {v:.2f} s" for k, v in phases.items()))
    table = Table("worker", "start s", "end s", "compute s")
    for g in groups:
        table.add_row(g["worker"], f"{g['start_s']:.2f}", f"{g['end_s']:.2f}",
                      f"{g['compute_s']:.2f}")
    con.print(table)
    con.print("idle at the end: " + ", ".join(f"{w} {v:.2f} s"
                                             for w, v in out["idle_at_end_s"].items()))
    con.print(f"process: {out['process_s']:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
