"""`satpage population ...`: gridded population, footprints, clients (issue 6).

- ``satpage population --lat DEG --lon DEG --radius-km R [--source SPEC] [--json]``:
  the population of the cells whose centres lie within R km (great circle).
- ``satpage population footprint``: Fongen's Fig. 2, the population inside one
  satellite's footprint over consecutive orbits (CSV + PNG).
- ``satpage population map``: Fongen's Fig. 1, sub-satellite points and
  footprints over the population grid (PNG).
- ``satpage population clients``: population-weighted clients to GeoJSON,
  GeoParquet or GeoPackage.
- ``satpage population load``: footprint population of every satellite at every
  time step (the simulation's load measure) to .npz or .csv.

A thin layer: the computation is orbit_model's (PopulationGrid, footprint_load,
place_clients); this module parses options, draws and writes files.
"""

from __future__ import annotations

import csv
import dataclasses
import math
from pathlib import Path
from typing import Annotated

import numpy as np
import typer

from satpage.console import fail, print_json, stdout

app = typer.Typer(
    help="Gridded population (GPW v4): circles, satellite footprints (Fongen Fig. 1 and 2), "
         "population-weighted clients.",
    invoke_without_command=True,
)

DEFAULT_CONSTELLATION = "walker-star:150/10/1:500:87"   # docs/conventions.md
DEFAULT_START = "2023-06-01T00:00:00Z"                   # the scenarios' default epoch
DEFAULT_OUT = Path("out/population")

SOURCE_HELP = "population source: 'default' (embedded GPW v4.11 2020, 30') or 'gpw:PATH'"
NS_PER_S = 1_000_000_000


def _grid(source: str):
    from orbit_model import PopulationGrid

    try:
        return PopulationGrid.from_spec(source)
    except (ValueError, OSError) as exc:
        fail(str(exc))


def _constellation(spec: str, start: str):
    from orbit_model import Constellation

    try:
        return Constellation.from_spec(spec, epoch=start)
    except (ValueError, OSError) as exc:
        fail(str(exc))


# ---- satpage population (the circle) -----------------------------------------------

@app.callback()
def population(
    ctx: typer.Context,
    lat: float | None = typer.Option(None, "--lat", help="circle centre latitude, degrees"),
    lon: float | None = typer.Option(None, "--lon", help="circle centre longitude, degrees"),
    radius_km: float | None = typer.Option(None, "--radius-km",
                                           help="great-circle radius, km"),
    source: str = typer.Option("default", "--source", help=SOURCE_HELP),
    as_json: bool = typer.Option(False, "--json", help="print one JSON object"),
) -> None:
    """Population inside a circle on the Earth (the sum of the cells whose centres fall
    inside it), or one of the subcommands below."""
    if ctx.invoked_subcommand is not None:
        if lat is not None or lon is not None or radius_km is not None:
            fail("--lat/--lon/--radius-km go without a subcommand "
                 f"(got them with '{ctx.invoked_subcommand}')")
        if as_json or source != "default":
            fail(f"put --json and --source after the subcommand: "
                 f"satpage population {ctx.invoked_subcommand} --source ... --json")
        return
    if lat is None and lon is None and radius_km is None:
        typer.echo(ctx.get_help())
        raise typer.Exit(0)
    missing = [name for name, v in (("--lat", lat), ("--lon", lon), ("--radius-km", radius_km))
               if v is None]
    if missing:
        fail(f"missing {', '.join(missing)} (a circle needs --lat, --lon and --radius-km)")
    grid = _grid(source)
    from orbit_model.constants import EARTH_RADIUS_KM

    try:
        value = grid.population_in_circle(lat, lon, radius_km)
    except ValueError as exc:
        fail(str(exc))
    result = {
        "population": value,
        "lat_deg": lat,
        "lon_deg": lon,
        "radius_km": radius_km,
        "share_of_grid_total": value / grid.total if grid.total else 0.0,
        "grid_total": grid.total,
        "source": source,
        "cell_size_deg": grid.cell_size_deg,
        "earth_radius_km": EARTH_RADIUS_KM,
    }
    if as_json:
        print_json(result)
    else:
        stdout.print(f"population within {radius_km:,g} km of ({lat:g}, {lon:g}): "
                     f"[bold]{value:,.0f}[/] ({100 * result['share_of_grid_total']:.3g} % of "
                     f"{grid.total:,.0f}; source {source})", highlight=False)


# ---- Fig. 2: one satellite's footprint population over three orbits ------------------

@app.command("footprint")
def footprint(
    constellation: str = typer.Option(DEFAULT_CONSTELLATION, "--constellation",
                                      help="walker:T/P/F:ALT_KM:INC_DEG, walker-star:... "
                                           "or tle:PATH"),
    satellite: int = typer.Option(0, "--satellite", help="satellite index (p*S + k)"),
    start: str = typer.Option(DEFAULT_START, "--start", help="scenario epoch, ISO 8601"),
    orbits: float = typer.Option(3.0, "--orbits", help="how many orbital periods"),
    step_s: float = typer.Option(10.0, "--step-s", help="time step, seconds"),
    min_elevation: float = typer.Option(10.0, "--min-elevation",
                                        help="minimum elevation, degrees (sets the footprint)"),
    source: str = typer.Option("default", "--source", help=SOURCE_HELP),
    out_dir: Annotated[Path, typer.Option("--out-dir", help="folder for the CSV and PNG")
                       ] = DEFAULT_OUT,
    as_json: bool = typer.Option(False, "--json", help="print a JSON summary"),
) -> None:
    """Fongen Fig. 2: population inside one satellite's footprint over consecutive orbits
    (fig2-footprint-population.csv and .png)."""
    from orbit_model import footprint_load, footprint_radius_km

    if not (orbits > 0 and step_s > 0):
        fail(f"--orbits and --step-s must be positive, got {orbits:g} and {step_s:g}")
    cons = _constellation(constellation, start)
    if not 0 <= satellite < cons.n_satellites:
        fail(f"--satellite {satellite} is not in 0..{cons.n_satellites - 1} ({cons.spec})")
    grid = _grid(source)
    one = _one_satellite(cons, satellite)
    period_s = 2 * math.pi / one.satrecs[0].no_kozai * 60.0     # no_kozai: rad/min
    step_ns = int(round(step_s * NS_PER_S))
    t_ns = np.arange(0, int(orbits * period_s * NS_PER_S) + 1, step_ns, dtype=np.int64)
    try:
        load = footprint_load(grid, one, t_ns, min_elevation)
    except ValueError as exc:
        fail(str(exc))
    pop = load.population[0]
    out_dir.mkdir(parents=True, exist_ok=True)
    csv_path = out_dir / "fig2-footprint-population.csv"
    png_path = out_dir / "fig2-footprint-population.png"
    with open(csv_path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["t_s", "sub_lat_deg", "sub_lon_deg", "footprint_population"])
        for t, la, lo, p in zip(t_ns / NS_PER_S, load.sub_lat_deg[0], load.sub_lon_deg[0], pop,
                                strict=True):
            w.writerow([f"{t:g}", f"{la:.4f}", f"{lo:.4f}", f"{p:.0f}"])
    altitude = cons.shells[int(cons.shell[satellite])].altitude_km
    radius = footprint_radius_km(altitude, min_elevation)
    title = (f"Footprint population, satellite {satellite} of {cons.spec}\n"
             f"{altitude:g} km, min. elevation {min_elevation:g} deg "
             f"(footprint radius {radius:,.0f} km), start {start}, GPW v4 ({source})")
    _plot_fig2(png_path, t_ns / NS_PER_S, pop, period_s, title)
    summary = {
        "csv": str(csv_path), "png": str(png_path), "constellation": cons.spec,
        "satellite": satellite, "start": start, "period_s": period_s, "orbits": orbits,
        "step_s": step_s, "min_elevation_deg": min_elevation, "footprint_radius_km": radius,
        "samples": int(t_ns.size), "max_population": float(np.nanmax(pop)),
        "mean_population": float(np.nanmean(pop)), "min_population": float(np.nanmin(pop)),
        "source": source,
    }
    if as_json:
        print_json(summary)
    else:
        stdout.print(f"wrote {csv_path} and {png_path}: {t_ns.size} samples over {orbits:g} "
                     f"orbits of {period_s / 60:.1f} min; footprint population max "
                     f"{summary['max_population']:,.0f}, mean {summary['mean_population']:,.0f}",
                     highlight=False)


def _one_satellite(cons, index: int):
    """The constellation reduced to one satellite (propagate only what is plotted)."""
    keep = slice(index, index + 1)
    return dataclasses.replace(
        cons, satrecs=cons.satrecs[keep], names=cons.names[keep], shell=cons.shell[keep],
        plane=cons.plane[keep], slot=cons.slot[keep],
        arg_latitude_deg=cons.arg_latitude_deg[keep], _array=[])


def _figure(width_in: float, height_in: float):
    from matplotlib.figure import Figure  # no pyplot: no global state, no GUI backend

    return Figure(figsize=(width_in, height_in), dpi=120, layout="constrained")


def _plot_fig2(path: Path, t_s: np.ndarray, population: np.ndarray, period_s: float,
               title: str) -> None:
    fig = _figure(9, 4)
    ax = fig.add_subplot()
    ax.plot(t_s / 60.0, population / 1e6, lw=1.0, color="tab:blue")
    for k in range(1, int(t_s[-1] // period_s) + 1):
        ax.axvline(k * period_s / 60.0, color="0.6", lw=0.8, ls="--")
    ax.set_xlabel("time since start (min); dashed: orbit boundaries")
    ax.set_ylabel("population in footprint (millions)")
    ax.set_xlim(0, t_s[-1] / 60.0)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.set_title(title, fontsize=9)
    fig.savefig(path)


# ---- Fig. 1: sub-satellite points and footprints over the population grid ------------

@app.command("map")
def population_map(
    constellation: str = typer.Option(DEFAULT_CONSTELLATION, "--constellation",
                                      help="walker:T/P/F:ALT_KM:INC_DEG, walker-star:... "
                                           "or tle:PATH"),
    start: str = typer.Option(DEFAULT_START, "--start", help="scenario epoch, ISO 8601"),
    at_s: float = typer.Option(0.0, "--at-s", help="seconds after the start to draw"),
    min_elevation: float = typer.Option(10.0, "--min-elevation",
                                        help="minimum elevation, degrees (sets the footprint)"),
    source: str = typer.Option("default", "--source", help=SOURCE_HELP),
    png: Annotated[Path, typer.Option("--png", help="output PNG")
                   ] = DEFAULT_OUT / "fig1-footprints.png",
    as_json: bool = typer.Option(False, "--json", help="print a JSON summary"),
) -> None:
    """Fongen Fig. 1: the constellation's sub-satellite points and footprints over the
    population grid (the grid draws the continents)."""
    from orbit_model import footprint_load

    cons = _constellation(constellation, start)
    grid = _grid(source)
    t_ns = np.array([int(round(at_s * NS_PER_S))], dtype=np.int64)
    try:
        load = footprint_load(grid, cons, t_ns, min_elevation)
    except ValueError as exc:
        fail(str(exc))
    png.parent.mkdir(parents=True, exist_ok=True)
    title = (f"{cons.spec}: {cons.n_satellites} sub-satellite points and footprints "
             f"(min. elevation {min_elevation:g} deg) at {start} + {at_s:g} s\n"
             f"backdrop: GPW v4.11 2020 population per cell ({source})")
    _plot_fig1(png, grid, load, title)
    pop = load.population[:, 0]
    covered = _covered_population(grid, load)
    summary = {
        "png": str(png), "constellation": cons.spec, "satellites": cons.n_satellites,
        "start": start, "at_s": at_s, "min_elevation_deg": min_elevation,
        "footprint_population_sum": float(np.nansum(pop)),
        "covered_population": covered,
        "covered_share": covered / grid.total if grid.total else 0.0,
        "source": source,
    }
    if as_json:
        print_json(summary)
    else:
        stdout.print(f"wrote {png}: {cons.n_satellites} footprints; "
                     f"{100 * summary['covered_share']:.1f} % of the population is inside at "
                     "least one", highlight=False)


def _covered_population(grid, load) -> float:
    """Population of the cells whose centres are inside at least one footprint (the
    same cap rule as ``population_in_cap``: angle to the centre <= footprint angle)."""
    lat_c = np.radians(grid.lat_centres_deg)[:, None]
    lon_c = np.radians(grid.lon_centres_deg)[None, :]
    cell = np.stack(np.broadcast_arrays(np.cos(lat_c) * np.cos(lon_c),
                                        np.cos(lat_c) * np.sin(lon_c), np.sin(lat_c)), axis=-1)
    covered = np.zeros(grid.counts.shape, dtype=bool)
    for la, lo, ang in zip(load.sub_lat_deg[:, 0], load.sub_lon_deg[:, 0],
                           load.central_angle_rad, strict=True):
        if not (np.isfinite(la) and np.isfinite(lo)):
            continue
        p, q = np.radians(la), np.radians(lo)
        centre = np.array([np.cos(p) * np.cos(q), np.cos(p) * np.sin(q), np.sin(p)])
        covered |= cell @ centre >= np.cos(ang)
    return float(grid.counts[covered].sum())


def _plot_fig1(path: Path, grid, load, title: str) -> None:
    from matplotlib.colors import LogNorm

    from orbit_model import footprint_outline_deg

    fig = _figure(12, 6.4)
    ax = fig.add_subplot()
    ax.set_facecolor("#dfe9f3")                     # no data (water)
    counts = np.ma.masked_invalid(np.where(grid.population > 0, grid.population, np.nan))
    image = ax.imshow(counts, extent=(grid.west_deg, grid.west_deg + grid.n_cols *
                                      grid.cell_size_deg, grid.south_deg, grid.north_deg),
                      origin="upper", cmap="YlOrBr", norm=LogNorm(vmin=1e2, vmax=counts.max()),
                      interpolation="nearest")
    fig.colorbar(image, ax=ax, shrink=0.7, label="people per cell")
    lat, lon = footprint_outline_deg(load.sub_lat_deg[:, 0], load.sub_lon_deg[:, 0],
                                     load.central_angle_rad, 145)
    alpha = float(np.clip(100.0 / max(len(lat), 1), 0.2, 0.8))   # dense catalogues stay legible
    for la, lo in zip(lat, lon, strict=True):
        if not np.all(np.isfinite(la)):
            continue
        # break the ring where it crosses the antimeridian
        jump = np.flatnonzero(np.abs(np.diff(lo)) > 180.0) + 1
        ax.plot(np.insert(lo, jump, np.nan), np.insert(la, jump, np.nan),
                color="tab:blue", lw=0.7, alpha=alpha)
    ax.scatter(load.sub_lon_deg[:, 0], load.sub_lat_deg[:, 0], s=8, color="navy", zorder=3,
               label="sub-satellite point")
    ax.set_xlim(-180, 180)
    ax.set_ylim(-90, 90)
    ax.set_xticks(range(-180, 181, 60))
    ax.set_yticks(range(-90, 91, 30))
    ax.set_xlabel("longitude (deg)")
    ax.set_ylabel("latitude (deg)")
    ax.legend(loc="lower left", fontsize=8)
    ax.set_title(title, fontsize=9)
    fig.savefig(path)


# ---- clients -------------------------------------------------------------------------

@app.command("clients")
def clients(
    n: int = typer.Option(..., "--n", help="number of clients"),
    seed: int = typer.Option(0, "--seed", help="seed of the numpy Generator"),
    region: Annotated[Path | None, typer.Option(
        "--region", help="polygon file (GeoJSON, GeoPackage) to stay inside")] = None,
    source: str = typer.Option("default", "--source", help=SOURCE_HELP),
    out: Annotated[Path, typer.Option(
        "--out", help="output: .geojson, .parquet (GeoParquet) or .gpkg")
    ] = DEFAULT_OUT / "clients.geojson",
    as_json: bool = typer.Option(False, "--json", help="print a JSON summary"),
) -> None:
    """Place clients with probability proportional to population (a cell, then a uniform
    point in it) and write them for GIS tools."""
    from orbit_model import place_clients, population_in_region
    from orbit_model.io import read_region, write_clients

    grid = _grid(source)
    try:
        shape = read_region(region) if region is not None else None
        placed = place_clients(grid, n, np.random.default_rng(seed), region=shape)
        out.parent.mkdir(parents=True, exist_ok=True)
        write_clients(placed, out)
    except (ValueError, OSError) as exc:
        fail(str(exc))
    summary = {
        "clients": len(placed), "out": str(out), "seed": seed, "source": source,
        "region": str(region) if region else None,
        "population": population_in_region(grid, shape) if shape is not None else grid.total,
    }
    if as_json:
        print_json(summary)
    else:
        stdout.print(f"wrote {len(placed):,} clients to {out} (seed {seed}, population "
                     f"{summary['population']:,.0f})", highlight=False)


# ---- the load measure for the simulation --------------------------------------------

@app.command("load")
def load_cmd(
    constellation: str = typer.Option(DEFAULT_CONSTELLATION, "--constellation",
                                      help="walker:T/P/F:ALT_KM:INC_DEG, walker-star:... "
                                           "or tle:PATH"),
    start: str = typer.Option(DEFAULT_START, "--start", help="scenario epoch, ISO 8601"),
    hours: float = typer.Option(24.0, "--hours", help="span, hours"),
    step_s: float = typer.Option(10.0, "--step-s", help="time step, seconds"),
    min_elevation: float = typer.Option(10.0, "--min-elevation",
                                        help="minimum elevation, degrees (sets the footprint)"),
    source: str = typer.Option("default", "--source", help=SOURCE_HELP),
    out: Annotated[Path, typer.Option(
        "--out", help="output: .npz (t_ns, population[n_sats, n_times]) or .csv")
    ] = DEFAULT_OUT / "footprint-load.npz",
    as_json: bool = typer.Option(False, "--json", help="print a JSON summary"),
) -> None:
    """Footprint population of every satellite at every time step (a load measure)."""
    from orbit_model import footprint_load

    if not (hours > 0 and step_s > 0):
        fail(f"--hours and --step-s must be positive, got {hours:g} and {step_s:g}")
    if out.suffix.lower() not in (".npz", ".csv"):
        fail(f"{out}: want a .npz or .csv output")
    cons = _constellation(constellation, start)
    grid = _grid(source)
    t_ns = np.arange(0, int(hours * 3600 * NS_PER_S) + 1, int(round(step_s * NS_PER_S)),
                     dtype=np.int64)
    try:
        load = footprint_load(grid, cons, t_ns, min_elevation)
    except ValueError as exc:
        fail(str(exc))
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.suffix.lower() == ".npz":
        np.savez_compressed(out, t_ns=load.t_ns, population=load.population,
                            central_angle_rad=load.central_angle_rad,
                            constellation=np.str_(cons.spec), start=np.str_(start),
                            source=np.str_(source))
    else:
        with open(out, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["t_s", *[f"sat{i}" for i in range(cons.n_satellites)]])
            for j, t in enumerate(load.t_ns / NS_PER_S):
                w.writerow([f"{t:g}", *(f"{v:.0f}" for v in load.population[:, j])])
    summary = {"out": str(out), "constellation": cons.spec, "satellites": cons.n_satellites,
               "times": int(t_ns.size), "step_s": step_s,
               "mean_population": float(np.nanmean(load.population)),
               "max_population": float(np.nanmax(load.population)), "source": source}
    if as_json:
        print_json(summary)
    else:
        stdout.print(f"wrote {out}: {cons.n_satellites} satellites x {t_ns.size} times, mean "
                     f"footprint population {summary['mean_population']:,.0f}", highlight=False)
