"""`satpage sweep [SCENARIO] --vary section.key=v1,v2,... [--vary ...]`: run a scenario at
every combination of the varied values, across processes, and write a CSV and one chart
per cost against the (first) varied key."""

from __future__ import annotations

import csv
import logging
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from satpage.commands.compare import STRATEGIES_HELP
from satpage.console import fail, print_json, progress, setup_logging, stdout

__all__ = ["sweep"]

log = logging.getLogger(__name__)


def sweep(
    scenario: Annotated[str | None, typer.Argument(help="Scenario TOML file or shipped name "
                                   "(default: default).")] = None,
    vary: Annotated[list[str] | None, typer.Option("--vary", help="section.key=v1,v2,... (repeatable; "
                                   "the grid is every combination)")] = None,
    set_: Annotated[list[str] | None, typer.Option("--set", help="Override one key for every point.")] = None,
    seed: Annotated[int | None, typer.Option("--seed", help="Override the scenario seed.")] = None,
    sessions: Annotated[int | None, typer.Option("--sessions", help="Override sessions.count.")] = None,
    strategies: Annotated[str | None, typer.Option("--strategies",
                                   help=STRATEGIES_HELP)] = None,
    processes: Annotated[int, typer.Option("--processes", "-j",
                                  help="Worker processes: N > 1 means --dask local:N "
                                       "(results do not depend on it).")] = 1,
    dask: Annotated[str | None, typer.Option("--dask", help="Run the points on Dask: local[:N] "
                            "or tcp://HOST:PORT (a running scheduler); docs/scale.md.")] = None,
    out: Annotated[Path, typer.Option("--out", help="Directory for sweep.csv and "
                             "the charts.")] = Path("sweep-out"),
    as_json: Annotated[bool, typer.Option("--json", help="Print the rows as one JSON object.")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
) -> None:
    """Vary scenario keys (Zipf exponent, access rate, pages, constellation, ...) and chart
    every cost against them."""
    setup_logging(verbose)
    from satpage import charts
    from satpage.commands.compare import resolve_scenario
    from satpage.parallel import DaskUnreachable
    from satpage.sweep import SWEEP_COSTS, grid_points, parse_vary, run_sweep
    from satpage.version import code_version

    if not vary:
        fail("give at least one --vary section.key=v1,v2,...")
    if processes < 1:
        fail(f"--processes must be at least 1, got {processes}")
    if dask is not None:
        from satpage.parallel import parse_dask
        try:
            parse_dask(dask)
        except ValueError as exc:
            fail(str(exc))
    base = resolve_scenario(scenario, set_ or [], seed, sessions, strategies)
    spec = [parse_vary(v) for v in vary]
    keys = [k for k, _ in spec]
    n = len(grid_points(base, spec))
    memory: dict = {}
    with progress() as bar:
        task = bar.add_task(f"sweeping {n} points of {', '.join(keys)}", total=n)
        try:
            rows = run_sweep(base, spec, processes,
                             on_point=lambda done, total: bar.update(task, completed=done),
                             dask=dask, memory=memory)
        except DaskUnreachable as exc:
            fail(str(exc))
    out.mkdir(parents=True, exist_ok=True)
    cols = keys + ["strategy"] + [c for c in rows[0] if c not in keys and c != "strategy"]
    with (out / "sweep.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["scenario", "seed", "version", *cols])
        for r in rows:
            w.writerow([base.name, base.seed, code_version(), *[r[c] for c in cols]])
    for cost in SWEEP_COSTS:
        charts.sweep_chart(rows, keys, cost, out / f"sweep_{cost}.png")
    n_charts = len(SWEEP_COSTS)
    fault_keys = [k for k in keys if k.startswith("faults.")]
    if fault_keys:
        # pages lost against protection cost (docs/faults.md): x through the first varied
        # failure key other than R, one line per R
        x_key = next((k for k in fault_keys if k != "faults.replicas"), fault_keys[0])
        charts.sweep_faults_chart(rows, out / "sweep_faults.png", x_key=x_key)
        n_charts += 1
    if as_json:
        print_json({"scenario": base.name, "scenario_file": base.source, "seed": base.seed,
                    "version": code_version(), "varied": {k: v for k, v in spec},
                    "dask": dask, "memory": memory, "rows": rows})
        return
    t = Table(title=f"satpage sweep: {base.name}, seed {base.seed}")
    for c in keys + ["strategy", "page_moves", "page_hops", "fault_latency_ms"]:
        t.add_column(c, justify="right")
    for r in rows:
        t.add_row(*[str(r[k]) for k in keys], r["strategy"], f"{r['page_moves']:,}",
                  f"{r['page_hops']:,}", f"{r['fault_latency_ms']:.2f}")
    stdout.print(t)
    stdout.print(f"wrote {out / 'sweep.csv'} and {n_charts} charts")
