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

__all__ = ["cost_per_strategy", "fault_latency_cdf", "isl_load_heatmap", "utilisation_map",
           "pages_held",
           "clients_map", "sweep_chart", "write_all", "faults_chart", "sweep_faults_chart"]

log = logging.getLogger(__name__)

# Legends name their place: loc='best' searches the plotted data and warns (an error
# under the tests' filterwarnings) when that takes over a second on a loaded machine.
_COLOURS = ["#4477aa", "#ee6677", "#228833", "#ccbb44", "#66ccee", "#aa3377", "#bbbbbb",
            "#000000", "#994f00", "#6a3d9a"]


_DASHES = ["-", "--", ":", "-."]


def _style(i: int) -> dict:
    """Colour and line style of the i-th strategy: ten colours, then the same colours
    dashed, so an eleventh strategy (a plugin) is told apart from the first."""
    return {"color": _COLOURS[i % len(_COLOURS)],
            "linestyle": _DASHES[(i // len(_COLOURS)) % len(_DASHES)]}


def _legend_outside(ax, n: int, **kw) -> None:
    """The legend right of the axes: with ten or more entries inside it hides lines."""
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0,
              fontsize=8 if n <= 12 else 7, ncol=1 if n <= 24 else 2, **kw)


def _log_x(ax) -> None:
    """The log x axis labelled in engineering notation (200 k, 1 M) at 1, 2 and 5 of each
    decade when it spans up to three, at each decade otherwise: matplotlib's default
    labels minor ticks as well, on top of each other."""
    from matplotlib.ticker import EngFormatter, LogLocator, NullFormatter

    lo, hi = ax.get_xlim()
    decades = np.log10(max(hi, 1e-300) / max(lo, 1e-300))
    axis = ax.xaxis
    axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0) if decades <= 3 else (1.0,)))
    axis.set_major_formatter(EngFormatter(sep=" "))
    axis.set_minor_formatter(NullFormatter())


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def cost_per_strategy(res, path: Path) -> Path:
    """Horizontal bars: page movements and page-hops per strategy (log scale: ground-store
    dwarfs), one row per strategy in report order, so any number of names stays legible."""
    s = res.summaries()
    names = list(s)
    moves = np.array([s[n]["page_moves"] for n in names], float)
    hops = np.array([s[n]["page_hops"] for n in names], float)
    y = np.arange(len(names))
    fig, ax = plt.subplots(figsize=(8, 1.6 + 0.42 * len(names)))
    # log axis: a zero count is drawn as a stub at 0.5, not left out
    ax.barh(y - 0.2, np.maximum(moves, 0.5), 0.4, label="page movements", color=_COLOURS[0])
    ax.barh(y + 0.2, np.maximum(hops, 0.5), 0.4, label="page-hops (ISL hops of each movement)",
            color=_COLOURS[1])
    ax.set_yticks(y, names)
    ax.invert_yaxis()
    ax.set_xscale("log")
    _log_x(ax)
    ax.set_xlabel("count over the run (log scale)")
    ax.set_title(f"Cost per strategy: {res.scenario.name} "
                 f"({res.scenario.sessions.count} sessions, seed {res.scenario.seed})")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.1 - 0.6 / len(names)), ncol=2,
              fontsize=8, frameon=False)
    ax.grid(axis="x", alpha=0.3)
    return _save(fig, path)


def fault_latency_cdf(res, path: Path) -> Path:
    """Empirical CDF of page-fault latency (round trip) per strategy."""
    fig, ax = plt.subplots(figsize=(10, 4.5))
    for i, (name, acc) in enumerate(res.costs.items()):
        h = acc.latency_hist
        n = h.sum()
        if n == 0:
            ax.plot([], [], label=f"{name} (no faults)", **_style(i))
            continue
        last = int(np.flatnonzero(h)[-1]) + 2
        x = np.arange(last) * LATENCY_BIN_MS + LATENCY_BIN_MS
        ax.step(x, np.cumsum(h[:last]) / n, where="post", label=name, **_style(i))
    ax.set_xlabel("page-fault latency, round trip (ms)")
    ax.set_ylabel("fraction of faults")
    ax.set_xscale("log")
    ax.set_xlim(left=1.0)
    ax.set_title("Fault latency CDF (ISL path delay + per-hop processing, there and back)",
                 fontsize=10)
    ax.grid(alpha=0.3)
    _legend_outside(ax, len(res.costs))
    return _save(fig, path)


def isl_load_heatmap(res, path: Path) -> Path:
    """Utilisation of every ISL over time (background plus the strategy's own pages at
    the link rate), one panel per strategy (links ordered by satellite); log colours."""
    exists = res.world.topology.link_exists()
    names = list(res.costs)
    fig, axes = plt.subplots(len(names), 1, figsize=(9, 1.2 * len(names) + 1.2),
                             sharex=True, squeeze=False, layout="constrained")
    dur_h = res.scenario.time.duration_s / 3600
    utils = {n: res.costs[n].utilisation(res.world.links, exists) for n in names}
    vmax = max(float(u.max(initial=0.0)) for u in utils.values())
    pos = [u[u > 0] for u in utils.values()]
    vmin = min((float(p.min()) for p in pos if p.size), default=1e-9)
    # log colours: own traffic is orders of magnitude below capacity in the default scenario
    norm = LogNorm(vmin=max(vmin, vmax * 1e-6, 1e-12), vmax=max(vmax, 2 * vmin, 1e-11))
    im = None
    for ax, name in zip(axes[:, 0], names, strict=True):
        u = utils[name].T
        im = ax.imshow(np.ma.masked_less_equal(u, 0), aspect="auto", origin="lower",
                       cmap="magma", extent=(0, dur_h, 0, u.shape[0]), norm=norm,
                       interpolation="nearest")
        ax.set_facecolor("black")
        ax.set_ylabel(f"{name}\nISL #", fontsize=7)
    axes[-1, 0].set_xlabel("time from epoch (h)")
    net = res.scenario.network
    fig.suptitle(f"ISL utilisation per time bin ({net.isl_capacity_gbps:g} Gbit/s links, "
                 f"background {net.background_load:g} {net.background_profile}; log scale)")
    if im is not None:
        fig.colorbar(im, ax=axes[:, 0].tolist(), label="utilisation (fraction of capacity)")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _population_backdrop(ax, source: str) -> None:
    try:
        import orbit_model
        grid = orbit_model.PopulationGrid.from_spec(source)
        counts = np.where(grid.counts > 0, grid.counts, np.nan)
        extent = (grid.west_deg, grid.west_deg + grid.n_cols * grid.cell_size_deg,
                  grid.south_deg, grid.north_deg)
        ax.imshow(np.log10(counts), extent=extent, cmap="Greys", origin="upper",
                  aspect="auto", alpha=0.6)
    except (OSError, ValueError) as exc:
        log.warning("no population backdrop: %s", exc)


def utilisation_map(res, path: Path) -> Path:
    """Each strategy's ISLs drawn at their positions on the world map at its busiest time
    bin (the bin where its own pages load the links most), coloured by utilisation."""
    from matplotlib.collections import LineCollection

    w = res.world
    sc = res.scenario
    exists = w.routing.link_exists()
    lo, hi = w.routing.links.endpoints[exists].T     # link id = row (orbit_model)
    names = list(res.costs)
    cols = 2 if len(names) > 1 else 1
    rows = -(-len(names) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(7 * cols, 3.3 * rows + 0.8), squeeze=False,
                             layout="constrained")
    utils = {n: res.costs[n].utilisation(w.links, exists) for n in names}
    vmax = max(float(u.max(initial=0.0)) for u in utils.values())
    pos = [u[u > 0] for u in utils.values()]
    vmin = min((float(p.min()) for p in pos if p.size), default=1e-9)
    norm = LogNorm(vmin=max(vmin, vmax * 1e-6, 1e-12), vmax=max(vmax, 2 * vmin, 1e-11))
    bin_ns = sc.duration_ns / sc.network.load_bins
    lc = None
    for ax, name in zip(axes.flat, names, strict=False):
        own = res.costs[name].link_load[:, exists].sum(axis=1)
        b = int(np.argmax(own))
        t = np.array([int(round((b + 0.5) * bin_ns))], dtype=np.int64)
        p = w.sats.positions_km(t)[:, 0]
        r = np.linalg.norm(p, axis=1)
        lat = np.degrees(np.arcsin(np.clip(p[:, 2] / np.where(r > 0, r, 1), -1, 1)))
        lon = np.degrees(np.arctan2(p[:, 1], p[:, 0]))
        seg = np.stack([np.stack([lon[lo], lat[lo]], 1), np.stack([lon[hi], lat[hi]], 1)], 1)
        u = utils[name][b]
        keep = (np.abs(lon[lo] - lon[hi]) < 180) & np.isfinite(seg).all(axis=(1, 2))
        order = np.argsort(u[keep])                  # the hottest links drawn last, on top
        _population_backdrop(ax, sc.clients.source)
        uk = u[keep][order]
        hot = (uk > 0) & (uk >= np.percentile(u, 90))
        lc = LineCollection(seg[keep][order], cmap="inferno", norm=norm,
                            linewidths=0.6 + 2.4 * hot)
        lc.set_array(np.maximum(uk, norm.vmin))
        ax.add_collection(lc)
        ax.set_xlim(-180, 180)
        ax.set_ylim(-90, 90)
        ax.set_title(f"{name}: bin {b} ({(b + 0.5) * bin_ns / 3.6e12:.2f} h), "
                     f"max {u.max(initial=0):.2g}", fontsize=8)
        ax.tick_params(labelsize=6)
    for ax in list(axes.flat)[len(names):]:
        ax.set_visible(False)
    fig.suptitle("ISL utilisation on the map at each strategy's busiest time bin "
                 "(thick: top 10 % of its links)")
    if lc is not None:
        fig.colorbar(lc, ax=axes.ravel().tolist(), label="utilisation", shrink=0.6)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def pages_held(res, path: Path) -> Path:
    """Pages held per satellite over time: max over satellites (solid) and mean (dashed),
    stale trail included."""
    sc = res.scenario
    bins = sc.network.load_bins
    t_h = (np.arange(bins) + 1) * sc.time.duration_s / bins / 3600
    # two panels, busiest satellite above and the mean below, each line one strategy's
    # style (a mean dashed beside a max of the same colour would be an eleventh's twin)
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(10, 6.5), sharex=True)
    for i, (name, acc) in enumerate(res.costs.items()):
        held = acc.held_series()
        a1.plot(t_h, held.max(axis=0), label=name, **_style(i))
        a2.plot(t_h, held.mean(axis=0), **_style(i))
    a1.set_ylabel("busiest satellite")
    a2.set_ylabel("mean over satellites")
    a2.set_xlabel("time from epoch (h)")
    a1.set_title("Pages held per satellite, stale trail included")
    for ax in (a1, a2):
        ax.grid(alpha=0.3)
    _legend_outside(a1, len(res.costs))
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
        utilisation_map(res, out_dir / "isl_utilisation_map.png"),
        pages_held(res, out_dir / "pages_held.png"),
        clients_map(res, out_dir / "clients.png"),
    ] + ([faults_chart(res, out_dir / "faults.png")] if res.scenario.faults.active else [])


def faults_chart(res, path: Path) -> Path:
    """Horizontal bars per strategy: pages lost and sessions hit (left), replication
    page-hops beside the primary page-hops (right): what each strategy risks and what R
    costs. One row per strategy, names once on the left."""
    s = res.summaries()
    names = list(s)
    y = np.arange(len(names))
    f = res.scenario.faults
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 2.0 + 0.42 * len(names)), sharey=True)
    a1.barh(y - 0.2, [s[n]["pages_lost"] for n in names], 0.4, label="pages lost",
            color=_COLOURS[1])
    a1.barh(y + 0.2, [s[n]["sessions_hit"] for n in names], 0.4,
            label="sessions hit (a page or the page table lost)", color=_COLOURS[0])
    a1.set_yticks(y, names)
    a1.invert_yaxis()
    worst = max([s[n]["pages_lost"] for n in names] + [s[n]["sessions_hit"] for n in names])
    a1.set_xlim(0, max(worst * 1.08, 1))      # nothing lost: an axis from 0, not around it
    a1.set_xlabel("count over the run")
    a1.set_title(f"Losses: {res.world.failures.n_failures} satellite failures, R = {f.replicas}",
                 fontsize=10)
    a1.legend(loc="upper left", bbox_to_anchor=(0.0, -0.12 - 0.3 / len(names)), fontsize=8,
              frameon=False)
    a1.grid(axis="x", alpha=0.3)
    a2.barh(y - 0.2, [max(s[n]["page_hops"], 0.5) for n in names], 0.4,
            label="primary page-hops", color=_COLOURS[2])
    a2.barh(y + 0.2, [max(s[n]["replication_page_hops"], 0.5) for n in names], 0.4,
            label="replication page-hops (R-1 copies of stores and writes, re-replication)",
            color=_COLOURS[3])
    a2.set_xscale("log")
    _log_x(a2)
    a2.set_xlabel("page-hops (log scale)")
    a2.set_title("Protection cost", fontsize=10)
    a2.legend(loc="upper left", bbox_to_anchor=(0.0, -0.12 - 0.3 / len(names)), fontsize=8,
              frameon=False)
    a2.grid(axis="x", alpha=0.3)
    return _save(fig, path)


def sweep_faults_chart(rows: list[dict], path: Path, x_key: str = "faults.rate_per_sat_day",
                       r_key: str = "faults.replicas") -> Path:
    """Pages lost against protection cost (replication page-hops): one panel per strategy,
    one line per R through the failure rates (marker labels: the rate)."""
    names = list(dict.fromkeys(r["strategy"] for r in rows))
    cols = min(5, len(names))
    nrows = (len(names) + cols - 1) // cols
    fig, axes = plt.subplots(nrows, cols, figsize=(3.2 * cols, 3.0 * nrows), squeeze=False)
    for ax, name in zip(axes.flat, names, strict=False):
        mine = [r for r in rows if r["strategy"] == name]
        for i, rep in enumerate(sorted({r.get(r_key, 1) for r in mine})):
            pts = sorted((r for r in mine if r.get(r_key, 1) == rep),
                         key=lambda r: r.get(x_key, 0))
            xs = np.array([r["replication_page_hops"] for r in pts], float) / 1e6
            ys = np.array([r["pages_lost"] for r in pts], float)
            ax.plot(xs, ys, marker="o", color=_COLOURS[i], label=f"R = {rep}")
            for r, xv, yv in zip(pts, xs, ys, strict=True):
                ax.annotate(f"{r.get(x_key, '')}", (xv, yv), fontsize=6,
                            xytext=(3, 2), textcoords="offset points")
        ax.set_xlim(left=-0.5)
        ax.set_yscale("symlog", linthresh=1)
        ax.set_ylim(0, max(max(r["pages_lost"] for r in mine) * 5, 10))
        ax.set_title(name, fontsize=9)
        ax.grid(alpha=0.3)
        ax.tick_params(labelsize=7)
    for ax in axes.flat[len(names):]:
        ax.axis("off")
    axes[0, 0].legend(loc="upper left", fontsize=7)
    fig.supxlabel("replication page-hops, millions (the protection cost; 0 at R = 1)")
    fig.supylabel("pages lost (symmetric log: 0, 1, 10, ...)")
    fig.suptitle(f"Pages lost against protection cost, points labelled by {x_key}",
                 fontsize=10)
    return _save(fig, path)


def sweep_chart(rows: list[dict], keys: list[str], cost: str, path: Path) -> Path:
    """One cost against the first varied key, one line per strategy (and per value of the
    other varied keys)."""
    fig, ax = plt.subplots(figsize=(10, 4.6))
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
                **_style(i))
        if not numeric:
            ax.set_xticks(np.arange(len(xs)), [str(v) for v in xs], rotation=20, fontsize=7)
    ax.set_xlabel(x_key)
    ax.set_ylabel(cost)
    ax.set_title(f"{cost} against {x_key}")
    ax.grid(alpha=0.3)
    _legend_outside(ax, len(groups))
    return _save(fig, path)
