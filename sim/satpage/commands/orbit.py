"""`satpage orbit ...`: passes, handover schedules and ISL routes (issue 5).

- ``satpage orbit passes``: passes of every satellite over a place, refined below 1 s.
- ``satpage orbit handovers``: the serving satellite over time for a place and a policy.
- ``satpage orbit isl``: ISL hops and delay between two satellites at a time.
- ``satpage orbit isl-vectors``: write the shared +Grid test vectors (for the Go daemon).

A thin layer over orbit_model: the scenario epoch is ``--start``; times in the
output are seconds from it.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from satpage.console import fail, print_json, stdout

app = typer.Typer(help="Orbits: passes over a place, handover schedules, ISL hops and delay.",
                  no_args_is_help=True)

DEFAULT_CONSTELLATION = "walker-star:150/10/1:500:87"  # docs/conventions.md (the paper's 150 at 500 km)
DEFAULT_START = "2022-09-14T00:00:00Z"  # the date of the TLE catalogue in data/tle
NS_PER_S = 1_000_000_000

CONSTELLATION_HELP = ("walker:T/P/F:ALT_KM:INC_DEG, walker-star:T/P/F:ALT_KM:INC_DEG or tle:PATH "
                      "(several joined with '+'), or a name: starlink-gen1 (five shells, 4,408 "
                      "satellites; docs/orbit-model.md)")


def _setup(spec: str, start: str, hours: float | None = None):
    from orbit_model import Constellation, parse_epoch

    try:
        epoch = parse_epoch(start)
        if hours is not None and not 0 < hours <= 24 * 366:
            raise ValueError(f"--hours {hours} must be above 0 and at most a year")
        return epoch, Constellation.from_spec(spec, epoch=epoch)
    except (ValueError, OSError) as exc:
        fail(str(exc))


def _iso(epoch: dt.datetime, t_ns: int) -> str:
    return (epoch + dt.timedelta(microseconds=int(t_ns) // 1000)).strftime("%m-%d %H:%M:%S")


@app.command("passes")
def passes(
    constellation: str = typer.Option(DEFAULT_CONSTELLATION, "--constellation", help=CONSTELLATION_HELP),
    lat: float = typer.Option(..., "--lat", help="latitude, degrees (WGS84)"),
    lon: float = typer.Option(..., "--lon", help="longitude, degrees"),
    start: str = typer.Option(DEFAULT_START, "--start", help="scenario epoch, ISO 8601 (UTC)"),
    hours: float = typer.Option(24.0, "--hours", help="length of the window"),
    min_elevation: float = typer.Option(10.0, "--min-elevation", help="minimum elevation, degrees"),
    step_s: float = typer.Option(10.0, "--step-s", help="sampling step before refinement, s"),
    as_json: bool = typer.Option(False, "--json", help="print one JSON object"),
) -> None:
    """Passes of every satellite over a place: rise, culmination, set, maximum elevation."""
    from orbit_model import find_passes

    epoch, const = _setup(constellation, start, hours)
    duration_ns = int(round(hours * 3600 * NS_PER_S))
    try:
        found = find_passes(const, lat, lon, duration_ns, min_elevation_deg=min_elevation,
                            step_ns=int(round(step_s * NS_PER_S)))
    except ValueError as exc:
        fail(str(exc))
    if as_json:
        print_json({"constellation": const.spec, "start": epoch.isoformat(), "hours": hours,
                    "lat_deg": lat, "lon_deg": lon, "min_elevation_deg": min_elevation,
                    "passes": [{"satellite": int(p["satellite"]), "rise_s": p["rise_ns"] / NS_PER_S,
                                "culmination_s": p["culmination_ns"] / NS_PER_S,
                                "set_s": p["set_ns"] / NS_PER_S,
                                "max_elevation_deg": round(float(p["max_elevation_deg"]), 4)}
                               for p in found]})
        return
    table = Table(title=f"{len(found)} passes over {lat:g}, {lon:g} above {min_elevation:g} deg "
                        f"({const.spec}, {hours:g} h from {epoch.isoformat()})")
    for column in ("satellite", "name", "rise UTC", "culmination", "set", "max el (deg)"):
        table.add_column(column, justify="right" if column in ("satellite", "max el (deg)") else "left")
    for p in found:
        i = int(p["satellite"])
        table.add_row(str(i), const.names[i], _iso(epoch, p["rise_ns"]), _iso(epoch, p["culmination_ns"]),
                      _iso(epoch, p["set_ns"]), f"{p['max_elevation_deg']:.2f}")
    stdout.print(table)


@app.command("handovers")
def handovers(
    constellation: str = typer.Option(DEFAULT_CONSTELLATION, "--constellation", help=CONSTELLATION_HELP),
    lat: float = typer.Option(..., "--lat", help="latitude, degrees (WGS84)"),
    lon: float = typer.Option(..., "--lon", help="longitude, degrees"),
    start: str = typer.Option(DEFAULT_START, "--start", help="scenario epoch, ISO 8601 (UTC)"),
    hours: float = typer.Option(24.0, "--hours", help="length of the window"),
    min_elevation: float = typer.Option(10.0, "--min-elevation", help="minimum elevation, degrees"),
    policy: str = typer.Option("highest", "--policy", help="highest | longest | nearest"),
    sticky: bool = typer.Option(True, "--sticky/--no-sticky",
                                help="hand over only when the serving satellite sets (default) "
                                     "or whenever the policy prefers another"),
    step_s: float | None = typer.Option(
        None, "--step-s", help="time step, s (default 10; with --interval-s the largest whole "
                               "second up to 10 that divides the interval and the phase)"),
    interval_s: float = typer.Option(
        0.0, "--interval-s", help="scheduled reallocation every this many seconds (Starlink: "
                                  "15): the policy picks afresh at each instant, and between "
                                  "instants only when the serving satellite sets (forced); "
                                  "0 = handovers follow the geometry"),
    phase_s: float = typer.Option(0.0, "--phase-s",
                                  help="instants at phase + k x interval from --start "
                                       "(Starlink: 12)"),
    as_json: bool = typer.Option(False, "--json", help="print one JSON object"),
) -> None:
    """The serving satellite over time for a place under a handover policy."""
    from orbit_model import GroundPoints, handover_schedule, step_times_ns

    if step_s is None:
        step_s = _reallocation_step_s(interval_s, phase_s)
    epoch, const = _setup(constellation, start, hours)
    try:
        t_ns = step_times_ns(int(round(hours * 3600 * NS_PER_S)), int(round(step_s * NS_PER_S)))
        schedule = handover_schedule(const, GroundPoints.from_degrees(lat, lon), t_ns,
                                     min_elevation_deg=min_elevation, policy=policy, sticky=sticky,
                                     interval_ns=int(round(interval_s * NS_PER_S)),
                                     phase_ns=int(round(phase_s * NS_PER_S)))
    except ValueError as exc:
        fail(str(exc))
    times, sats = schedule.for_client(0)
    forced = schedule.forced[:times.size]
    if as_json:
        head = {"constellation": const.spec, "start": epoch.isoformat(), "hours": hours,
                "lat_deg": lat, "lon_deg": lon, "min_elevation_deg": min_elevation,
                "policy": policy, "sticky": sticky, "step_s": step_s}
        if interval_s:
            head |= {"interval_s": interval_s, "phase_s": phase_s,
                     "n_forced": int(forced.sum())}
        print_json(head | {
            "n_handovers": int(schedule.n_handovers[0]),
            "schedule": [{"time_s": int(t) / NS_PER_S, "satellite": int(s)}
                         | ({"forced": bool(f)} if interval_s else {})
                         for t, s, f in zip(times, sats, forced, strict=True)]})
        return
    how = (f"reallocated every {interval_s:g} s from {phase_s:g} s" if interval_s else
           "sticky" if sticky else "re-evaluated every step")
    table = Table(title=f"{policy} ({how}), {lat:g}, {lon:g} above {min_elevation:g} deg: "
                        f"{int(schedule.n_handovers[0])} handovers in {hours:g} h"
                        + (f", {int(forced.sum())} forced" if interval_s else ""))
    for column in ("from (UTC)", "t (s)", "satellite", "name") + (("forced",) if interval_s else ()):
        table.add_column(column)
    for t, s, f in zip(times, sats, forced, strict=True):
        table.add_row(_iso(epoch, t), f"{int(t) / NS_PER_S:g}", str(int(s)) if s >= 0 else "-",
                      const.names[s] if s >= 0 else "(none above the minimum elevation)",
                      *(("yes" if f else "",) if interval_s else ()))
    stdout.print(table)


def _reallocation_step_s(interval_s: float, phase_s: float) -> float:
    """10 s, or under scheduled reallocation the largest whole second up to 10 that
    divides both the interval and the phase (3 s for 15 s at phase 12 s), so that every
    instant is a step."""
    from orbit_model import reallocation_step_ns

    try:
        return reallocation_step_ns(int(round(interval_s * NS_PER_S)),
                                    int(round(phase_s * NS_PER_S))) / NS_PER_S
    except ValueError:
        fail(f"--interval-s {interval_s:g} and --phase-s {phase_s:g} are not whole seconds: "
             "give --step-s")


@app.command("isl")
def isl(
    constellation: str = typer.Option(DEFAULT_CONSTELLATION, "--constellation", help=CONSTELLATION_HELP),
    src: int = typer.Option(..., "--src", help="source satellite index"),
    dst: int = typer.Option(..., "--dst", help="destination satellite index"),
    start: str = typer.Option(DEFAULT_START, "--start", help="scenario epoch, ISO 8601 (UTC)"),
    at_s: float = typer.Option(0.0, "--at-s", help="time, seconds from --start"),
    latitude_cutoff: float | None = typer.Option(None, "--latitude-cutoff",
                                                 help="cross-plane links down above this |latitude|, deg"),
    per_hop_ms: float = typer.Option(0.0, "--per-hop-ms", help="processing time per hop, ms"),
    as_json: bool = typer.Option(False, "--json", help="print one JSON object"),
) -> None:
    """Fewest ISL hops and the delay of the fastest fewest-hop path (+Grid topology)."""
    from orbit_model import IslNetwork

    epoch, const = _setup(constellation, start)
    try:
        network = IslNetwork(const, latitude_cutoff_deg=latitude_cutoff, per_hop_processing_ms=per_hop_ms)
        t_ns = int(round(at_s * NS_PER_S))
        route = network.route(src, dst, t_ns)
        neighbours = network.neighbours(t_ns)
        path = network.path(src, dst, t_ns).tolist()
    except ValueError as exc:
        fail(str(exc))
    hops, delay = int(route.hops), float(route.delay_ms)
    result = {"constellation": const.spec, "start": epoch.isoformat(), "t_s": at_s,
              "src": src, "dst": dst, "hops": hops,
              "delay_ms": round(delay, 6) if hops >= 0 else None,
              "latitude_cutoff_deg": latitude_cutoff, "per_hop_ms": per_hop_ms, "path": path,
              "src_neighbours": neighbours[src].tolist(), "dst_neighbours": neighbours[dst].tolist()}
    if as_json:
        print_json(result)
        return
    if hops < 0:
        stdout.print(f"satellites {src} and {dst} are not connected at t = {at_s:g} s")
        return
    stdout.print(f"{src} -> {dst} at t = {at_s:g} s: [bold]{hops}[/] hops, "
                 f"[bold]{delay:.3f}[/] ms via {path}")


@app.command("isl-vectors")
def isl_vectors(
    out: Annotated[Path, typer.Argument(help="JSON file to write")],
) -> None:
    """Write the shared +Grid test vectors (constellations, neighbours, hop matrices)."""
    from orbit_model.io import write_isl_test_vectors

    try:
        write_isl_test_vectors(out)
    except (ValueError, OSError) as exc:
        fail(str(exc))
    stdout.print(f"wrote {out}")
