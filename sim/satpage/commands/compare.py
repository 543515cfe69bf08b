"""`satpage compare [SCENARIO.toml]`: the handover simulation comparing transfer strategies.

With no argument it runs the shipped default scenario in-process (no server, no
../shared). SCENARIO may be a path or the name of a shipped scenario
(``default``, ``paper-mimic``, ``large``, ``faults``, ``starlink-15s``). ``--set section.key=value`` (repeatable)
and the shortcut options override single keys.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Annotated

import numpy as np
import typer
from rich.table import Table

from satpage.console import fail, print_json, progress, setup_logging, stderr, stdout

__all__ = ["compare", "resolve_scenario", "help_text", "STRATEGIES_HELP"]

log = logging.getLogger(__name__)


#: --strategies of compare and sweep
STRATEGIES_HELP = ("Comma-separated strategies to compare: built-in names (satpage compare "
                   "--help lists them), "
                   "module:Class (a class importable from the working directory or "
                   "PYTHONPATH), or the name of an installed plugin (docs/strategies.md).")


def help_text() -> str:
    """compare's help: its docstring and one line on each built-in strategy."""
    import inspect

    import pager

    items = "\n".join(f"- {n}: {pager.strategy_summary(n)}" for n in pager.STRATEGY_NAMES)
    return (f"{inspect.getdoc(compare)}\n\nThe built-in strategies, all compared by "
            f"default:\n\n{items}\n\nA plugin strategy is one class (docs/strategies.md): "
            "--strategies on-demand,mymod:Lazy, its settings in the scenario table "
            "strategies.params.Lazy.")


def resolve_scenario(scenario: str | None, sets: list[str], seed: int | None = None,
                     sessions: int | None = None, strategies: str | None = None,
                     processes: int | None = None):
    """Load a scenario (path or shipped name) and apply the overrides."""
    from satpage.scenario import (
        load_scenario,
        parse_override,
        shipped_scenario,
        with_overrides,
    )

    if scenario is None:
        path = shipped_scenario("default")
    elif Path(scenario).exists():
        path = Path(scenario)
    elif "/" not in scenario and not scenario.endswith(".toml"):
        path = shipped_scenario(scenario)
    else:
        raise ValueError(f"scenario file {scenario!r} does not exist")
    sc = load_scenario(path)
    overrides = [parse_override(s) for s in sets]
    if seed is not None:
        overrides.append(("seed", seed))
    if sessions is not None:
        overrides.append(("sessions.count", sessions))
    if strategies is not None:
        overrides.append(("strategies.compare", [s.strip() for s in strategies.split(",")
                                                 if s.strip()]))
    if processes is not None:
        overrides.append(("run.processes", processes))
    return with_overrides(sc, overrides) if overrides else sc


def _table(result: dict, width: int) -> Table:
    """Strategies as rows, the headline costs as columns: as many as ``width`` holds (five
    at 80), most telling first (satpage.report.headline_columns), headers wrapped at
    spaces and never a number cut; every cost is in the report and the JSON."""
    from satpage.report import headline_columns

    st = result["strategies"]
    names = list(st)
    # widths fixed here, rich shrinks every column alike when a table is too wide: a
    # column's narrowest is its longest header word or value (headers wrap at spaces),
    # plus two of padding and a rule
    first = max(len("strategy"), *(len(n) for n in names))
    used = 1 + 3 + first
    cols = []
    for key, head, fmt in headline_columns(result):
        cells = [fmt.format(st[n][key]) for n in names]
        narrow = max(max(len(w) for w in head.split()), *(len(c) for c in cells))
        if used + 3 + narrow > width and cols:
            break
        used += 3 + narrow
        cols.append([head, cells, narrow])
    for col in cols:  # room left: headers on one line, most telling first
        wide = max(len(col[0]), *(len(c) for c in col[1]))
        if used + wide - col[2] <= width:
            used += wide - col[2]
            col[2] = wide
    wl = result["workload"]
    t = Table(title=f"satpage compare: {result['scenario']}, seed {result['seed']}, "
                    f"{wl['sessions']:,} sessions, {wl['satellites']} satellites",
              caption=f"version {result['version']}; latency = round trip over the ISL "
                      "path; every cost: --json, or --out DIR (report.md)")
    t.add_column("strategy", style="bold", no_wrap=True, width=first)
    for head, _, w in cols:
        t.add_column(head, justify="right", width=w)
    for i, n in enumerate(names):
        t.add_row(n, *[cells[i] for _, cells, _ in cols])
    return t


#: the counts --backend cluster sets beside the engine's (and REPLICATION_KEYS, the
#: replication traffic, where the relays' counters are read: docs/faults.md)
CLUSTER_COUNT_KEYS = ("page_moves", "page_hops", "pages_left_behind")


def _cluster(sc, target: str | None, as_json: bool, strategies_given: bool,
             ground_links: bool = False) -> None:
    """Replay the scenario's traces through a deployed gateway (``ClusterBackend``) and
    set the cluster's counts beside the engine's for the same traces (``EngineBackend``)."""
    if not sc.constellation.spec.startswith("walker"):
        fail(f"--backend cluster needs a Walker constellation; the scenario's is "
             f"{sc.constellation.spec!r} (use --backend engine)")
    import tempfile

    import pager
    from satpage.backend import REPLICATION_KEYS, ClusterBackend, EngineBackend
    from satpage.cluster import driver, replayer
    from satpage.comparator import compare_figures
    from satpage.simulate import chunk_trace, prepare, strategy_for
    from satpage.version import code_version

    names = list(sc.strategies.compare)
    if not strategies_given:
        skipped = [n for n in names if n not in driver.STRATEGIES]
        names = [n for n in names if n in driver.STRATEGIES]
        if skipped:
            log.warning("the cluster implements %s; skipping %s", ", ".join(names),
                        ", ".join(skipped))
    # The gateway pushes the pages used during the visit that ended, at the handover:
    # pager.PushAhead with recent_visits 1, not staged (its lead changes no count).
    pa = strategy_for(sc, "push-ahead") if "push-ahead" in names else None
    if pa is not None and (getattr(pa, "recent_visits", 1) != 1 or getattr(pa, "staged", False)):
        why = (f"the gateway pushes the pages of the last visit at the handover; the scenario's "
               f"push-ahead has recent_visits {pa.recent_visits}, staged {pa.staged}")
        if strategies_given:
            fail(f"--backend cluster cannot run push-ahead: {why}")
        log.warning("skipping push-ahead on the cluster: %s", why)
        names.remove("push-ahead")
    if not names:
        fail("none of the scenario's strategies runs on the cluster")
    world = prepare(sc)
    replicas = sc.faults.replicas
    # the engine side: failure-free at the scenario's R (its replication traffic priced
    # with the writes the cluster replay sends)
    engine = EngineBackend(world, replicas=replicas)
    totals: dict[str, dict[str, float]] = {}
    faults_ns: dict[str, list[int]] = {n: [] for n in names}  # each fault's wait on the wire
    repl = {n: dict.fromkeys(REPLICATION_KEYS, 0) for n in names}
    with tempfile.TemporaryDirectory(prefix="satpage-isl-") as tmp:
        schedule = None
        if not world.router.static:
            # A latitude cut-off: the satnodes route on the engine's own snapshots.
            schedule = Path(tmp) / "isl-schedule.json"
            schedule.write_text(json.dumps(world.routing.isl_schedule(sc.constellation.spec,
                                                                      sc.duration_ns)))
        # one gateway for the whole run (a local cluster is started once when no target)
        # the links of a cluster started here are timed by the scenario's positions
        links = {"link_epoch": sc.time.epoch, "link_hours": sc.time.duration_s / 3600 + 0.1,
                 "isl_capacity_gbps": sc.network.isl_capacity_gbps,
                 "per_hop_processing_ms": sc.network.per_hop_processing_ms}
        with (driver.resolve_target(target, sc.constellation.spec, isl_schedule=schedule,
                                    replicas=replicas, links=links) as target,
              progress() as bar):
            local = driver.local_state(target)  # None: a given target, its relays' counters unread
            cluster = ClusterBackend(replayer.Target(target, None), local=local)
            task = bar.add_task(f"replaying through the cluster at {target}",
                                total=world.n_chunks * len(names))
            for i in range(world.n_chunks):
                ct = chunk_trace(world, i)
                # each session's client place, for the gateway's ground-link waits
                rows = world.chunk_rows(i)[1]
                places = np.column_stack([rows["lat_deg"], rows["lon_deg"]]) if ground_links else None
                # with R > 1 the writes of faults.write_share go out as WritePage, so that
                # the relays count their copies too (R = 1: reads, the same movements)
                writes = (pager.write_mask(ct.trace, sc.faults.write_share)
                          if replicas > 1 and sc.faults.write_share > 0 else None)
                for name in names:
                    got = cluster.replay(ct, name, writes=writes, places=places)
                    faults_ns[name] += got.fault_ns
                    acc = totals.setdefault(name, {})
                    for k, v in {**_moves_last(got.counts), **got.replication}.items():
                        if isinstance(v, int | float):
                            acc[k] = acc.get(k, 0) + v
                    priced = engine.replay(ct, name, writes=writes).replication
                    for k in REPLICATION_KEYS:
                        repl[name][k] += priced[k]
                    bar.advance(task)
    eng = {}
    for n in names:
        a = engine.totals[n]  # the run's accumulator: its latency percentiles are the run's
        eng[n] = {"page_moves": a.counts["page_moves"], "page_hops": a.counts["page_hops"],
                  "pages_left_behind": a.counts["pages_left_behind"], **repl[n],
                  "faults": a.counts["faults"], **engine_latency(a)}
        totals[n] |= wire_latency(faults_ns[n])
    # the counts the cluster must give exactly; the replication traffic too where its
    # relays were read (a local cluster) and it runs the scenario's R
    priced = local is not None and local.replicas == replicas
    count_keys = [*CLUSTER_COUNT_KEYS, *(REPLICATION_KEYS if priced else ())]
    out = {"scenario": sc.name, "scenario_file": sc.source, "seed": sc.seed,
           "version": code_version(), "backend": "cluster", "target": target, "ground_links": ground_links,
           "replicas": replicas if local is None else local.replicas,
           "strategies": totals, "engine": eng,
           "counts_equal": {n: compare_figures(eng[n], totals[n], count_keys).equal for n in names},
           "latency_agreement": {n: latency_agreement(eng[n], totals[n]) for n in names}}
    if as_json:
        print_json(out)
        return
    t = Table(title=f"satpage compare --backend cluster: {sc.name}, seed {sc.seed}")
    t.add_column("strategy")
    cols = ["cluster moves", "engine moves", "cluster page-hops", "engine page-hops"]
    if out["replicas"] > 1:
        cols += ["cluster replication page-hops", "engine replication page-hops"]
    cols.append("counts equal")
    for col in cols:
        t.add_column(col, justify="right")
    for n in names:
        c = totals[n]
        row = [n, f"{c.get('page_moves', 0):,}", f"{eng[n]['page_moves']:,}",
               f"{c.get('page_hops', 0):,}", f"{eng[n]['page_hops']:,}"]
        if out["replicas"] > 1:
            got = c.get("replication_page_hops")
            row += ["-" if got is None else f"{got:,}", f"{eng[n]['replication_page_hops']:,}"]
        t.add_row(*row, "yes" if out["counts_equal"][n] else "NO")
    stdout.print(t)
    lt = Table(title="fault latency, ms: engine vs the cluster's wire (docs/emulation.md)")
    for col in ("strategy", "figure", "engine", "cluster", "tolerance", "ok"):
        lt.add_column(col, justify="left" if col in ("strategy", "figure") else "right")
    for n in names:
        for row in out["latency_agreement"][n]["rows"]:
            lt.add_row(n, row["key"], f"{row['engine']:.2f}", f"{row['cluster']:.2f}",
                       f"{row['tolerance_rel']:.0%}", "yes" if row["ok"] else "NO")
    stdout.print(lt)


def _moves_last(counts: dict) -> dict:
    """The cluster's counts with page_moves and page_hops last, the order of the JSON's
    ``strategies`` since it was first written."""
    rest = {k: v for k, v in counts.items() if k not in ("page_moves", "page_hops")}
    return {**rest, "page_moves": counts["page_moves"], "page_hops": counts["page_hops"]}


def wire_latency(fault_ns: list[int]) -> dict[str, float]:
    """The engine's fault-latency keys from the waits measured on the wire (ns)."""
    if not fault_ns:
        return {"faults_measured": 0, "fault_latency_ms": 0.0, "fault_latency_p50_ms": 0.0,
                "fault_latency_p99_ms": 0.0}
    ms = np.asarray(fault_ns, dtype=np.float64) / 1e6
    return {"faults_measured": int(ms.size), "fault_latency_ms": float(ms.mean()),
            "fault_latency_p50_ms": float(np.percentile(ms, 50)),
            "fault_latency_p99_ms": float(np.percentile(ms, 99))}


def engine_latency(acc) -> dict[str, float]:
    """The engine's fault latencies of a CostAccumulator (its summary's keys)."""
    faults = acc.counts["faults"]
    return {"fault_latency_ms": acc.latency_sum_ns / 1e6 / faults if faults else 0.0,
            "fault_latency_p50_ms": acc.percentile_ms(50), "fault_latency_p99_ms": acc.percentile_ms(99)}


def latency_agreement(engine: dict, cluster: dict) -> dict:
    """Each fault-latency figure of the cluster against the engine's, within its named
    relative tolerance (satpage.comparator.TOLERANCES), as compare's JSON gives it."""
    from satpage.comparator import TOLERANCES, compare_figures

    verdict = compare_figures(engine, cluster, list(TOLERANCES))
    rows = []
    for r in verdict.rows:
        e, c = float(r.engine), float(r.other)
        rows.append({"key": r.key, "engine": round(e, 4), "cluster": round(c, 4),
                     "difference": round((c - e) / e, 4) if e else None,
                     "tolerance_rel": r.tolerance.rel, "ok": r.ok})
    return {"equal": verdict.equal, "rows": rows}


def compare(
    scenario: Annotated[str | None, typer.Argument(help="Scenario TOML file or shipped name "
                                   "(default, paper-mimic, large, faults, starlink-15s). Default: default.")] = None,
    set_: Annotated[list[str] | None, typer.Option("--set", help="Override one key: section.key=value "
                                   "(repeatable), e.g. --set workload.zipf_s=0.8")] = None,
    seed: Annotated[int | None, typer.Option("--seed", help="Override the scenario seed.")] = None,
    sessions: Annotated[int | None, typer.Option("--sessions", help="Override sessions.count.")] = None,
    strategies: Annotated[str | None, typer.Option("--strategies",
                                   help=STRATEGIES_HELP)] = None,
    processes: Annotated[int | None, typer.Option("--processes", "-j",
                                  help="Worker processes: N > 1 means --dask local:N "
                                       "(results do not depend on it).")] = None,
    dask: Annotated[str | None, typer.Option("--dask", help="Run the chunks on Dask: local[:N] "
                            "(a LocalCluster of N worker processes) or tcp://HOST:PORT (a "
                            "running scheduler); docs/scale.md.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout.")] = False,
    out: Annotated[Path | None, typer.Option("--out", help="Write JSON, CSV, Markdown, HTML and "
                             "PNG charts into this directory.")] = None,
    backend: Annotated[str, typer.Option("--backend",
                                help="engine (in-process) or cluster (a deployed gateway).")] = "engine",
    target: Annotated[str | None, typer.Option("--target", help="HOST:PORT of the gateway "
                               "(--backend cluster).")] = None,
    view_sessions: Annotated[int, typer.Option("--view-sessions", help="Sessions sampled "
                                   "(seeded) for `satpage view`'s per-session detail; 0 writes "
                                   "no view data.")] = 200,
    ground_links: Annotated[bool, typer.Option(
        "--ground-links", help="--backend cluster: register each session's client place, so that "
        "with link emulation every access also waits the client's ground link, up and down "
        "(slant range / c; docs/emulation.md). Fault latencies, measured at the serving "
        "satellite, do not change; the replay takes longer.")] = False,
    failure_schedule: Annotated[Path | None, typer.Option(
        "--failure-schedule", help="Write the run's satellite failures and the engine's "
        "losses to this file (format satpage-failures/1, docs/faults.md), for "
        "`satpage cluster chaos` to replay. --out writes it as failures.json.")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Debug logging.")] = False,
) -> None:
    """Compare ways of moving session state in a handover simulation of a real
    constellation (default: the paper's 150 satellites, population-weighted clients)."""
    setup_logging(verbose)
    if backend not in ("engine", "cluster"):
        fail(f"--backend must be engine or cluster, got {backend!r}")
    if view_sessions < 0:
        fail(f"--view-sessions must be 0 or more, got {view_sessions}")
    sc = resolve_scenario(scenario, set_ or [], seed, sessions, strategies, processes)
    if dask is not None:
        from satpage.parallel import parse_dask
        try:
            parse_dask(dask)
        except ValueError as exc:
            fail(str(exc))
    if ground_links and backend != "cluster":
        fail("--ground-links times the ground links of a cluster's replay: it needs --backend cluster")
    if backend == "cluster":
        _cluster(sc, target, as_json, strategies is not None, ground_links)
        return
    if failure_schedule is not None and failure_schedule.is_dir():
        fail(f"--failure-schedule {str(failure_schedule)!r} is a directory; give a file")

    from satpage.parallel import DaskUnreachable
    from satpage.report import result_dict, write_reports
    from satpage.simulate import prepare, run_scenario

    with progress() as bar:
        t_prep = bar.add_task("constellation, routing, sessions", total=1)
        world = prepare(sc)
        bar.advance(t_prep)
        t_run = bar.add_task(f"simulating {sc.sessions.count:,} sessions x "
                             f"{len(sc.strategies.compare)} strategies", total=world.n_chunks)
        try:
            res = run_scenario(sc, world=world, dask=dask,
                               on_chunk=lambda done, total: bar.update(t_run, completed=done))
        except DaskUnreachable as exc:
            fail(str(exc))
        result = result_dict(res)
        if out is not None:
            t_out = bar.add_task(f"writing report and charts to {out}", total=1)
            write_reports(res, out, result)
            bar.advance(t_out)
            if view_sessions:
                from satpage.view import from_run

                t_view = bar.add_task(f"view data ({view_sessions} sessions re-run)", total=1)
                from_run(res, view_sessions).write(out)
                bar.advance(t_view)
    if failure_schedule is not None:
        from satpage.report import write_schedule

        write_schedule(res, failure_schedule, result)
        stderr.print(f"failure schedule: {failure_schedule}")
    if as_json:
        print_json(result)
    else:
        from satpage.report import summary_paragraph

        stdout.print(_table(result, stdout.width))
        stdout.print(summary_paragraph(result), highlight=False)
        if out is not None:
            stdout.print(f"report: {out / 'report.html'}")
    if out is not None and as_json:
        stderr.print(f"report: {out / 'report.html'}")
