"""`satpage paper`: reproduce Fongen (INTERNET 2023) Table I and Sec. VI-A, and go past it.

Monte Carlo over many seeded runs of the paper's trail workload (``pager.run_paper``),
or the exact expectation in closed form (``--exact``, ``pager.exact_paper``), shown
beside the paper's own single-run numbers (pager/data/fongen-2023-table1.json). Reports page
movements (the paper's measure) and page-hops (movements weighted by trail distance).

Backends: ``engine`` (in-process, default) and ``cluster``: the same seeded trace
(``pager.paper_trace``) replayed through a deployed cluster by
``satpage.cluster.replay_paper(trace, target=...)``, which returns either
``pager.PaperCounts`` or the finished summary dict (built with ``pager.paper_summary``).
"""

from __future__ import annotations

import csv
import enum
import importlib
import json
import logging
import math
import os
from importlib import resources
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer

import pager
from satpage.console import fail, print_json, progress, setup_logging, stderr, stdout
from satpage.version import code_version

log = logging.getLogger(__name__)

TABLE1_FILE = "fongen-2023-table1.json"
PAPER_PARAMS = pager.PaperParams()  # the paper's parameters (Sec. VI)


class Backend(enum.StrEnum):
    engine = "engine"
    cluster = "cluster"


def data_dir() -> Path:
    """``$SATPAGE_DATA_DIR`` or pager's package data (``pager/data/``), where the
    paper's table ships beside the model it checks."""
    env = os.environ.get("SATPAGE_DATA_DIR")
    if env:
        return Path(env)
    return Path(os.fspath(resources.files("pager") / "data"))


def load_table1(path: Path | None = None) -> dict[str, Any]:
    """The paper's numbers with the Table I triangle as ``rows`` (V, V) and the
    page-hops derived from it (``ondemand_page_hops``)."""
    path = path or data_dir() / TABLE1_FILE
    with open(path, encoding="utf-8") as f:
        raw = json.load(f)
    table = raw["rows_before_each_handover"]
    v = len(table)
    rows = np.zeros((v, v))
    for k, row in enumerate(table):
        rows[k, : k + 1] = row["per_satellite"]
    moves, hops = pager.table_movements(rows)
    return {
        "source": raw["source"],
        "rows": rows,
        "totals": np.array([row["total"] for row in table], dtype=float),
        "proactive_moves": float(raw["proactive_page_movements"]),
        "ondemand_moves": float(raw["ondemand_page_movements"]),
        "ondemand_over_proactive": float(raw["ondemand_over_proactive"]),
        # Derived: on-demand movements weighted by trail distance (docs/design.md section 1).
        "ondemand_hops": float(hops.sum()),
        "ondemand_moves_per_visit": moves,
        "ondemand_hops_per_visit": hops,
    }


def _int_option(name: str, text: str, minimum: int, maximum: int | None = None) -> int:
    """Parse an integer option ourselves so the error quotes the value given."""
    try:
        value = int(text)
    except ValueError:
        fail(f"{name} must be an integer, got {text!r}")
    if value < minimum or (maximum is not None and value > maximum):
        bound = f">= {minimum}" if maximum is None else f"in [{minimum}, {maximum}]"
        fail(f"{name} must be an integer {bound}, got {value}")
    return value


def _float_option(name: str, text: str, minimum: float) -> float:
    try:
        value = float(text)
    except ValueError:
        fail(f"{name} must be a number, got {text!r}")
    if not math.isfinite(value) or value < minimum:
        fail(f"{name} must be a finite number >= {minimum:g}, got {text}")
    return value


def paper(
    runs: Annotated[str, typer.Option(
        "--runs", metavar="INT", help="Monte Carlo runs (sessions), >= 1.")] = "10000",
    seed: Annotated[str, typer.Option(
        "--seed", metavar="INT", help="Seed of the numpy Generator, >= 0.")] = "0",
    pages: Annotated[str, typer.Option(
        "--pages", metavar="INT", help="Pages in the session object (page-table entries).")]
    = str(PAPER_PARAMS.n_pages),
    accesses: Annotated[str, typer.Option(
        "--accesses", metavar="INT", help="Accesses per serving satellite.")]
    = str(PAPER_PARAMS.accesses),
    handovers: Annotated[str, typer.Option(
        "--handovers", metavar="INT",
        help="Handovers, 0..1000 (the trail has handovers + 1 satellites).")]
    = str(PAPER_PARAMS.handovers),
    zipf: Annotated[str, typer.Option(
        "--zipf", metavar="FLOAT", help="Zipf exponent s of f = a / r^s, >= 0 (0 = uniform).")]
    = f"{PAPER_PARAMS.zipf_s:g}",
    json_out: Annotated[bool, typer.Option("--json", help="One JSON object on stdout.")] = False,
    out: Annotated[Path | None, typer.Option(
        "--out", help="Write Fig. 4 and Fig. 5 (PNG and CSV) into this folder.")] = None,
    exact: Annotated[bool, typer.Option(
        "--exact", help="Exact expectation in closed form, no sampling.")] = False,
    backend: Annotated[Backend, typer.Option(
        "--backend", help="engine (in-process) or cluster (satpage.cluster).")]
    = Backend.engine,
    target: Annotated[str | None, typer.Option(
        "--target", help="HOST:PORT of the cluster gateway (cluster backend).")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Debug logs on stderr.")]
    = False,
) -> None:
    """Reproduce the paper's Table I and Sec. VI-A: movements and page-hops."""
    setup_logging(verbose)
    runs_n = _int_option("--runs", runs, 1)
    seed_n = _int_option("--seed", seed, 0)
    params = pager.PaperParams(n_pages=_int_option("--pages", pages, 1),
                               accesses=_int_option("--accesses", accesses, 1),
                               handovers=_int_option("--handovers", handovers, 0, 1000),
                               zipf_s=_float_option("--zipf", zipf, 0.0))
    if exact and backend is not Backend.engine:
        fail(f"--exact computes in closed form and takes no backend, got --backend {backend.value}")
    expectation = pager.exact_paper(params)
    version = code_version()
    if exact:
        summary = pager.paper_summary(expectation, params=params, seed=None, version=version)
    elif backend is Backend.engine:
        counts = _run_engine(params, runs_n, seed_n, quiet=json_out)
        summary = pager.paper_summary(counts, params=params, seed=seed_n, version=version)
    else:
        summary = _run_cluster(params, runs_n, seed_n, target, version)
    if not exact:
        summary["exact"] = {
            name: pager.json_floats(getattr(expectation, name))
            for name in pager.PAPER_QUANTITIES
        }
    reference = load_table1() if params == PAPER_PARAMS else None
    if reference is not None:
        summary["paper"] = {
            "source": reference["source"],
            "totals": reference["totals"].tolist(),
            "last_row": reference["rows"][-1].tolist(),
            "proactive_moves": reference["proactive_moves"],
            "ondemand_moves": reference["ondemand_moves"],
            "ondemand_over_proactive_moves": reference["ondemand_over_proactive"],
            "ondemand_hops_from_table": reference["ondemand_hops"],
            "note": "one run in the paper; compare with the one-run spread (*_sd)",
        }
    if out is not None:
        written = write_figures(out, summary, expectation, reference)
        log.info("wrote %s", ", ".join(str(p) for p in written))
    if json_out:
        print_json(summary)
    else:
        print_tables(summary, expectation, reference)


def _run_engine(params: pager.PaperParams, runs: int, seed: int, quiet: bool) -> pager.PaperCounts:
    rng = np.random.default_rng(seed)
    with progress(disable=quiet and not stderr.is_terminal) as bar:
        task = bar.add_task("paper runs", total=runs)
        return pager.run_paper(params, runs, rng,
                               on_chunk=lambda n: bar.advance(task, n))


def _run_cluster(params: pager.PaperParams, runs: int, seed: int, target: str | None,
                 version: str) -> dict[str, Any]:
    try:
        cluster = importlib.import_module("satpage.cluster")
    except ImportError:
        fail("--backend cluster needs the satpage.cluster module (the services component), "
             "which is not installed here; use --backend engine")
    replay_paper = getattr(cluster, "replay_paper", None)
    if replay_paper is None:
        fail("--backend cluster: satpage.cluster has no replay_paper(trace, target=...)")
    trace = pager.paper_trace(params, runs, np.random.default_rng(seed))
    result = replay_paper(trace, target=target)
    if isinstance(result, pager.PaperCounts):
        return pager.paper_summary(result, params=params, seed=seed, version=version,
                                   backend="cluster")
    summary = dict(result)
    summary.setdefault("backend", "cluster")
    summary.setdefault("seed", seed)
    summary.setdefault("version", version)
    return summary


def _cell(mean: float | None, ci: float | None) -> str:
    if mean is None:
        return "-"
    if ci is None or ci == 0:
        return f"{mean:.1f}"
    return f"{mean:.1f}±{ci:.1f}"


def print_tables(summary: dict[str, Any], expectation: pager.PaperExpectation,
                 reference: dict[str, Any] | None) -> None:
    """Table I as the paper prints it, then movements and page-hops."""
    from rich.table import Table

    v = len(summary["totals"])
    method = summary["method"]
    runs = summary["runs"]
    p = summary["parameters"]
    title = (f"Table I: pages per satellite (N={p['pages']}, A={p['accesses']}, "
             f"H={p['handovers']}, s={p['zipf']:g}; "
             + ("exact expectation" if method == "exact"
                else f"mean ±95% CI over {runs} runs, seed {summary['seed']}") + ")")
    caption = ("row k: just before handover k; each cell: pages, then [dim]exact "
               "expectation[/]" + (", [cyan]the paper's number (one run)[/]"
                                   if reference is not None else ""))
    table = Table(title=title, title_justify="left", caption=caption, caption_justify="left",
                  padding=(0, 0))
    table.add_column("row")
    table.add_column("total", justify="right")
    for j in range(v):
        table.add_column(f"sat {j}", justify="right")
    rows, rows_ci = summary.get("rows"), summary.get("rows_ci95")
    for k in range(v):
        label = f"{k + 1}" if k < v - 1 else "end"
        cells = [_cell(summary["totals"][k], summary["totals_ci95"][k])]
        if method != "exact":
            cells[0] += f"\n[dim]{expectation.totals[k]:.1f}[/]"
        if reference is not None:
            cells[0] += f"\n[cyan]{reference['totals'][k]:.0f}[/]"
        for j in range(v):
            if j > k:
                cells.append("")
                continue
            if rows is not None:
                cell = _cell(rows[k][j], rows_ci[k][j])
            elif k == v - 1:
                cell = _cell(summary["last_row"][j], summary["last_row_ci95"][j])
            else:
                cell = "-"
            if method != "exact":
                cell += f"\n[dim]{expectation.rows[k, j]:.1f}[/]"
            if reference is not None:
                cell += f"\n[cyan]{reference['rows'][k, j]:.0f}[/]"
            cells.append(cell)
        table.add_row(label, *cells)
    stdout.print(table)

    cost = Table(title="Cost of the trail: proactive vs on-demand", title_justify="left")
    for col in ("measure", "proactive", "on-demand", "on-demand / proactive"):
        cost.add_column(col, justify="right" if col != "measure" else "left")
    for measure, pro, ond, ratio_key in (
        ("page movements", "proactive_moves", "ondemand_moves", "ondemand_over_proactive_moves"),
        ("page-hops (trail distance)", "proactive_hops", "ondemand_hops",
         "ondemand_over_proactive_hops"),
    ):
        ratio = summary[ratio_key]
        cost.add_row(f"{measure}" + ("" if method == "exact" else f" ({method})"),
                     _cell(summary[pro], summary[f"{pro}_ci95"]),
                     _cell(summary[ond], summary[f"{ond}_ci95"]),
                     f"{ratio:.1%}" if ratio is not None else "-")
        if method != "exact":
            e_pro, e_ond = getattr(expectation, pro), getattr(expectation, ond)
            cost.add_row("  exact expectation", f"{e_pro:.1f}", f"{e_ond:.1f}",
                         f"{e_ond / e_pro:.1%}" if e_pro else "-")
        if reference is not None:
            ref_ond = reference["ondemand_moves" if pro == "proactive_moves" else "ondemand_hops"]
            note = "" if pro == "proactive_moves" else " (from Table I)"
            cost.add_row(f"  [cyan]paper{note}[/]", f"{reference['proactive_moves']:.0f}",
                         f"{ref_ond:.0f}", f"{ref_ond / reference['proactive_moves']:.0%}")
    stdout.print(cost)
    stdout.print(
        "Movements count every page moved once, whatever the distance (the paper's "
        "\"40 %\"); page-hops weight each movement by its trail distance, which is what "
        "the ISLs carry. Proactive moves every page one hop at every handover, so its "
        "movements and page-hops are equal; on-demand fetches pages from several hops "
        "back, so its share in page-hops is larger than in movements.",
        style="dim",
    )


def write_figures(out: Path, summary: dict[str, Any], expectation: pager.PaperExpectation,
                  reference: dict[str, Any] | None) -> list[Path]:
    """Fig. 4 (pages over the trail after H handovers) and Fig. 5 (proactive vs
    on-demand, movements and page-hops per handover) as PNG + CSV."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    v = len(summary["totals"])
    sats = np.arange(v)
    last = np.asarray(summary["last_row"], dtype=float)
    last_ci = np.nan_to_num(np.asarray(summary["last_row_ci95"], dtype=float))
    ref_last = reference["rows"][-1] if reference is not None else None
    label = "exact expectation" if summary["method"] == "exact" else (
        f"mean of {summary['runs']} runs, 95% CI")

    fig4_csv = out / "fig4.csv"
    with open(fig4_csv, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["satellite", "pages_mean", "pages_ci95", "pages_exact", "pages_paper"])
        for j in sats:
            w.writerow([j, f"{last[j]:.6g}", f"{last_ci[j]:.6g}",
                        f"{expectation.last_row[j]:.6g}",
                        "" if ref_last is None else f"{ref_last[j]:.0f}"])
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    ax.bar(sats, last, yerr=last_ci, capsize=3, color="#4c72b0", label=label)
    ax.plot(sats, expectation.last_row, "k_", markersize=18, mew=2, label="exact expectation")
    if ref_last is not None:
        ax.plot(sats, ref_last, "o", color="#dd8452", label="paper (one run)")
    ax.set_xticks(sats, [f"{j}" + (" (serving)" if j == v - 1 else "") for j in sats])
    ax.set_xlabel("satellite of the trail")
    ax.set_ylabel("pages held")
    ax.set_title(f"Fig. 4: distribution of pages after {v - 1} handovers (on-demand)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig4_png = out / "fig4.png"
    fig.savefig(fig4_png, dpi=120)
    plt.close(fig)

    # Per handover k = 1..H: proactive moves the totals of visit k-1 one hop each;
    # on-demand movements/page-hops into visit k read off the mean Table I.
    ks = np.arange(1, v)
    totals = np.asarray(summary["totals"], dtype=float)
    pro = totals[:-1]
    if summary.get("rows") is not None:
        tri = np.zeros((v, v))
        for k, row in enumerate(summary["rows"]):
            tri[k, : k + 1] = row
        od_moves, od_hops = pager.table_movements(tri)
        od_moves, od_hops = od_moves[1:], od_hops[1:]
    else:
        od_moves = od_hops = np.full(v - 1, np.nan)
    fig5_csv = out / "fig5.csv"
    with open(fig5_csv, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["handover", "proactive_moves", "ondemand_moves", "proactive_hops",
                    "ondemand_hops", "exact_ondemand_moves", "exact_ondemand_hops",
                    "paper_proactive_moves", "paper_ondemand_moves", "paper_ondemand_hops"])
        for i, k in enumerate(ks):
            paper_cols = ["", "", ""]
            if reference is not None:
                paper_cols = [f"{reference['totals'][k - 1]:.0f}",
                              f"{reference['ondemand_moves_per_visit'][k]:.0f}",
                              f"{reference['ondemand_hops_per_visit'][k]:.0f}"]
            w.writerow([k, f"{pro[i]:.6g}", f"{od_moves[i]:.6g}", f"{pro[i]:.6g}",
                        f"{od_hops[i]:.6g}", f"{expectation.ondemand_moves_per_visit[k]:.6g}",
                        f"{expectation.ondemand_hops_per_visit[k]:.6g}", *paper_cols])
        w.writerow(["total", f"{summary['proactive_moves']:.6g}",
                    f"{summary['ondemand_moves']:.6g}", f"{summary['proactive_hops']:.6g}",
                    f"{summary['ondemand_hops']:.6g}", f"{expectation.ondemand_moves:.6g}",
                    f"{expectation.ondemand_hops:.6g}",
                    *(["", "", ""] if reference is None else
                      [f"{reference['proactive_moves']:.0f}",
                       f"{reference['ondemand_moves']:.0f}",
                       f"{reference['ondemand_hops']:.0f}"])])
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.0), sharey=True)
    width = 0.38
    for ax, od, title, od_total, pr_total in (
        (axes[0], od_moves, "page movements", summary["ondemand_moves"],
         summary["proactive_moves"]),
        (axes[1], od_hops, "page-hops (trail distance)", summary["ondemand_hops"],
         summary["proactive_hops"]),
    ):
        ax.bar(ks - width / 2, pro, width, color="#c44e52",
               label=f"proactive (total {pr_total:.0f})")
        ax.bar(ks + width / 2, od, width, color="#4c72b0",
               label=f"on-demand (total {od_total:.0f}, {od_total / pr_total:.0%})")
        if reference is not None:
            key = "ondemand_moves_per_visit" if "movements" in title else "ondemand_hops_per_visit"
            ax.plot(ks + width / 2, reference[key][1:], "o", color="#dd8452",
                    label="paper on-demand (one run)")
        ax.set_xticks(ks)
        ax.set_xlabel("handover")
        ax.set_title(title)
        ax.legend(fontsize=8)
    axes[0].set_ylabel("per handover")
    fig.suptitle(f"Fig. 5: proactive vs on-demand ({label})")
    fig.tight_layout()
    fig5_png = out / "fig5.png"
    fig.savefig(fig5_png, dpi=120)
    plt.close(fig)
    return [fig4_png, fig4_csv, fig5_png, fig5_csv]
