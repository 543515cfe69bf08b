"""`satpage live up|down|demo|ephemeris`: the service in live mode (docs/live.md)."""

from __future__ import annotations

import datetime as dt
import tempfile
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from satpage.cluster import (
    DEFAULT_CONSTELLATION,
    DEFAULT_PORT_BASE,
    cluster_down,
    default_state_dir,
    load_state,
)
from satpage.commands.cluster import EmulateLinks
from satpage.console import fail, print_json, setup_logging, stdout

app = typer.Typer(help="Live mode: the cluster on a constellation clock, sessions opened by location.",
                  no_args_is_help=True)

StateDir = Annotated[Path | None, typer.Option(
    "--state-dir", help="Where the cluster records what it started (default $SATPAGE_CLUSTER_DIR or .cluster).")]


def _epoch(value: str | None) -> dt.datetime | None:
    if value is None:
        return None
    from orbit_model import parse_epoch

    try:
        return parse_epoch(value)
    except ValueError as exc:
        fail(f"--epoch: {exc}")


def _check(speed: float, hours: float, policy: str, min_elevation: float, lead_s: float = 0.0) -> None:
    if not 0 <= lead_s <= 3600:
        fail(f"--lead-s {lead_s} must lie in 0..3600")
    if not 0 < speed <= 1e6:
        fail(f"--speed {speed} must be above 0 and at most 1e6")
    if not 0 < hours <= 24 * 31:
        fail(f"--hours {hours} must be above 0 and at most 744 (31 days)")
    if policy not in ("highest", "nearest", "longest"):
        fail(f"--policy {policy!r}: live mode applies highest, nearest or longest")
    if not -90 <= min_elevation < 90:
        fail(f"--min-elevation {min_elevation} is outside -90..90")


@app.command("up")
def up(
    speed: Annotated[float, typer.Option("--speed", help="Constellation seconds per wall second.")] = 1.0,
    epoch: Annotated[str | None, typer.Option("--epoch", help="Constellation epoch, ISO 8601 UTC "
                                              "(default: now).")] = None,
    constellation: Annotated[str, typer.Option("--constellation", help="Walker spec.")] = DEFAULT_CONSTELLATION,
    hours: Annotated[float, typer.Option("--hours", help="Ephemeris horizon, hours of constellation time.")] = 24.0,
    policy: Annotated[str, typer.Option("--policy", help="highest | nearest | longest")] = "highest",
    sticky: Annotated[bool, typer.Option("--sticky/--no-sticky")] = True,
    min_elevation: Annotated[float, typer.Option("--min-elevation", help="Degrees.")] = 10.0,
    isl_latitude_cutoff: Annotated[float, typer.Option(
        "--isl-latitude-cutoff", help="Cross-plane ISLs down while either end is above this |latitude| "
        "(degrees; 90 = never): the satnodes route on its ISL schedule for --hours.")] = 90.0,
    lead_s: Annotated[float, typer.Option("--lead-s", help="Push-ahead copies a visit's pages to the next "
                                          "serving satellite this long before the handover (constellation "
                                          "seconds; 0: at the handover).")] = 10.0,
    idle_timeout_s: Annotated[float, typer.Option("--idle-timeout-s", help="End sessions idle this long "
                                                  "(wall seconds; the gateway's --session-idle).")] = 3600.0,
    interval_s: Annotated[float, typer.Option(
        "--interval-s", help="Scheduled reallocation every this many constellation seconds "
        "(Starlink: 15; 0: handovers follow the geometry).")] = 0.0,
    phase_s: Annotated[float, typer.Option("--phase-s", help="Reallocation instants at phase + k x "
                                           "interval from the epoch (Starlink: 12).")] = 0.0,
    insecure: Annotated[bool, typer.Option("--insecure", help="Plain text, no access control "
                                           "(debugging only).")] = False,
    port_base: Annotated[int, typer.Option("--port-base")] = DEFAULT_PORT_BASE,
    store: Annotated[str, typer.Option("--store", help="redis or memory")] = "redis",
    replicas: Annotated[int, typer.Option(
        "--replicas", help="Replication factor R: every page is also held by the R-1 satellites behind "
        "its owner in its plane, so a satellite that dies loses none (docs/faults.md). 1: no "
        "replicas.")] = 2,
    emulate_links: EmulateLinks = True,
    state_dir: StateDir = None,
    json_out: Annotated[bool, typer.Option("--json", help="One JSON object on stdout.")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
) -> None:
    """Start the local cluster with a live gateway (writes its ephemeris first)."""
    from satpage.live import live_up

    setup_logging(verbose)
    _check(speed, hours, policy, min_elevation, lead_s)
    if store not in ("redis", "memory"):
        fail(f"--store must be redis or memory, got {store!r}")
    if not 0 <= isl_latitude_cutoff <= 90:
        fail(f"--isl-latitude-cutoff {isl_latitude_cutoff} is outside 0..90")
    try:
        st = live_up(constellation, state_dir=state_dir, port_base=port_base, speed=speed, epoch=_epoch(epoch),
                     hours=hours, store=store, policy=policy, sticky=sticky, min_elevation_deg=min_elevation,
                     idle_timeout_s=idle_timeout_s, insecure=insecure,
                     isl_latitude_cutoff_deg=isl_latitude_cutoff, push_lead_s=lead_s,
                     interval_s=interval_s, phase_s=phase_s, replicas=replicas,
                     emulate_links=emulate_links)
    except ValueError as exc:
        fail(str(exc))
    except OSError as exc:
        fail(str(exc), 1)
    if json_out:
        print_json({"gateway": st.gateway, "satellites": st.satellites, "state_dir": st.state_dir,
                    "tls_dir": st.tls_dir, "insecure": st.tls_dir is None, "replicas": st.replicas, **st.live})
    else:
        stdout.print(f"live cluster up: {st.satellites} satellites ({st.constellation}), gateway "
                     f"[bold]{st.gateway}[/], epoch {st.live['epoch']}, speed {st.live['speed']:g}x, "
                     f"R = {st.replicas}; "
                     f"state in {st.state_dir}")


@app.command("down")
def down(state_dir: StateDir = None) -> None:
    """Stop the live cluster (exactly the processes `live up` recorded)."""
    setup_logging(False)
    n = cluster_down(state_dir)
    stdout.print(f"live cluster down: stopped {n} processes recorded in "
                 f"{(state_dir or default_state_dir()).resolve()}")


@app.command("ephemeris")
def ephemeris(
    out: Annotated[Path, typer.Argument(help="File to write (satpage-ephemeris/1), atomically.")],
    epoch: Annotated[str, typer.Option("--epoch", help="Constellation epoch, ISO 8601 UTC.")],
    constellation: Annotated[str, typer.Option("--constellation")] = DEFAULT_CONSTELLATION,
    hours: Annotated[float, typer.Option("--hours", help="Horizon from the epoch.")] = 24.0,
    policy: Annotated[str, typer.Option("--policy", help="highest | nearest | longest")] = "highest",
    sticky: Annotated[bool, typer.Option("--sticky/--no-sticky")] = True,
    min_elevation: Annotated[float, typer.Option("--min-elevation")] = 10.0,
    interval_s: Annotated[float, typer.Option(
        "--interval-s", help="Scheduled reallocation every this many seconds (Starlink: 15; 0: "
        "handovers follow the geometry); the gateway applies it as orbit_model does.")] = 0.0,
    phase_s: Annotated[float, typer.Option("--phase-s", help="Instants at phase + k x interval "
                                           "from the epoch (Starlink: 12).")] = 0.0,
    step_s: Annotated[float | None, typer.Option(
        "--step-s", help="Handover step, s (default 10; with --interval-s the largest whole "
        "second up to 10 that divides the interval and the phase).")] = None,
    compress: Annotated[bool, typer.Option(
        "--compress", help="Positions to 1 m, delta-coded and zlib-compressed: about a sixth of "
        "the bytes (a day of 150 satellites in 0.42 MB: a ConfigMap or Docker config holds it).")] = False,
) -> None:
    """Write (or refresh, keeping the epoch) a gateway's ephemeris file."""
    from satpage.commands.orbit import _reallocation_step_s
    from satpage.live import write_live_ephemeris

    _check(1.0, hours, policy, min_elevation)
    if step_s is None:
        step_s = _reallocation_step_s(interval_s, phase_s)
    try:
        size = write_live_ephemeris(out, constellation, _epoch(epoch), hours, policy=policy, sticky=sticky,
                                    min_elevation_deg=min_elevation, step_s=step_s,
                                    interval_s=interval_s, phase_s=phase_s, compress=compress)
    except (ValueError, OSError) as exc:
        fail(str(exc))
    stdout.print(f"wrote {out}: {hours:g} h of {constellation}, {size} bytes")


@app.command("demo")
def demo(
    lat: Annotated[list[float], typer.Option("--lat", help="Client latitude (repeat for more clients).")],
    lon: Annotated[list[float], typer.Option("--lon", help="Client longitude (one per --lat).")],
    minutes: Annotated[float, typer.Option("--minutes", help="Constellation minutes to run.")] = 30.0,
    speed: Annotated[float, typer.Option("--speed", help="Clock speed of the cluster started for the demo.")]
    = 60.0,
    strategy: Annotated[str, typer.Option("--strategy", help="on-demand | proactive | push-ahead")] = "on-demand",
    lead_s: Annotated[float, typer.Option("--lead-s", help="Push-ahead copies a visit's pages to the next "
                                          "serving satellite this long before the handover (constellation "
                                          "seconds; 0: at the handover).")] = 10.0,
    pages: Annotated[int, typer.Option("--pages", help="Pages per session (Zipf s = 1).")] = 64,
    seed: Annotated[int, typer.Option("--seed")] = 1,
    gateway: Annotated[str | None, typer.Option("--gateway", help="Use this live gateway (host:port) "
                                                "instead of starting a cluster; --speed is then its own.")]
    = None,
    constellation: Annotated[str, typer.Option("--constellation")] = DEFAULT_CONSTELLATION,
    port_base: Annotated[int, typer.Option("--port-base")] = 0,
    tls_dir: Annotated[str | None, typer.Option("--tls-dir", help="TLS material for --gateway (default "
                                                "$SATPAGE_TLS_DIR or the recorded cluster's).")] = None,
    store: Annotated[str, typer.Option("--store", help="redis or memory")] = "redis",
    interval_s: Annotated[float, typer.Option(
        "--interval-s", help="Scheduled reallocation every this many constellation seconds "
        "(Starlink: 15; 0: handovers follow the geometry).")] = 0.0,
    phase_s: Annotated[float, typer.Option("--phase-s", help="Reallocation instants at phase + k x "
                                           "interval from the epoch (Starlink: 12).")] = 0.0,
    emulate_links: EmulateLinks = True,
    json_out: Annotated[bool, typer.Option("--json", help="One JSON object on stdout.")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
) -> None:
    """Run a bounded workload of clients at the given places; print the handovers each saw and
    the costs (movements, page-hops, fault latency on the wire)."""
    from satpage.live import live_up, run_demo

    setup_logging(verbose)
    if len(lat) != len(lon):
        fail(f"{len(lat)} --lat but {len(lon)} --lon: give one --lon per --lat")
    for a, b in zip(lat, lon, strict=True):
        if not -90 <= a <= 90 or not -180 <= b <= 360:
            fail(f"place {a}, {b}: latitude must lie in -90..90 and longitude in -180..360")
    if not 0 < minutes <= 24 * 60:
        fail(f"--minutes {minutes} must be above 0 and at most 1440")
    if strategy not in ("on-demand", "proactive", "push-ahead"):
        fail(f"--strategy {strategy!r} is not on-demand, proactive or push-ahead")
    if not 1 <= pages <= 100_000:
        fail(f"--pages {pages} must lie in 1..100000")
    _check(speed, 1.0, "highest", 10.0, lead_s)
    places = list(zip(lat, lon, strict=True))
    try:
        if gateway:
            head, clients = run_demo(gateway, places, minutes=minutes, strategy=strategy, n_pages=pages, seed=seed,
                                     tls_dir=tls_dir)
        else:
            with tempfile.TemporaryDirectory(prefix="satpage-live-") as tmp:
                hours = max(1.0, minutes / 60 + 0.5)
                live_up(constellation, state_dir=Path(tmp), port_base=port_base or None, speed=speed, hours=hours, store=store,
                        push_lead_s=lead_s, interval_s=interval_s, phase_s=phase_s,
                        emulate_links=emulate_links)
                try:
                    st = load_state(Path(tmp))
                    head, clients = run_demo(st.gateway, places, minutes=minutes, strategy=strategy,
                                             n_pages=pages, seed=seed, tls_dir=st.tls_dir)
                finally:
                    cluster_down(Path(tmp))
    except ValueError as exc:
        fail(str(exc))
    except OSError as exc:
        fail(str(exc), 1)
    result = {**head, "clients": [c.to_json() for c in clients]}
    failed = [c for c in clients if c.error]
    if json_out:
        print_json(result)
    else:
        table = Table(title=f"live demo: {minutes:g} constellation minutes at {head['speed']:g}x, {strategy}, "
                            f"{head['constellation']} ({head['policy']}, min elevation {head['min_elevation_deg']:g} deg)")
        for col in ("place", "handovers (time s: satellite)", "written", "read back", "moves", "page-hops",
                    "fault ms p50", "local ms p50"):
            table.add_column(col)
        for c in result["clients"]:
            sched = " ".join(f"{h['time_s']:g}:{h['satellite']}" for h in c.get("schedule", []))
            table.add_row(f"{c['lat_deg']:g}, {c['lon_deg']:g}", sched, str(c["pages_written"]),
                          str(c["pages_read_back_ok"]), str(c.get("movements", "-")), str(c.get("page_hops", "-")),
                          str(c["fault_latency_ms"].get("p50", "-")), str(c["local_latency_ms"].get("p50", "-")))
        stdout.print(table)
        for c in failed:
            stdout.print(f"[red]client at {c.lat_deg}, {c.lon_deg}: {c.error}[/]")
    if failed:
        raise typer.Exit(1)
