"""Benchmark of `satpage compare` at scale (issue 19): sessions per second, peak memory
and time per stage on the five-shell Starlink (starlink-gen1, 4,408 satellites) and on
the Starlink TLE catalogue (data/tle/starlink-2022-09-14.tle, 3,023 satellites); how
time and memory grow with the session count; Dask with one and two workers against
the in-process run; and the shipped `starlink-15s` scenario (15 s scheduled
reallocation, 10,000 sessions over 24 h) beside the elevation-driven baseline on the
same clients, whose per-strategy costs go to bench/results/ (docs/reallocation.md).

    make bench-scale                              # full sizes (hours on 2 cores)
    .venv/bin/python bench/bench_scale.py --quick # minutes: small sizes, same report
    .venv/bin/python bench/bench_scale.py --only-15s  # just starlink-15s and its baseline

Every figure is one whole `satpage compare large ... --json` process (imports,
constellation, routing, sessions, replay, costs), 1 access/s per session, five
strategies (proactive, on-demand, hot-k, ground-store, push-ahead). Peak memory is
the JSON's `memory.peak_rss_mb` (the largest peak resident set of the process and of
any Dask worker). The machine is shared: the load average is printed with the
figures, and ratios (growth, speed-up, overhead) are taken within one run of this
script. Projections to 1,000,000 sessions are linear fits through the measured
sizes, printed as projections.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TLE = ROOT / "data" / "tle" / "starlink-2022-09-14.tle"
STRATEGIES = "proactive,on-demand,hot-k,ground-store,push-ahead"

FULL = {"hours": 24.0, "sizes": {"starlink-gen1": [100_000, 300_000, 1_000_000],
                                 "tle": [100_000, 300_000]},
        "dask_sessions": 100_000, "dask_repeats": 3, "reallocation_sessions": 10_000}
QUICK = {"hours": 1.0, "sizes": {"starlink-gen1": [500, 1_500], "tle": [500, 1_500]},
         "dask_sessions": 1_500, "dask_repeats": 1, "reallocation_sessions": 300}
RESULTS = ROOT / "bench" / "results"
#: the headline costs per strategy compared with and without the 15 s schedule
COSTS = ("page_moves", "page_hops", "unreachable_transfers", "byte_hops", "handover_transfer_bytes",
         "access_latency_ms_mean", "stall_p99_ms", "fault_latency_p99_ms",
         "pages_held_max_per_satellite")
TARGET_1M_S = 30 * 60  # issue 19: 1,000,000 sessions in under 30 minutes
TARGET_PEAK_MB = 8 * 1024  # and under 8 GB


def spec_of(name: str) -> str:
    return f"tle:{TLE}" if name == "tle" else name


def run_compare(constellation: str, sessions: int, hours: float, dask: str | None,
                threads: int | None = None) -> dict:
    """One whole `satpage compare` process; returns its figures. ``threads``: the engine's
    numba threads (NUMBA_NUM_THREADS) of an in-process run; default: one per core."""
    exe = Path(sys.executable).with_name("satpage")
    cmd = [str(exe), "compare", "large", "--set", f"constellation.spec={spec_of(constellation)}",
           "--sessions", str(sessions), "--set", f"time.duration_s={hours * 3600:g}",
           "--strategies", STRATEGIES, "--json"]
    cmd += ["--dask", dask] if dask else ["--set", "run.processes=1"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    env = dict(os.environ, **({"NUMBA_NUM_THREADS": str(threads)} if threads else {}))
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    # CPU-seconds of the process and its workers: on a shared machine the comparable figure
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({out.returncode}):\n{out.stderr[-3000:]}")
    result = json.loads(out.stdout)
    return {"constellation": constellation, "sessions": sessions, "hours": hours,
            "dask": dask, "engine_threads": threads, "wall_s": round(wall, 2),
            "sessions_per_s": round(sessions / wall, 1), "cpu_s": round(cpu, 1),
            "sessions_per_cpu_s": round(sessions / max(cpu, 1e-9), 1),
            "peak_rss_mb": result["memory"]["peak_rss_mb"],
            "memory": result["memory"], "stages_s": result["timing_s"],
            "accesses": result["workload"]["accesses"],
            "satellites": result["workload"]["satellites"],
            "load_average": round(os.getloadavg()[0], 1)}


def run_reallocation(sessions: int, hours: float, baseline: bool,
                     spec: str | None = None) -> tuple[dict, dict]:
    """One whole `satpage compare starlink-15s` process (``baseline``: the same scenario,
    clients and step without the schedule: elevation-driven, sticky; ``spec``: another
    constellation); its figures and JSON."""
    exe = Path(sys.executable).with_name("satpage")
    cmd = [str(exe), "compare", "starlink-15s", "--sessions", str(sessions),
           "--set", f"time.duration_s={hours * 3600:g}", "--json"]
    if spec:
        cmd += ["--set", f"constellation.spec={spec}"]
    if baseline:
        cmd += ["--set", "handover.interval_s=0", "--set", "handover.phase_s=0"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({out.returncode}):\n{out.stderr[-3000:]}")
    result = json.loads(out.stdout)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"scenario": "starlink-15s" + (" baseline" if baseline else ""), "sessions": sessions,
            "hours": hours, "wall_s": round(wall, 2), "cpu_s": round(cpu, 1),
            "peak_rss_mb": result["memory"]["peak_rss_mb"], "stages_s": result["timing_s"],
            "load_average": round(os.getloadavg()[0], 1)}, result


def reallocation(sessions: int, hours: float, spec: str | None = None) -> dict:
    """starlink-15s and its elevation-driven baseline (on ``spec`` instead of the scenario's
    constellation when given); writes
    bench/results/reallocation-15s-<sessions>-<hours>h[-<spec>].json and returns it."""
    runs, results = {}, {}
    for key, baseline in (("15s", False), ("elevation", True)):
        log(f"compare: starlink-15s{' baseline' if baseline else ''}, {sessions:,} sessions, "
            f"{hours:g} h{' on ' + spec if spec else ''} ...")
        runs[key], results[key] = run_reallocation(sessions, hours, baseline, spec)
        r = runs[key]
        log(f"  {r['wall_s']:.1f} s, {r['cpu_s']:.1f} CPU-s, peak {r['peak_rss_mb']:.0f} MB "
            f"(load {r['load_average']})")
    a, b = results["15s"], results["elevation"]
    report = {
        "format": "satpage-bench-reallocation/1", "sessions": sessions, "hours": hours,
        "constellation": a["config"]["constellation"]["spec"], "version": a["version"],
        "runs": runs,
        "workload": {k: {f: r["workload"][f] for f in ("visits", "handovers_per_session",
                                                        "accesses", "uncovered_step_fraction")}
                     for k, r in (("15s", a), ("elevation", b))},
        "strategies": {name: {c: {"15s": a["strategies"][name].get(c),
                                  "elevation": b["strategies"][name].get(c),
                                  "ratio": (round(a["strategies"][name][c] / b["strategies"][name][c], 3)
                                            if b["strategies"][name].get(c) else None)}
                              for c in COSTS}
                       for name in a["strategies"]}}
    RESULTS.mkdir(parents=True, exist_ok=True)
    tag = "-" + spec.replace(":", "-").replace("/", "-") if spec else ""
    path = RESULTS / f"reallocation-15s-{sessions}-{hours:g}h{tag}.json"
    path.write_text(json.dumps(report, indent=1) + "\n")
    log(f"wrote {path}")
    return report


def reallocation_table(report: dict) -> str:
    """Markdown table of the report: each strategy's costs under the schedule as a ratio
    to the elevation-driven baseline (docs/reallocation.md quotes it)."""
    w = report["workload"]
    # the first files, written before the field, ran the scenario's own constellation
    spec = report.get("constellation", "starlink-gen1")
    lines = [f"{spec}, {report['sessions']:,} sessions over {report['hours']:g} h: "
             f"handovers per session "
             f"{w['15s']['handovers_per_session']:.2f} (15 s) vs "
             f"{w['elevation']['handovers_per_session']:.2f} (elevation-driven)", "",
             "| strategy | page moves | page-hops | moves with no ISL path | mean access latency "
             "|", "|---|---|---|---|---|"]
    for name, c in report["strategies"].items():
        def cell(key, fmt="{:,.0f}", c=c):
            v = c[key]
            if v["elevation"] is None or v["15s"] is None:
                return "-"
            ratio = f" ({v['ratio']:.2f}x)" if v["ratio"] is not None else ""
            return f"{fmt.format(v['elevation'])} -> {fmt.format(v['15s'])}{ratio}"
        lines.append(f"| {name} | {cell('page_moves')} | {cell('page_hops')} | "
                     f"{cell('unreachable_transfers')} | "
                     f"{cell('access_latency_ms_mean', '{:.3g} ms')} |")
    return "\n".join(lines)


def linear(xs: list[float], ys: list[float], at: float) -> float:
    """The least-squares line through (xs, ys), evaluated at ``at``."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx if sxx else 0.0
    return my + slope * (at - mx)


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (minutes)")
    ap.add_argument("--hours", type=float, default=None, help="override the simulated span")
    ap.add_argument("--sizes", default=None,
                    help="session counts for every constellation, e.g. 2000,6000")
    ap.add_argument("--constellations", default=None,
                    help="comma-separated subset of starlink-gen1,tle")
    ap.add_argument("--dask-sessions", type=int, default=None,
                    help="session count of the Dask comparison")
    ap.add_argument("--dask-repeats", type=int, default=None,
                    help="rounds of the Dask comparison (full plan: 3); ratios are medians "
                         "of the rounds")
    ap.add_argument("--skip-dask", action="store_true", help="no Dask comparison")
    ap.add_argument("--skip-sizes", action="store_true",
                    help="only the Dask comparison")
    ap.add_argument("--only-15s", action="store_true",
                    help="only starlink-15s (15 s reallocation) and its elevation-driven baseline")
    ap.add_argument("--reallocation-sessions", type=int, default=None,
                    help="session count of the starlink-15s runs (full plan: 10,000)")
    ap.add_argument("--reallocation-spec", default=None,
                    help="run starlink-15s and its baseline on this constellation instead")
    ap.add_argument("--skip-15s", action="store_true", help="no starlink-15s runs")
    ap.add_argument("--table", type=Path, default=None, metavar="RESULTS_JSON",
                    help="print the Markdown table of a bench/results/reallocation-15s-*.json "
                         "and exit (docs/reallocation.md quotes them)")
    ap.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    args = ap.parse_args()
    if args.table:
        print(reallocation_table(json.loads(args.table.read_text())))
        return 0
    plan = dict(QUICK if args.quick else FULL)
    hours = args.hours or plan["hours"]
    names = args.constellations.split(",") if args.constellations else list(plan["sizes"])
    given = [int(x) for x in args.sizes.split(",")] if args.sizes else None
    plan["sizes"] = {c: given or plan["sizes"][c] for c in names}
    if args.dask_sessions:
        plan["dask_sessions"] = args.dask_sessions
    if args.dask_repeats:
        plan["dask_repeats"] = max(1, args.dask_repeats)
    if args.skip_sizes or args.only_15s:
        plan["sizes"] = {}
    if args.only_15s:
        args.skip_dask = True
    if args.reallocation_sessions:
        plan["reallocation_sessions"] = args.reallocation_sessions
    if not TLE.exists():
        raise SystemExit(f"the TLE catalogue {TLE} is missing (data/README.md)")
    log(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; "
        f"{'quick' if args.quick else 'full'} sizes over {hours:g} h")

    runs = []
    for constellation, counts in plan["sizes"].items():
        for n in counts:
            log(f"compare: {constellation}, {n:,} sessions ...")
            r = run_compare(constellation, n, hours, None)
            runs.append(r)
            log(f"  {r['wall_s']:.1f} s, {r['cpu_s']:.1f} CPU-s, {r['sessions_per_s']:.1f} "
                f"sessions/s, peak {r['peak_rss_mb']:.0f} MB (load {r['load_average']})")

    growth = {}
    for constellation in plan["sizes"]:
        rs = [r for r in runs if r["constellation"] == constellation]
        lo, hi = rs[0], rs[-1]
        growth[constellation] = {
            "sessions": [r["sessions"] for r in rs],
            # 1.0 = time exactly proportional to the session count
            "time_ratio_over_session_ratio": round(
                (hi["wall_s"] / lo["wall_s"]) / (hi["sessions"] / lo["sessions"]), 3),
            "cpu_ratio_over_session_ratio": round(
                (hi["cpu_s"] / lo["cpu_s"]) / (hi["sessions"] / lo["sessions"]), 3),
            "projected_1m_cpu_s": round(linear([r["sessions"] for r in rs],
                                               [r["cpu_s"] for r in rs], 1_000_000), 0),
            "peak_mb_per_1000_sessions": round(
                (hi["peak_rss_mb"] - lo["peak_rss_mb"])
                / max(hi["sessions"] - lo["sessions"], 1) * 1000, 2),
            # time: the line through the measured sizes; memory: the largest measured peak
            # plus the measured growth per session (the peak is mostly fixed: a one-time
            # routing table, docs/scale.md), never below the largest peak measured
            "projected_1m_wall_s": round(linear([r["sessions"] for r in rs],
                                                [r["wall_s"] for r in rs], 1_000_000), 0),
            "projected_1m_peak_mb": round(max(
                r["peak_rss_mb"] for r in rs) + max(0.0, (hi["peak_rss_mb"] - lo["peak_rss_mb"])
                / max(hi["sessions"] - lo["sessions"], 1)) * (1_000_000 - hi["sessions"]), 0),
        }

    dask = {}
    if not args.skip_dask:
        n = plan["dask_sessions"]
        # a Dask worker runs the engine on one thread (satpage.parallel), while an
        # in-process run's parallel numba kernels use every core: Dask's own overhead is
        # local:1 against the in-process run on one engine thread (the same compute);
        # against the default in-process run it is reported too. The rounds run the four
        # one after another, so each round's ratios compare runs minutes apart: the machine's
        # drift (5 % between runs of one command, docs/scale.md) cancels in the median
        configs = (("in-process", None, None), ("in-process-1-thread", None, 1),
                   ("local:1", "local:1", None), ("local:2", "local:2", None))
        rounds: list[dict] = []
        for k in range(plan["dask_repeats"]):
            got = {}
            for key, target, threads in configs:
                log(f"compare: starlink-gen1, {n:,} sessions, {key} (round {k + 1} of "
                    f"{plan['dask_repeats']}) ...")
                r = got[key] = run_compare("starlink-gen1", n, hours, target, threads)
                log(f"  {r['wall_s']:.1f} s, {r['cpu_s']:.1f} CPU-s, peak "
                    f"{r['peak_rss_mb']:.0f} MB (load {r['load_average']})")
            rounds.append(got)
        for key, _, _ in configs:   # each configuration's median run by wall time
            runs_k = sorted((g[key] for g in rounds), key=lambda r: r["wall_s"])
            dask[key] = dict(runs_k[len(runs_k) // 2],
                             rounds_wall_s=[g[key]["wall_s"] for g in rounds])

        def median_ratio(name: str, ratio) -> None:
            each = [round(ratio(g), 3) for g in rounds]
            dask[name] = round(statistics.median(each), 3)
            dask[f"{name}_rounds"] = each

        median_ratio("speedup_1_to_2_workers",
                     lambda g: g["local:1"]["wall_s"] / g["local:2"]["wall_s"])
        for base in ("in-process", "in-process-1-thread"):
            suffix = base.removeprefix("in-process").replace("-", "_")
            median_ratio(f"overhead_local1_vs_in_process{suffix}",
                         lambda g, b=base: g["local:1"]["wall_s"] / g[b]["wall_s"] - 1)
            median_ratio(f"cpu_overhead_local1_vs_in_process{suffix}",
                         lambda g, b=base: g["local:1"]["cpu_s"] / g[b]["cpu_s"] - 1)

    realloc = {} if args.skip_15s else reallocation(plan["reallocation_sessions"], hours,
                                                    args.reallocation_spec)

    report = {"plan": "quick" if args.quick else "full", "hours": hours, "runs": runs,
              "growth": growth, "dask": dask, "reallocation": realloc,
              "targets": {"1m_wall_s": TARGET_1M_S, "1m_peak_mb": TARGET_PEAK_MB,
                          "growth_within": 0.15, "speedup_1_to_2": 1.7, "dask_overhead": 0.10}}
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    if runs or dask:
        print(f"{'constellation':<24} {'sessions':>10} {'wall s':>9} {'CPU s':>8} {'sess/s':>8} "
              f"{'peak MB':>8} {'setup':>7} {'schedule':>9} {'replay':>8} {'costs':>8}  load")
    for r in runs + [v for v in dask.values() if isinstance(v, dict)]:
        st = r["stages_s"]
        name = r["constellation"] + (f" {r['dask']}" if r["dask"] else "") + (
            f" {r['engine_threads']}t" if r.get("engine_threads") else "")
        print(f"{name:<24} {r['sessions']:>10,} {r['wall_s']:>9.1f} {r['cpu_s']:>8.1f} "
              f"{r['sessions_per_s']:>8.1f} "
              f"{r['peak_rss_mb']:>8.0f} {st['sessions']:>7.1f} {st['schedule']:>9.1f} "
              f"{st['replay']:>8.1f} {st['costs']:>8.1f}  {r['load_average']}")
    if args.quick:
        print("(quick sizes: fixed costs (imports, constellation, routing table) dominate, so "
              "growth and projections say little; use the full sizes or --sizes)")
    for constellation, g in growth.items():
        print(f"{constellation}: time ratio / session ratio {g['time_ratio_over_session_ratio']} "
              f"wall, {g['cpu_ratio_over_session_ratio']} CPU "
              f"(1.0 = linear; target within 15 %), memory "
              f"{g['peak_mb_per_1000_sessions']} MB per 1,000 sessions; projected to 1,000,000 "
              f"sessions: {g['projected_1m_wall_s']:.0f} s (target {TARGET_1M_S} s), "
              f"{g['projected_1m_peak_mb']:.0f} MB (target {TARGET_PEAK_MB} MB)")
    if dask:
        rounds = len(dask["speedup_1_to_2_workers_rounds"])
        print(f"Dask, median of {rounds} round(s) (each: "
              f"{', '.join(str(x) for x in dask['speedup_1_to_2_workers_rounds'])}x): "
              f"speed-up from 1 to 2 workers {dask['speedup_1_to_2_workers']}x "
              f"(target 1.7x); local:1 against in-process on one engine thread "
              f"{dask['overhead_local1_vs_in_process_1_thread'] * 100:+.1f} % wall, "
              f"{dask['cpu_overhead_local1_vs_in_process_1_thread'] * 100:+.1f} % CPU "
              f"(target < 10 %); against the default in-process run (numba on every core) "
              f"{dask['overhead_local1_vs_in_process'] * 100:+.1f} % wall, "
              f"{dask['cpu_overhead_local1_vs_in_process'] * 100:+.1f} % CPU")
    if realloc:
        for key, r in realloc["runs"].items():
            print(f"starlink-15s ({key}): {r['sessions']:,} sessions over {r['hours']:g} h in "
                  f"{r['wall_s']:.1f} s wall, {r['cpu_s']:.1f} CPU-s, peak {r['peak_rss_mb']:.0f} MB "
                  f"(schedule {r['stages_s']['schedule']:.1f} s, replay "
                  f"{r['stages_s']['replay']:.1f} s; load {r['load_average']})")
        print(reallocation_table(realloc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
