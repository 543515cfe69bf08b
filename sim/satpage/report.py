"""Reports of a comparison run: the JSON object, CSV, Markdown and a self-contained HTML
page (charts embedded as data URIs). Every report records scenario, seed and code
version (docs/conventions.md).

Files written by ``write_reports(res, DIR)``:

- ``result.json``   the object `satpage compare --json` prints
- ``costs.csv``     one row per strategy, one column per cost (SUMMARY_KEYS first)
- ``pages_held.csv`` per strategy and time bin: max and mean pages held per satellite
- ``isl_load.csv``  per strategy and link: satellite ends and bytes carried
- ``isl_utilisation.csv`` per strategy, link and time bin: utilisation (background
  plus the strategy's own pages at the link rate), link-bins with any load only
- ``report.md``, ``report.html`` and the PNG charts of satpage.charts
"""

from __future__ import annotations

import base64
import csv
import datetime as dt
import html
import json
from pathlib import Path
from typing import Any

import numpy as np

from satpage.console import to_jsonable
from satpage.costs import SUMMARY_KEYS
from satpage.version import code_version

__all__ = ["result_dict", "write_reports", "TABLE_COLUMNS", "HEADLINE_COLUMNS", "headline_columns",
           "summary_paragraph"]

#: (key, header, format) of the terminal and Markdown tables.
TABLE_COLUMNS = (
    ("page_moves", "moves", "{:,.0f}"),
    ("page_hops", "page-hops", "{:,.0f}"),
    ("hops_per_move", "hops/move", "{:.2f}"),
    ("byte_hops", "byte-hops", "{:.3g}"),
    ("fault_latency_ms", "fault ms mean", "{:.2f}"),
    ("fault_latency_p50_ms", "p50", "{:.2f}"),
    ("fault_latency_p99_ms", "p99", "{:.2f}"),
    ("access_latency_ms_mean", "ms/access", "{:.3f}"),
    ("handover_transfer_bytes", "handover bytes", "{:.3g}"),
    ("isl_load_max_bytes", "ISL max bytes", "{:.3g}"),
    ("isl_load_mean_bytes", "ISL mean bytes", "{:.3g}"),
    ("pages_held_max_per_satellite", "held max/sat", "{:,.0f}"),
    ("pages_left_behind", "left behind", "{:,.0f}"),
    ("link_delay_ms_mean", "tx+queue ms/fault", "{:.4f}"),
    ("stall_p50_ms", "stall p50 ms", "{:.3g}"),
    ("stall_p99_ms", "stall p99 ms", "{:.3g}"),
    ("stalled_access_share", "stalled share", "{:.2e}"),
    ("handover_downtime_p50_ms", "downtime p50 ms", "{:.4g}"),
    ("handover_downtime_p99_ms", "downtime p99 ms", "{:.4g}"),
    ("isl_utilisation_max", "ISL util max", "{:.3g}"),
    ("isl_utilisation_p99", "ISL util p99", "{:.3g}"),
    ("isl_link_bins_over_80pct", "link-bins >80%", "{:,.0f}"),
    ("custody_hits", "custody hits", "{:,.0f}"),
    ("custody_extra_pages", "custody pages", "{:,.0f}"),
    ("replica_copies", "replica copies", "{:,.0f}"),
    ("pages_lost", "pages lost", "{:,.0f}"),
    ("sessions_hit", "sessions hit", "{:,.0f}"),
    ("replication_page_hops", "replication page-hops", "{:,.0f}"),
    ("replication_bytes", "replication bytes", "{:.3g}"),
)


#: (key, header, format) of the terminal table's columns, most telling first: it shows as
#: many as the terminal's width holds (five at 80 columns), the report all of TABLE_COLUMNS.
HEADLINE_COLUMNS = (
    ("page_moves", "moves", "{:,.0f}"),
    ("page_hops", "page-hops", "{:,.0f}"),
    ("access_latency_ms_mean", "ms/access", "{:.3f}"),
    ("fault_latency_p99_ms", "fault p99 ms", "{:.2f}"),
    ("pages_held_max_per_satellite", "held max/sat", "{:,.0f}"),
    ("stall_p99_ms", "stall p99 ms", "{:.3g}"),
    ("handover_transfer_bytes", "handover bytes", "{:.3g}"),
    ("pages_left_behind", "left behind", "{:,.0f}"),
    ("fault_latency_ms", "fault ms mean", "{:.2f}"),
    ("handover_downtime_p99_ms", "downtime p99 ms", "{:.4g}"),
    ("isl_utilisation_max", "ISL util max", "{:.3g}"),
    ("isl_load_max_bytes", "ISL max bytes", "{:.3g}"),
)

#: Headline columns of a run with failures or replicas, after moves and page-hops.
FAULT_COLUMNS = (
    ("pages_lost", "pages lost", "{:,.0f}"),
    ("sessions_hit", "sessions hit", "{:,.0f}"),
    ("replication_page_hops", "replication page-hops", "{:,.0f}"),
)


def _faults_active(result: dict) -> bool:
    f = result.get("faults") or {}
    return bool(f) and (f["failures"] > 0 or f["replicas"] > 1)


def headline_columns(result: dict) -> tuple[tuple[str, str, str], ...]:
    """The terminal table's columns for this result, in order of importance."""
    if not _faults_active(result):
        return HEADLINE_COLUMNS
    return HEADLINE_COLUMNS[:2] + FAULT_COLUMNS + HEADLINE_COLUMNS[2:]


#: (key, what the best strategy does, format, the cost's noun) of the summary; lower is
#: better for all.
_SUMMARY_CRITERIA = (
    ("page_hops", "moves the least over the ISLs", "{:,.0f} page-hops", "ISL traffic"),
    ("access_latency_ms_mean", "makes an access wait least", "{:.3f} ms on average",
     "waits"),
    ("fault_latency_p99_ms", "has the shortest p99 page fault of those that fault",
     "{:.1f} ms", "p99 fault latency"),
    ("pages_held_max_per_satellite", "holds the fewest pages on the busiest satellite",
     "{:,.0f}", "pages held"),
    ("pages_left_behind", "leaves the fewest pages behind at session ends", "{:,.0f}",
     "pages left behind"),
)
_FAULT_CRITERIA = (
    ("pages_lost", "loses the fewest pages to failures", "{:,.0f}", "pages lost"),
    ("replication_page_hops", "spends the least on replication", "{:,.0f} page-hops",
     "replication traffic"),
)
_PLURAL = {"moves": "move", "makes": "make", "has": "have", "holds": "hold", "leaves": "leave",
           "loses": "lose", "spends": "spend"}


def _names(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _extreme(pool: dict[str, float], lowest: bool) -> tuple[float, list[str]]:
    v = min(pool.values()) if lowest else max(pool.values())
    return v, [n for n, x in pool.items() if abs(x - v) <= 1e-9 * abs(v)]


def summary_paragraph(result: dict) -> str:
    """One paragraph: which strategy wins what (the lowest value of each headline cost,
    ties named together), and which pays most in ISL traffic and in waits."""
    st = result["strategies"]
    criteria = _SUMMARY_CRITERIA + (_FAULT_CRITERIA if _faults_active(result) else ())
    parts = []
    for key, what, fmt, noun in criteria:
        pool = {n: float(s[key]) for n, s in st.items()
                if key != "fault_latency_p99_ms" or s.get("faults", 0) > 0}
        if not pool:
            continue
        best, won = _extreme(pool, lowest=True)
        if len(won) == len(st) and len(st) > 1:
            parts.append(f"all tie on {noun} ({fmt.format(best)})")
            continue
        verb = what if len(won) == 1 else " ".join(_PLURAL.get(w, w) for w in what.split(" "))
        parts.append(f"{_names(won)} {verb} ({fmt.format(best)})")
    wl = result["workload"]
    text = (f"Of {len(st)} strategies over {wl['sessions']:,} sessions (seed "
            f"{result['seed']}): " + "; ".join(parts) + ".")
    if len(st) > 2:
        hops, most_hops = _extreme({n: float(s["page_hops"]) for n, s in st.items()}, False)
        wait, most_wait = _extreme({n: float(s["access_latency_ms_mean"])
                                    for n, s in st.items()}, False)
        def verb(names: list[str], singular: str) -> str:
            return singular if len(names) == 1 else _PLURAL[singular]

        second = (verb(most_hops, "makes") if most_wait == most_hops
                  else f"{_names(most_wait)} {verb(most_wait, 'makes')}")
        text += (f" At the other end, {_names(most_hops)} {verb(most_hops, 'moves')} the most "
                 f"({hops:,.0f} page-hops) and {second} accesses wait longest ({wait:.3f} ms "
                 "on average). Every cost is in the full table (report.md, costs.csv, --json).")
    return text


def result_dict(res) -> dict[str, Any]:
    """The JSON object of a run: scenario, seed, version, workload, strategies."""
    from satpage.simulate import ENGINE

    sc = res.scenario
    sums = res.summaries()
    any_s = next(iter(sums.values()))
    sessions = max(any_s["sessions"], 1)
    return to_jsonable({
        "scenario": sc.name,
        "scenario_file": sc.source,
        "seed": sc.seed,
        "version": code_version(),
        "engine": ENGINE,
        "orbit_backend": res.world.sats.backend,
        "processes": res.processes,
        "queueing_passes": getattr(res, "passes", 1),
        "dask": res.dask,
        "config": sc.to_dict(),
        "workload": {
            "sessions": any_s["sessions"],
            "visits": any_s["visits"],
            "handovers_per_session": (any_s["visits"] - any_s["sessions"]) / sessions,
            "accesses": any_s["accesses"],
            "accesses_per_visit": any_s["accesses_per_visit"],
            "satellites": res.world.sats.n_sats,
            "isl_links": int(res.world.topology.link_exists().sum()),
            "uncovered_step_fraction": res.uncovered_steps / max(res.client_steps, 1),
        },
        "timing_s": {**{k: round(v, 3) for k, v in res.stage_s.items()},
                     "wall": round(res.wall_s, 3)},
        # peak resident sets: this process, and each Dask worker when the run used Dask
        # (sum_peak_rss_mb: an upper bound of the machine's use, the peaks need not coincide)
        "memory": {"peak_rss_mb": max([res.peak_rss_mb, *res.workers_peak_rss_mb]),
                   "client_peak_rss_mb": res.peak_rss_mb,
                   "workers_peak_rss_mb": res.workers_peak_rss_mb,
                   "sum_peak_rss_mb": round(res.peak_rss_mb + sum(res.workers_peak_rss_mb), 1)},
        "faults": faults_dict(res),
        "strategies": sums,
    })


def faults_dict(res) -> dict[str, Any]:
    """The run's failures (docs/faults.md): how many, which satellites, R."""
    f = res.scenario.faults
    fs = res.world.failures
    return {"failures": fs.n_failures,
            "satellites_failed": int(np.unique(fs.satellite).size),
            "permanent": f.repair_after_s == 0,
            "replicas": f.replicas, "recovery_s": f.recovery_s,
            "write_share": f.write_share,
            "schedule_format": "satpage-failures/1"}


def _csv_costs(result: dict, path: Path) -> None:
    strategies = result["strategies"]
    keys = list(SUMMARY_KEYS) + [k for k in next(iter(strategies.values()))
                                 if k not in SUMMARY_KEYS]
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["scenario", "seed", "version", "strategy", *keys])
        for name, s in strategies.items():
            w.writerow([result["scenario"], result["seed"], result["version"], name,
                        *[s[k] for k in keys]])


def _csv_series(res, out: Path) -> None:
    sc = res.scenario
    bins = sc.network.load_bins
    with (out / "pages_held.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["strategy", "bin_end_s", "max_pages_per_satellite",
                    "mean_pages_per_satellite"])
        for name, acc in res.costs.items():
            held = acc.held_series()
            for b in range(bins):
                w.writerow([name, (b + 1) * sc.time.duration_s / bins, int(held[:, b].max()),
                            float(held[:, b].mean())])
    ends = res.world.routing.links.endpoints          # link id = row (orbit_model)
    ids = np.arange(ends.shape[0])
    lo, hi = ends[:, 0], ends[:, 1]
    with (out / "isl_load.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["strategy", "sat_a", "sat_b", "bytes"])
        for name, acc in res.costs.items():
            per = acc.link_load.sum(axis=0)[ids] * sc.workload.page_bytes
            for a, b, v in zip(lo, hi, per, strict=True):
                w.writerow([name, int(a), int(b), int(v)])
    links = res.world.links
    exists = res.world.routing.link_exists()
    with (out / "isl_utilisation.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["strategy", "bin_end_s", "sat_a", "sat_b", "utilisation"])
        for name, acc in res.costs.items():
            util = acc.utilisation(links, exists)
            bins, cols = np.nonzero(util > 0)
            for b, c in zip(bins, cols, strict=True):
                w.writerow([name, (b + 1) * sc.time.duration_s / util.shape[0], int(lo[c]),
                            int(hi[c]), f"{util[b, c]:.6g}"])


def _table_rows(result: dict) -> tuple[list[str], list[list[str]]]:
    head = ["strategy"] + [h for _, h, _ in TABLE_COLUMNS]
    rows = []
    for name, s in result["strategies"].items():
        rows.append([name] + [f.format(s[k]) for k, _, f in TABLE_COLUMNS])
    return head, rows


def _markdown(result: dict, charts: list[Path]) -> str:
    head, rows = _table_rows(result)
    wl = result["workload"]
    cfg = result["config"]
    lines = [
        f"# satpage compare: {result['scenario']}",
        "",
        f"- scenario file: `{result['scenario_file']}`",
        f"- seed: {result['seed']}",
        f"- code version: `{result['version']}` (engine: {result['engine']}, "
        f"orbits: {result['orbit_backend']})",
        f"- written: {dt.datetime.now(dt.UTC).isoformat(timespec='seconds')}",
        f"- constellation: `{cfg['constellation']['spec']}` ({wl['satellites']} satellites, "
        f"{wl['isl_links']} ISLs); the paper's 150 satellites at 500 km, with planes and "
        "inclination as docs/conventions.md fixes them",
        f"- sessions: {wl['sessions']:,}, visits: {wl['visits']:,} "
        f"({wl['handovers_per_session']:.2f} handovers per session), accesses: "
        f"{wl['accesses']:,} ({wl['accesses_per_visit']:.1f} per serving satellite; paper: "
        "1000)",
        f"- pages {cfg['workload']['pages']}, {cfg['workload']['page_bytes']} bytes each, "
        f"Zipf s = {cfg['workload']['zipf_s']}",
        *_faults_lines(result),
        "",
        "## Summary",
        "",
        summary_paragraph(result),
        "",
        "## Costs",
        "",
        "Movements are priced in ISL shortest-path hops between the two satellites at the "
        "time of the transfer; fault latency is the path's propagation delay plus per-hop "
        "processing, there and back, plus the page's transmission and M/D/1 queueing on each "
        f"link ({cfg['network']['isl_capacity_gbps']:g} Gbit/s per ISL, background load "
        f"{cfg['network']['background_load']:g} {cfg['network']['background_profile']}); "
        "stalls are accesses waiting for a page in flight or a container being migrated "
        "(docs/strategies.md).",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "|".join("---" for _ in head) + "|",
    ]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    lines += ["", "## Charts", ""]
    lines += [f"![{p.stem}]({p.name})" for p in charts]
    lines += ["", "## Scenario", "", "```json", json.dumps(cfg, indent=2), "```", ""]
    return "\n".join(lines)


def _faults_lines(result: dict) -> list[str]:
    """The report's line on failures and replication (none without [faults])."""
    f = result.get("faults") or {}
    cfg = result["config"].get("faults", {})
    if not f or (not f["failures"] and f["replicas"] == 1):
        return []
    life = ("permanent" if f["permanent"]
            else f"repaired after {cfg.get('repair_after_s', 0):g} s, empty")
    return [f"- failures: {f['failures']} ({f['satellites_failed']} satellites, {life}); "
            f"replicas R = {f['replicas']} (the R-1 satellites behind the owner in its "
            f"plane), recovery {f['recovery_s']:g} s, write share {f['write_share']:g}: "
            "pages lost, sessions hit and replication traffic as docs/faults.md defines "
            "them; the schedule is in failures.json"]


def _html(result: dict, charts: list[Path]) -> str:
    head, rows = _table_rows(result)
    e = html.escape
    imgs = []
    for p in charts:
        data = base64.b64encode(p.read_bytes()).decode("ascii")
        imgs.append(f'<figure><img alt="{e(p.stem)}" src="data:image/png;base64,{data}">'
                    f"<figcaption>{e(p.stem)}</figcaption></figure>")
    wl = result["workload"]
    table = ("<table><tr>" + "".join(f"<th>{e(h)}</th>" for h in head) + "</tr>"
             + "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in r) + "</tr>" for r in rows)
             + "</table>")
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>satpage compare: {e(result['scenario'])}</title>
<style>body{{font-family:sans-serif;max-width:1100px;margin:2em auto;}}
table{{border-collapse:collapse;font-size:0.85em}}td,th{{border:1px solid #ccc;padding:3px 6px;
text-align:right}}th{{background:#eee}}img{{max-width:100%}}pre{{background:#f6f6f6;
padding:1em;font-size:0.8em}}</style></head><body>
<h1>satpage compare: {e(result['scenario'])}</h1>
<ul><li>scenario file: <code>{e(str(result['scenario_file']))}</code></li>
<li>seed: {result['seed']}</li>
<li>code version: <code>{e(result['version'])}</code> (engine {e(result['engine'])},
orbits {e(result['orbit_backend'])})</li>
<li>sessions {wl['sessions']:,}; visits {wl['visits']:,}; accesses {wl['accesses']:,}
({wl['accesses_per_visit']:.1f} per serving satellite)</li>
{''.join(f"<li>{e(x[2:])}</li>" for x in _faults_lines(result))}</ul>
<h2>Summary</h2><p>{e(summary_paragraph(result))}</p>
<h2>Costs</h2>
{table}
{''.join(imgs)}
<h2>Scenario</h2><pre>{e(json.dumps(result['config'], indent=2))}</pre>
</body></html>
"""


def write_schedule(res, path: Path, result: dict | None = None) -> Path:
    """The run's failure schedule with the engine's losses (``satpage-failures/1``)."""
    from satpage.faults_io import write_failure_schedule

    result = result if result is not None else result_dict(res)
    w = res.world
    return write_failure_schedule(path, res.scenario, w.failures, result["strategies"],
                                  result["version"], w.sats.plane, w.sats.slot)


def write_reports(res, out_dir: Path, result: dict | None = None,
                  charts: list[Path] | None = None) -> list[Path]:
    """JSON, CSV, Markdown and HTML reports (and the charts, unless given) into out_dir."""
    from satpage import charts as ch

    out_dir.mkdir(parents=True, exist_ok=True)
    result = result if result is not None else result_dict(res)
    charts = charts if charts is not None else ch.write_all(res, out_dir)
    paths = [out_dir / "result.json", out_dir / "costs.csv", out_dir / "report.md",
             out_dir / "report.html"]
    paths[0].write_text(json.dumps(result, indent=2) + "\n")
    _csv_costs(result, paths[1])
    _csv_series(res, out_dir)
    paths[2].write_text(_markdown(result, charts))
    paths[3].write_text(_html(result, charts))
    if res.scenario.faults.active:
        paths.append(write_schedule(res, out_dir / "failures.json", result))
    return paths + [out_dir / "pages_held.csv", out_dir / "isl_load.csv",
                    out_dir / "isl_utilisation.csv"] + charts
