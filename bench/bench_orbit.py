"""Benchmark: a Starlink-sized day of visibility, handover schedules and ISL routes.

Constellation: the 3,023-satellite Starlink catalogue in data/tle (when
present; otherwise a 72 x 22 Walker shell at 550 km, 53 deg). 24 h at 10 s
steps (8,641 steps), 1,000 ground points (seeded, uniform on the sphere between
60S and 60N), minimum elevation 25 deg, policy "highest".

Baseline, measured in the same run: the plain per-satellite Skyfield loop,
``(EarthSatellite - wgs84.latlon(...)).at(t).altaz()`` over the same 8,641
times for a subset of (satellite, point) pairs, extrapolated linearly to all
pairs (it computes only elevations, not passes or schedules: a baseline in its
favour). Also: 10^6 ISL route queries (src, dst, t) against networkx shortest
paths per query on a subset.

Run: make bench-orbit   (or .venv/bin/python bench/bench_orbit.py [--points N] [--hours H])
Cited by docs/orbit-model.md.
"""

from __future__ import annotations

import argparse
import logging
import resource
import time
from pathlib import Path

import networkx as nx
import numpy as np
from skyfield.api import EarthSatellite, wgs84

from orbit_model import (
    Constellation,
    GroundPoints,
    IslNetwork,
    handover_schedule,
    step_times_ns,
    teme_positions_km,
)
from orbit_model.timebase import skyfield_times, timescale

S = 1_000_000_000
EPOCH = "2022-09-14T00:00:00Z"
SHARED_TLE = Path(__file__).resolve().parents[1] / "data/tle/starlink-2022-09-14.tle"
FALLBACK = "walker:1584/72/1:550:53"


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=1000)
    parser.add_argument("--hours", type=float, default=24.0)
    parser.add_argument("--step-s", type=int, default=10)
    parser.add_argument("--min-elevation", type=float, default=25.0)
    parser.add_argument("--baseline-sats", type=int, default=6)
    parser.add_argument("--baseline-points", type=int, default=3)
    parser.add_argument("--route-queries", type=int, default=1_000_000)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(message)s")

    if SHARED_TLE.exists():
        spec = f"tle:{SHARED_TLE}"
    else:
        print(f"note: {SHARED_TLE} is absent; falling back to {FALLBACK}")
        spec = FALLBACK
    t0 = time.perf_counter()
    constellation = Constellation.from_spec(spec, epoch=EPOCH)
    load_s = time.perf_counter() - t0
    n_sats = constellation.n_satellites
    rng = np.random.default_rng(20230601)
    # uniform on the sphere, restricted to |lat| <= 60 deg
    lat = np.degrees(np.arcsin(rng.uniform(-np.sin(np.radians(60)), np.sin(np.radians(60)), args.points)))
    lon = rng.uniform(-180.0, 180.0, args.points)
    points = GroundPoints.from_degrees(lat, lon)
    t_ns = step_times_ns(int(args.hours * 3600 * S), args.step_s * S)
    print(f"constellation: {constellation.spec if spec == FALLBACK else 'starlink-2022-09-14.tle'} "
          f"({n_sats} satellites, {len(constellation.shells)} shells; loaded and grouped in {load_s:.2f} s)")
    print(f"window: {args.hours:g} h at {args.step_s} s = {t_ns.size} steps; {args.points} ground points; "
          f"min elevation {args.min_elevation:g} deg")

    # warm the compiled kernels on a tiny problem so the timing is the steady state
    handover_schedule(constellation, GroundPoints.from_degrees([0.0], [0.0]), t_ns[:4],
                      min_elevation_deg=args.min_elevation)

    t0 = time.perf_counter()
    teme_positions_km(constellation, t_ns[:360])
    prop_chunk_s = time.perf_counter() - t0
    t0, c0 = time.perf_counter(), time.process_time()
    schedule, passes = handover_schedule(constellation, points, t_ns, min_elevation_deg=args.min_elevation,
                                         policy="highest", return_passes=True)
    ours_s, ours_cpu_s = time.perf_counter() - t0, time.process_time() - c0
    t0 = time.perf_counter()
    handover_schedule(constellation, points, t_ns, min_elevation_deg=args.min_elevation, policy="longest")
    longest_s = time.perf_counter() - t0
    handovers = schedule.n_handovers
    print(f"ours: visibility + passes + 'highest' schedules for all {n_sats} x {args.points} pairs: "
          f"{ours_s:.1f} s wall, {ours_cpu_s:.1f} s CPU (propagation of one 1-hour chunk: {prop_chunk_s:.2f} s); "
          f"'longest': {longest_s:.1f} s")
    print(f"      {passes.size} passes, {handovers.sum()} handovers "
          f"(median {np.median(handovers):.0f} per point in the window), peak RSS {peak_rss_mb():.0f} MB")

    # ---- baseline: per-satellite, per-point Skyfield on a subset of pairs
    ts = timescale()
    times = skyfield_times(constellation.epoch, t_ns)
    sats = rng.choice(n_sats, args.baseline_sats, replace=False)
    pts = rng.choice(args.points, args.baseline_points, replace=False)
    mismatched_steps = 0
    t0, c0 = time.perf_counter(), time.process_time()
    for i in sats:
        satellite = EarthSatellite.from_satrec(constellation.satrecs[i], ts)
        for g in pts:
            alt = (satellite - wgs84.latlon(lat[g], lon[g])).at(times).altaz()[0].degrees
            visible = alt >= args.min_elevation
            mine = np.zeros(t_ns.size, bool)
            for p in passes[(passes["client"] == g) & (passes["satellite"] == i)]:
                mine[p["rise_step"]:p["set_step"]] = True
            mismatched_steps += int(np.count_nonzero(visible != mine))
    pairs = len(sats) * len(pts)
    base_pair_s = (time.perf_counter() - t0) / pairs
    base_pair_cpu_s = (time.process_time() - c0) / pairs
    base_total_s = base_pair_s * n_sats * args.points
    print(f"baseline: Skyfield per (satellite, point) over {t_ns.size} times: {base_pair_s * 1e3:.1f} ms "
          f"per pair ({pairs} pairs measured) -> {base_total_s / 3600:.1f} h for all pairs (extrapolated)")
    print(f"          visibility of the measured pairs agrees with ours at "
          f"{pairs * t_ns.size - mismatched_steps} of {pairs * t_ns.size} steps")
    ratio = base_total_s / ours_s
    ratio_cpu = base_pair_cpu_s * n_sats * args.points / ours_cpu_s
    print(f"RESULT visibility/handover: {ratio:,.0f}x faster than the per-satellite Skyfield loop "
          f"(wall; {ratio_cpu:,.0f}x in CPU time; target >= 20x); {args.hours:g} h for {args.points} "
          f"points in {ours_s:.1f} s wall / {ours_cpu_s:.1f} s CPU (target < 60 s for 24 h, 1,000 points)")

    # ---- ISL routes
    network = IslNetwork(constellation)
    network.route([0], [1], [0])  # compile + all-pairs hop matrix
    q = args.route_queries
    src, dst = rng.integers(0, n_sats, q), rng.integers(0, n_sats, q)
    tq = rng.integers(0, int(args.hours * 3600) * S, q)
    t0 = time.perf_counter()
    routes = network.route(src, dst, tq)
    route_s = time.perf_counter() - t0
    # baseline: networkx, one fewest-hop query at a time on the same links
    graph = nx.Graph()
    graph.add_nodes_from(range(n_sats))
    graph.add_edges_from(network.links.endpoints.tolist())
    n_base = 200
    t0 = time.perf_counter()
    agree = 0
    for k in range(n_base):
        try:
            h = nx.shortest_path_length(graph, int(src[k]), int(dst[k]))
        except nx.NetworkXNoPath:
            h = -1
        agree += int(h == routes.hops[k])
    nx_per_query_s = (time.perf_counter() - t0) / n_base
    print(f"ISL: {q:,} (src, dst, t) routes (hops + delay) in {route_s:.1f} s "
          f"({route_s / q * 1e6:.1f} us per query; {np.mean(routes.hops >= 0):.0%} connected); "
          f"networkx hops only: {nx_per_query_s * 1e3:.2f} ms per query "
          f"({agree}/{n_base} agree) -> {nx_per_query_s * q / route_s:,.0f}x")
    print(f"peak RSS {peak_rss_mb():.0f} MB")


if __name__ == "__main__":
    main()
