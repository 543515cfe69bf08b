"""Footprint population for a whole constellation over a day (issue 6).

    make bench-population        # or: .venv/bin/python bench/bench_population.py [--hours H]

Workload: walker-star:150/10/1:500:87 (the default of docs/conventions.md), 24 h at 10 s steps =
150 x 8,640 = 1,296,000 footprints (500 km, 10 deg minimum elevation: 14.05 deg
caps, about 58 grid rows each) on the embedded GPW 30' grid.

Prints wall times and ratios against two baselines measured in the same run:
- brute force: haversine distance from each centre to all 259,200 cell centres
  (the definition), on a subset of centres, also checked for equal results;
- the plain NumPy per-row-interval path (the reference implementation), on a
  subset, also checked for equal results.
Per-centre times of the subsets are scaled to the full workload.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from orbit_model import Constellation, PopulationGrid, subsatellite_points
from orbit_model.constants import EARTH_RADIUS_KM
from orbit_model.kernels import footprint_central_angle_rad

SPEC = "walker-star:150/10/1:500:87"
EPOCH = "2023-06-01T00:00:00Z"


def brute_force(grid: PopulationGrid, lat_deg, lon_deg, angle_rad) -> np.ndarray:
    phi = np.radians(grid.lat_centres_deg)[:, None]
    lam = np.radians(grid.lon_centres_deg)[None, :]
    counts = grid.counts
    out = np.empty(len(lat_deg))
    for m, (la, lo) in enumerate(zip(np.radians(lat_deg), np.radians(lon_deg), strict=True)):
        h = np.sin((phi - la) / 2) ** 2 + np.cos(la) * np.cos(phi) * np.sin((lam - lo) / 2) ** 2
        out[m] = counts[2 * np.arcsin(np.sqrt(np.clip(h, 0, 1))) <= angle_rad].sum()
    return out


def timed(fn, *args, **kwargs):
    start = time.perf_counter()
    result = fn(*args, **kwargs)
    return result, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hours", type=float, default=24.0)
    parser.add_argument("--step-s", type=float, default=10.0)
    parser.add_argument("--brute-force-centres", type=int, default=300)
    parser.add_argument("--numpy-centres", type=int, default=100_000)
    args = parser.parse_args()

    grid = PopulationGrid.default()
    cons = Constellation.from_spec(SPEC, epoch=EPOCH)
    t_ns = np.arange(0, int(args.hours * 3600e9) // int(args.step_s * 1e9), dtype=np.int64) \
        * int(args.step_s * 1e9)
    angle = footprint_central_angle_rad(500.0, 10.0)
    n = cons.n_satellites * t_ns.size
    print(f"workload: {SPEC}, {t_ns.size} steps of {args.step_s:g} s = {n:,} footprints "
          f"(cap {np.degrees(angle):.2f} deg = {angle * EARTH_RADIUS_KM:,.0f} km), "
          f"grid {grid.n_rows} x {grid.n_cols}")

    # warm the propagation too (its compiled interpolation loads or compiles once)
    _, t_prop_warm = timed(subsatellite_points, cons, t_ns[:30])
    (lat, lon), t_prop = timed(subsatellite_points, cons, t_ns)
    # warm the compiled kernel (loads numba's on-disk cache, or compiles once)
    _, t_warm = timed(grid.population_in_cap, lat[:, :50].ravel(), lon[:, :50].ravel(),
                      angle, method="numba")
    pop, t_fast = timed(grid.population_in_cap, lat, lon, angle, method="numba")

    rng = np.random.default_rng(0)
    pick = rng.choice(n, size=min(args.numpy_centres, n), replace=False)
    ref, t_numpy = timed(grid.population_in_cap, lat.ravel()[pick], lon.ravel()[pick], angle,
                         method="numpy")
    assert np.allclose(ref, pop.ravel()[pick], rtol=1e-12, atol=1e-6), "numpy/numba differ"
    pick_bf = pick[:args.brute_force_centres]
    bf, t_bf = timed(brute_force, grid, lat.ravel()[pick_bf], lon.ravel()[pick_bf], angle)
    assert np.allclose(bf, pop.ravel()[pick_bf], rtol=1e-12, atol=1e-6), "brute force differs"

    numpy_full = t_numpy / pick.size * n
    bf_full = t_bf / pick_bf.size * n
    print(f"{'path':<38}{'us/footprint':>14}{'full workload s':>17}{'speed-up':>10}")
    rows = [
        ("brute force, all cells (baseline)", bf_full, f"{pick_bf.size} centres"),
        ("numpy per-row intervals", numpy_full, f"{pick.size:,} centres"),
        ("numba per-row intervals (default)", t_fast, "all"),
    ]
    for name, full, note in rows:
        print(f"{name:<38}{full / n * 1e6:>14.3f}{full:>17.2f}{bf_full / full:>9.0f}x"
              f"   (measured on {note})")
    print(f"numba vs numpy: {numpy_full / t_fast:.1f}x; results equal on every compared centre")
    print(f"propagation (orbit_model.subsatellite_points): {t_prop:.2f} s; warm-ups: "
          f"propagation {t_prop_warm:.2f} s, population kernel {t_warm:.2f} s")
    print(f"footprint population, {cons.n_satellites} satellites x {t_ns.size} steps: "
          f"{t_prop + t_fast:.2f} s end to end (propagation + population)")
    print(f"check: mean footprint population {np.nanmean(pop):,.0f}; "
          f"sum over satellites / world = {np.nansum(pop[:, 0]) / grid.total:.2f} at t=0")


if __name__ == "__main__":
    main()
