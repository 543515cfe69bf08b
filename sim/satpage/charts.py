"""Charts of a comparison run (matplotlib, Agg backend, PNG files).

Each function takes a `satpage.simulate.RunResult` (or, for sweeps, a table)
and a path, and writes one PNG. No network, no basemap: the population grid
itself draws the continents.
"""

from __future__ import annotations

import logging
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.colors import LogNorm  # noqa: E402

from satpage.costs import LATENCY_BIN_MS  # noqa: E402

__all__ = ["cost_per_strategy", "fault_latency_cdf", "isl_load_heatmap", "pages_held",
           "clients_map", "sweep_chart", "write_all"]

log = logging.getLogger(__name__)

_COLOURS = ["#4477aa", "#ee6677", "#228833", "#ccbb44", "#66ccee", "#aa3377", "#bbbbbb"]


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def cost_per_strategy(res, path: Path) -> Path:
    """Bars: page movements and page-hops per strategy (log scale: ground-store dwarfs)."""
    s = res.summaries()
    names = list(s)
    moves = np.array([s[n]["page_moves"] for n in names], float)
    hops = np.array([s[n]["page_hops"] for n in names], float)
    x = np.arange(len(names))
    fig, ax = plt.subplots(figsize=(8, 4.5))
    ax.bar(x - 0.2, moves, 0.4, label="page movements", color=_COLOURS[0])
    ax.bar(x + 0.2, hops, 0.4, label="page-hops (ISL hops of each movement)", color=_COLOURS[1])
    ax.set_xticks(x, names)
    ax.set_yscale("log")
    ax.set_ylabel("count over the run")
    ax.set_title(f"Cost per strategy: {res.scenario.name} "
                 f"({res.scenario.sessions.count} sessions, seed {res.scenario.seed})")
    ax.legend()
    ax.grid(axis="y", alpha=0.3)
    return _save(fig, path)


def fault_latency_cdf(res, path: Path) -> Path:
    """Empirical CDF of page-fault latency (round trip) per strategy."""
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for i, (name, acc) in enumerate(res.costs.items()):
        h = acc.latency_hist
        n = h.sum()
        if n == 0:
            ax.plot([], [], label=f"{name} (no faults)", color=_COLOURS[i % 7])
            continue
        last = int(np.flatnonzero(h)[-1]) + 2
        x = np.arange(last) * LATENCY_BIN_MS + LATENCY_BIN_MS
        ax.step(x, np.cumsum(h[:last]) / n, where="post", label=name, color=_COLOURS[i % 7])
    ax.set_xlabel("page-fault latency, round trip (ms)")
    ax.set_ylabel("fraction of faults")
    ax.set_xscale("log")
    ax.set_xlim(left=1.0)
    ax.set_title("Fault latency CDF (ISL path delay + per-hop processing, there and back)")
    ax.grid(alpha=0.3)
    ax.legend()
    return _save(fig, path)


def isl_load_heatmap(res, path: Path) -> Path:
    """Bytes per ISL over time, one panel per strategy (links ordered by satellite)."""
    exists = res.world.topology.link_exists()
    names = list(res.costs)
    fig, axes = plt.subplots(len(names), 1, figsize=(9, 1.7 * len(names) + 1.2),
                             sharex=True, squeeze=False)
    dur_h = res.scenario.time.duration_s / 3600
    page_bytes = res.scenario.workload.page_bytes
    vmax = max(float(acc.link_load[:, exists].max(initial=0)) for acc in res.costs.values())
    # log colour scale: ground-store loads links 10x more than the paging strategies
    norm = LogNorm(vmin=page_bytes, vmax=max(vmax * page_bytes, 2.0 * page_bytes))
    im = None
    for ax, name in zip(axes[:, 0], names, strict=True):
        load = res.costs[name].link_load[:, exists].T.astype(float) * page_bytes
        im = ax.imshow(np.ma.masked_less_equal(load, 0), aspect="auto", origin="lower",
                       cmap="magma", extent=(0, dur_h, 0, load.shape[0]), norm=norm,
                       interpolation="nearest")
        ax.set_facecolor("black")
        ax.set_ylabel(f"{name}\nISL #", fontsize=8)
    axes[-1, 0].set_xlabel("time from epoch (h)")
    fig.suptitle("Load per ISL over time (bytes per time bin, log scale)")
    if im is not None:
        fig.colorbar(im, ax=axes[:, 0].tolist(), label="bytes")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def pages_held(res, path: Path) -> Path:
    """Pages held per satellite over time: max over satellites (solid) and mean (dashed),
    stale trail included."""
    fig, ax = plt.subplots(figsize=(8, 4.5))
    sc = res.scenario
    bins = sc.network.load_bins
    t_h = (np.arange(bins) + 1) * sc.time.duration_s / bins / 3600
    for i, (name, acc) in enumerate(res.costs.items()):
        held = acc.held_series()
        c = _COLOURS[i % 7]
        ax.plot(t_h, held.max(axis=0), color=c, label=f"{name} (max)")
        ax.plot(t_h, held.mean(axis=0), color=c, ls="--", lw=1)
    ax.set_xlabel("time from epoch (h)")
    ax.set_ylabel("pages held by one satellite")
    ax.set_title("Pages held per satellite (solid: busiest satellite, dashed: mean)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return _save(fig, path)


def clients_map(res, path: Path) -> Path:
    """Session clients over the population grid (log colour scale)."""
    fig, ax = plt.subplots(figsize=(10, 5))
    try:
        import orbit_model
        grid = orbit_model.PopulationGrid.from_spec(res.scenario.clients.source)
        counts = np.where(grid.counts > 0, grid.counts, np.nan)
        extent = (grid.west_deg, grid.west_deg + grid.n_cols * grid.cell_size_deg,
                  grid.south_deg, grid.north_deg)
        ax.imshow(np.log10(counts), extent=extent, cmap="Greys", origin="upper",
                  aspect="auto", alpha=0.8)
    except (OSError, ValueError) as exc:
        log.warning("no population backdrop: %s", exc)
    ss = res.world.sessions
    ax.scatter(ss["lon_deg"], ss["lat_deg"], s=3, c=_COLOURS[1], alpha=0.6,
               label=f"{ss.size} session clients")
    sc = res.scenario
    ax.scatter([sc.network.gateway_lon_deg], [sc.network.gateway_lat_deg], marker="*", s=150,
               c=_COLOURS[0], edgecolors="k", label="ground-store gateway")
    ax.set_xlim(-180, 180)
    ax.set_ylim(-90, 90)
    ax.set_xlabel("longitude (deg)")
    ax.set_ylabel("latitude (deg)")
    ax.set_title("Clients on the population backdrop (GPW v4.11 2020, log scale)")
    ax.legend(loc="lower left", fontsize=8)
    return _save(fig, path)


def write_all(res, out_dir: Path) -> list[Path]:
    """Every chart of a comparison run into ``out_dir``; returns the paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    return [
        cost_per_strategy(res, out_dir / "cost_per_strategy.png"),
        fault_latency_cdf(res, out_dir / "fault_latency_cdf.png"),
        isl_load_heatmap(res, out_dir / "isl_load.png"),
        pages_held(res, out_dir / "pages_held.png"),
        clients_map(res, out_dir / "clients.png"),
    ]


def sweep_chart(rows: list[dict], keys: list[str], cost: str, path: Path) -> Path:
    """One cost against the first varied key, one line per strategy (and per value of the
    other varied keys)."""
    fig, ax = plt.subplots(figsize=(7, 4.2))
    x_key = keys[0]
    groups: dict[tuple, dict[str, list]] = {}
    for r in rows:
        g = (r["strategy"],) + tuple(r[k] for k in keys[1:])
        d = groups.setdefault(g, {"x": [], "y": []})
        d["x"].append(r[x_key])
        d["y"].append(r[cost])
    for i, (g, d) in enumerate(sorted(groups.items(), key=lambda kv: str(kv[0]))):
        label = g[0] + "".join(f", {k}={v}" for k, v in zip(keys[1:], g[1:], strict=True))
        xs = d["x"]
        numeric = all(isinstance(v, int | float) for v in xs)
        xv = np.asarray(xs, float) if numeric else np.arange(len(xs))
        order = np.argsort(xv)
        ax.plot(xv[order], np.asarray(d["y"], float)[order], marker="o", label=label,
                color=_COLOURS[i % 7])
        if not numeric:
            ax.set_xticks(np.arange(len(xs)), [str(v) for v in xs], rotation=20, fontsize=7)
    ax.set_xlabel(x_key)
    ax.set_ylabel(cost)
    ax.set_title(f"{cost} against {x_key}")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    return _save(fig, path)
