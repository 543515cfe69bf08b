"""Benchmark of `satpage compare` at scale: the large scenario (sim/satpage/scenarios/large.toml).

The 3,023-satellite Starlink catalogue of data/tle when present (else the
scenario's 72 x 22 Walker shell at 550 km, 53 deg), 100,000 population-weighted
sessions over 24 hours, five strategies. Prints the time of each stage, sessions
and accesses per second, and the engine's speed against a plain-Python page table
measured on a sample of the same sessions in the same run.

    make bench-compare                       # the whole thing
    .venv/bin/python bench/bench_compare.py --sessions 5000 --hours 2   # a quick look

``--baseline REV`` also runs the same scenario (``--scenario``, default large) at git
revision REV, checked out in a worktree under the system's temporary directory (kept for
the next run), and this tree, alternately in fresh
processes (``--repeats`` times each after one warm-up that fills Numba's caches), and
prints the fastest wall and CPU time of each and their ratios: a refactoring must stay
within ``--budget-pct`` (5 %) of the baseline's CPU time, which a loaded machine
disturbs less than the wall time. Only APIs every revision has are used (``run_scenario``).

    .venv/bin/python bench/bench_compare.py --baseline 68b3f56 --scenario default
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STARLINK = ROOT / "data" / "tle" / "starlink-2022-09-14.tle"
#: --baseline writes its figures here (compare-baseline-SCENARIO.json), for docs/strategies.md
RESULTS = ROOT / "bench" / "results"
#: docs/strategies.md quotes each of those files in one line between these markers;
#: --baseline rewrites the block, test_docs_describe checks it against the files
DOC = ROOT / "docs" / "strategies.md"
DOC_BEGIN = "<!-- compare-baseline lines: written by bench/bench_compare.py --baseline -->"
DOC_END = "<!-- end of the compare-baseline lines -->"


def python_page_table(trace, sessions: int) -> tuple[int, float]:
    """Baseline: the on-demand page table of docs/design.md section 1 in plain Python over the
    first ``sessions`` sessions; returns (accesses, seconds)."""
    t0 = time.perf_counter()
    n_acc = 0
    moves = 0
    for s in range(min(sessions, trace.n_sessions)):
        owner: dict[int, int] = {}
        for v in range(trace.visit_offsets[s], trace.visit_offsets[s + 1]):
            for p in trace.access_page[trace.access_offsets[v]:trace.access_offsets[v + 1]]:
                p = int(p)
                o = owner.get(p)
                if o is None:
                    owner[p] = v
                elif o != v:
                    owner[p] = v
                    moves += 1
                n_acc += 1
    return n_acc, time.perf_counter() - t0


#: One timed run of a shipped scenario with overrides, in whatever tree is on PYTHONPATH.
#: CPU time counts the worker processes too (the large scenario runs on a Dask
#: LocalCluster of two): they are this process's children, reaped when run_scenario
#: stops the cluster, so RUSAGE_CHILDREN holds them afterwards.
DRIVER = r"""
import json, logging, resource, sys, time
logging.disable(logging.WARNING)
from satpage.scenario import load_scenario, shipped_scenario, with_overrides
from satpage.simulate import run_scenario

def cpu_s():
    ch = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + ch.ru_utime + ch.ru_stime

sc = with_overrides(load_scenario(shipped_scenario(sys.argv[1])), json.loads(sys.argv[2]))
t0, c0 = time.perf_counter(), cpu_s()
res = run_scenario(sc)
wall, cpu = time.perf_counter() - t0, cpu_s() - c0
s = res.summaries()
one = next(iter(s.values()))
print(json.dumps({"wall_s": wall, "cpu_s": cpu, "strategies": len(s),
                  "satellites": int(res.world.sats.n_sats), "sessions": int(one["sessions"]),
                  "accesses": int(one["accesses"]), "processes": int(res.processes),
                  "stage_s": {k: round(float(v), 2) for k, v in res.stage_s.items()},
                  "page_hops": {k: int(v["page_hops"]) for k, v in s.items()}}))
"""


def _timed(tree: Path, scenario: str, overrides: dict) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        str(tree / d) for d in ("orbit-model", "pager", "sim")))
    out = subprocess.run([sys.executable, "-c", DRIVER, scenario, json.dumps(overrides)],
                         cwd=tree, env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _duration_s(scenario: str) -> float:
    from satpage.scenario import load_scenario, shipped_scenario

    return float(load_scenario(shipped_scenario(scenario)).time.duration_s)


def doc_line(name: str, r: dict) -> str:
    """docs/strategies.md's line for one compare-baseline-*.json (its file name and figures)."""
    cpu, size = r["best_cpu_s"], r.get("size")
    what = ""
    if size:
        what = (f" {r['scenario']}, {size['satellites']:,} satellites, {size['sessions']:,} sessions "
                f"over {size['hours']:g} h, {size['strategies']} strategies, "
                f"{size['processes']} process{'es' if size['processes'] > 1 else ''};")
    return (f"- `{name}`:{what} {cpu['baseline']:.2f} s at {r['baseline_rev']}, "
            f"{cpu['current']:.2f} s here, ratio {r['cpu_current_over_baseline']:.3f}")


def doc_block(results: Path = RESULTS) -> str:
    """The lines between DOC_BEGIN and DOC_END: one per compare-baseline-*.json, by name."""
    lines = [doc_line(p.name, json.loads(p.read_text(encoding="utf-8")))
             for p in sorted(results.glob("compare-baseline-*.json"))]
    return "\n".join([DOC_BEGIN, *lines, DOC_END])


def write_doc(doc: Path = DOC, results: Path = RESULTS) -> None:
    """Rewrite doc's block of compare-baseline lines from the files in results."""
    text = doc.read_text(encoding="utf-8")
    start, end = text.index(DOC_BEGIN), text.index(DOC_END) + len(DOC_END)
    doc.write_text(text[:start] + doc_block(results) + text[end:], encoding="utf-8")


def baseline_tree(rev: str) -> Path:
    """A worktree of rev under the system's temporary directory, kept between runs
    (``git worktree remove`` it): both halves of ``make bench-compare-baseline`` and any
    run after them share it, so Numba compiles the baseline's kernels into its cache once."""
    want = subprocess.run(["git", "rev-parse", f"{rev}^{{commit}}"], cwd=ROOT, check=True,
                          capture_output=True, text=True).stdout.strip()
    tree = Path(tempfile.gettempdir()) / f"satpage-baseline-{want[:12]}"
    if tree.is_dir():
        have = subprocess.run(["git", "rev-parse", "HEAD"], cwd=tree, capture_output=True, text=True)
        if have.returncode == 0 and have.stdout.strip() == want:
            return tree
        subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, capture_output=True)
    subprocess.run(["git", "worktree", "prune"], cwd=ROOT, capture_output=True)
    subprocess.run(["git", "worktree", "add", "--detach", str(tree), want], cwd=ROOT,
                   check=True, capture_output=True)
    return tree


def against_baseline(rev: str, scenario: str, overrides: dict, repeats: int) -> dict:
    """Fastest wall and CPU time of ``scenario`` here and at ``rev``, alternating runs."""
    t0 = time.perf_counter()
    trees = {"baseline": baseline_tree(rev), "current": ROOT}
    walls: dict[str, list[float]] = {k: [] for k in trees}
    cpus: dict[str, list[float]] = {k: [] for k in trees}
    warmup: dict[str, dict] = {}
    last: dict[str, dict] = {}
    for name, tree in trees.items():                     # warm-up: compile, fill caches
        w = _timed(tree, scenario, overrides)
        warmup[name] = {"wall_s": w["wall_s"], "cpu_s": w["cpu_s"]}
        print(f"  {name:<9} {w['wall_s']:8.2f} s wall {w['cpu_s']:8.2f} s CPU (warm-up)",
              file=sys.stderr, flush=True)
    for _ in range(repeats):
        for name, tree in trees.items():
            last[name] = _timed(tree, scenario, overrides)
            walls[name].append(last[name]["wall_s"])
            cpus[name].append(last[name]["cpu_s"])
            print(f"  {name:<9} {last[name]['wall_s']:8.2f} s wall {last[name]['cpu_s']:8.2f} s CPU",
                  file=sys.stderr, flush=True)
    best = {k: min(v) for k, v in walls.items()}
    best_cpu = {k: min(v) for k, v in cpus.items()}
    cur = last["current"]
    return {"baseline_rev": rev, "scenario": scenario, "overrides": overrides,
            "size": {"satellites": cur["satellites"], "sessions": cur["sessions"],
                     "accesses": cur["accesses"], "strategies": cur["strategies"],
                     "processes": cur["processes"],
                     "hours": overrides.get("time.duration_s", _duration_s(scenario)) / 3600.0},
            "stage_s": {k: v["stage_s"] for k, v in last.items()},
            "repeats": repeats, "warmup": warmup, "elapsed_s": time.perf_counter() - t0,
            "wall_s": walls, "best_wall_s": best,
            "cpu_s": cpus, "best_cpu_s": best_cpu,
            "current_over_baseline": best["current"] / best["baseline"],
            "cpu_current_over_baseline": best_cpu["current"] / best_cpu["baseline"],
            "page_hops": {k: v["page_hops"] for k, v in last.items()}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=None, help="override sessions.count")
    ap.add_argument("--hours", type=float, default=None, help="override time.duration_s / 3600")
    ap.add_argument("--processes", type=int, default=None, help="override run.processes")
    ap.add_argument("--constellation", default=None,
                    help="constellation spec (default: the Starlink TLEs when present)")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    ap.add_argument("--baseline", metavar="REV", default=None,
                    help="also time the scenario at git revision REV (same run, alternating)")
    ap.add_argument("--scenario", default="large",
                    help="shipped scenario for --baseline (default: large)")
    ap.add_argument("--repeats", type=int, default=3, help="timed runs per tree (--baseline)")
    ap.add_argument("--budget-pct", type=float, default=5.0,
                    help="how much slower than the baseline a refactoring may be, %% (--baseline)")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)

    if args.baseline:
        over: dict = {}
        if args.sessions:
            over["sessions.count"] = args.sessions
        if args.hours:
            over["time.duration_s"] = args.hours * 3600.0
        if args.constellation:
            over["constellation.spec"] = args.constellation
        elif args.scenario == "large" and STARLINK.is_file():
            over["constellation.spec"] = f"tle:{STARLINK}"
        r = against_baseline(args.baseline, args.scenario, over, args.repeats)
        r["load_average"] = os.getloadavg()
        RESULTS.mkdir(parents=True, exist_ok=True)
        (RESULTS / f"compare-baseline-{args.scenario}.json").write_text(json.dumps(r, indent=2) + "\n")
        write_doc()
        if args.json:
            print(json.dumps(r, indent=2))
            return 0
        b, c = r["best_wall_s"]["baseline"], r["best_wall_s"]["current"]
        bc, cc = r["best_cpu_s"]["baseline"], r["best_cpu_s"]["current"]
        budget = 1.0 + args.budget_pct / 100.0
        print(f"satpage compare {args.scenario} {over or ''}: fastest of {args.repeats} runs "
              f"each, alternating")
        print(f"  {'':<22} {'wall s':>8} {'CPU s':>8}")
        print(f"  baseline {args.baseline:<12} {b:8.2f} {bc:8.2f}")
        print(f"  current  {'(this tree)':<12} {c:8.2f} {cc:8.2f}")
        print(f"  current / baseline     {c / b:8.3f} {cc / bc:8.3f}  (CPU "
              f"{'within' if cc / bc <= budget else 'OUTSIDE'} the {args.budget_pct:g} % budget;"
              f" wall time follows the machine's load)")
        return 0

    from satpage.scenario import load_scenario, shipped_scenario, with_overrides
    from satpage.simulate import chunk_trace, prepare, replay_strategy, run_scenario, strategy_for
    from satpage.version import code_version

    sc = load_scenario(shipped_scenario("large"))
    over: dict = {}
    if args.constellation:
        over["constellation.spec"] = args.constellation
    elif STARLINK.is_file():
        over["constellation.spec"] = f"tle:{STARLINK}"
    else:
        print(f"note: {STARLINK} absent; using the scenario's {sc.constellation.spec}",
              file=sys.stderr)
    if args.sessions:
        over["sessions.count"] = args.sessions
    if args.hours:
        over["time.duration_s"] = args.hours * 3600.0
    if args.processes:
        over["run.processes"] = args.processes
    sc = with_overrides(sc, over)

    t0 = time.perf_counter()
    world = prepare(sc)
    t_prepare = time.perf_counter() - t0
    print(f"prepared {world.sats.n_sats} satellites ({world.sats.backend}), "
          f"{int(world.topology.link_exists().sum())} ISLs, {world.sessions.size:,} sessions, "
          f"positions over {sc.time.duration_s / 3600:g} h in {t_prepare:.1f} s", file=sys.stderr)

    def tick(done: int, total: int) -> None:
        if done == total or done % max(1, total // 20) == 0:
            el = time.perf_counter() - t0
            print(f"  chunk {done}/{total}  {el:.0f} s", file=sys.stderr, flush=True)

    res = run_scenario(sc, world=world, on_chunk=tick)
    wall = time.perf_counter() - t0
    sums = res.summaries()
    any_s = next(iter(sums.values()))

    # engine vs plain Python on the same (first) chunk, on-demand, measured now
    ct = chunk_trace(world, 0)
    te = time.perf_counter()
    replay_strategy(ct.trace, strategy_for(sc, "on-demand"))
    t_engine = time.perf_counter() - te
    n_base, t_base = python_page_table(ct.trace, 50)
    engine_rate = ct.trace.n_accesses / t_engine
    base_rate = n_base / t_base

    out = {
        "version": code_version(),
        "constellation": sc.constellation.spec,
        "satellites": world.sats.n_sats,
        "sessions": any_s["sessions"],
        "visits": any_s["visits"],
        "accesses": any_s["accesses"],
        "strategies": list(sums),
        "processes": res.processes,
        "stage_s": {"prepare (constellation, positions, sessions)": round(t_prepare, 2),
                    **{f"{k} (summed over workers)": round(v, 2)
                       for k, v in res.stage_s.items() if k != "sessions"},
                    "wall": round(wall, 2)},
        "sessions_per_s": any_s["sessions"] / wall,
        "accesses_per_s_all_strategies": any_s["accesses"] * len(sums) / wall,
        "engine_vs_python_page_table": engine_rate / base_rate,
        "engine_accesses_per_s": engine_rate,
        "python_accesses_per_s": base_rate,
        "on_demand_over_proactive_page_hops":
            sums["on-demand"]["page_hops"] / max(sums["proactive"]["page_hops"], 1)
            if "on-demand" in sums and "proactive" in sums else None,
    }
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(f"satpage compare benchmark ({out['version']})")
    print(f"  {out['satellites']} satellites ({sc.constellation.spec})")
    print(f"  {out['sessions']:,} sessions, {out['visits']:,} visits, {out['accesses']:,} "
          f"accesses, {len(sums)} strategies, {res.processes} processes")
    for k, v in out["stage_s"].items():
        print(f"  {k:<48} {v:10.2f} s")
    print(f"  sessions per second (wall)                       {out['sessions_per_s']:10.1f}")
    print(f"  accesses per second, all strategies (wall)       "
          f"{out['accesses_per_s_all_strategies']:10.3g}")
    print(f"  engine vs plain-Python page table (same chunk)   "
          f"{out['engine_vs_python_page_table']:10.1f} x  "
          f"({engine_rate:.3g} vs {base_rate:.3g} accesses/s)")
    if out["on_demand_over_proactive_page_hops"] is not None:
        print(f"  on-demand / proactive page-hops                  "
              f"{out['on_demand_over_proactive_page_hops']:10.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
