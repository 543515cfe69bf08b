"""Ground visibility: elevation of satellites from ground points, and passes refined below 1 s.

Elevation is geometric (no refraction), measured from the WGS84 ellipsoid
normal of the ground point, exactly what Skyfield's ``(sat - topos).at(t).altaz()``
gives for an ``EarthSatellite`` (the tests hold it to Skyfield's ``find_events``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numba
import numpy as np

from orbit_model.constants import WGS84_A_KM, WGS84_F
from orbit_model.constellation import Constellation
from orbit_model.propagate import (
    _as_times,
    gmst_angles_rad,
    itrs_positions_at_km,
    itrs_positions_km,
    teme_positions_km,
)
from orbit_model.timebase import NS_PER_S

__all__ = ["GroundPoints", "elevations_deg", "find_passes", "PASS_DTYPE"]

log = logging.getLogger(__name__)

PASS_DTYPE = np.dtype([
    ("satellite", np.int32),
    ("rise_ns", np.int64),  # 0 when the pass is in progress at the start
    ("culmination_ns", np.int64),
    ("set_ns", np.int64),  # the end of the window when still in progress there
    ("max_elevation_deg", np.float64),
])


@dataclass(frozen=True)
class GroundPoints:
    """Places on the WGS84 ellipsoid: geodetic latitude/longitude (deg) and height (m).

    ``itrs_km`` (n, 3) positions and ``up`` (n, 3) unit normals are derived.
    """

    latitude_deg: np.ndarray
    longitude_deg: np.ndarray
    elevation_m: np.ndarray

    @classmethod
    def from_degrees(cls, latitude_deg, longitude_deg, elevation_m=0.0) -> GroundPoints:
        lat, lon, height = np.broadcast_arrays(np.atleast_1d(np.asarray(latitude_deg, float)),
                                               np.atleast_1d(np.asarray(longitude_deg, float)),
                                               np.atleast_1d(np.asarray(elevation_m, float)))
        bad = ~np.isfinite(lat) | (np.abs(lat) > 90)
        if bad.any():
            raise ValueError(f"latitude {lat[bad][0]} deg is outside -90..90")
        bad = ~np.isfinite(lon) | (lon < -180) | (lon > 360)
        if bad.any():
            raise ValueError(f"longitude {lon[bad][0]} deg is outside -180..360")
        return cls(lat.copy(), lon.copy(), height.copy())

    def __len__(self) -> int:
        return int(self.latitude_deg.size)

    @property
    def itrs_km(self) -> np.ndarray:
        lat, lon = np.radians(self.latitude_deg), np.radians(self.longitude_deg)
        e2 = WGS84_F * (2 - WGS84_F)
        n = WGS84_A_KM / np.sqrt(1 - e2 * np.sin(lat) ** 2)
        h = self.elevation_m / 1000.0
        return np.stack([(n + h) * np.cos(lat) * np.cos(lon), (n + h) * np.cos(lat) * np.sin(lon),
                         (n * (1 - e2) + h) * np.sin(lat)], axis=-1)

    @property
    def up(self) -> np.ndarray:
        lat, lon = np.radians(self.latitude_deg), np.radians(self.longitude_deg)
        return np.stack([np.cos(lat) * np.cos(lon), np.cos(lat) * np.sin(lon), np.sin(lat)], axis=-1)


def _elevation(sat_itrs: np.ndarray, ground_xyz: np.ndarray, up: np.ndarray) -> np.ndarray:
    d = sat_itrs - ground_xyz
    return np.degrees(np.arcsin(np.einsum("...i,...i->...", d, up) / np.linalg.norm(d, axis=-1)))


def elevations_deg(constellation: Constellation, ground: GroundPoints, t_ns,
                   knot_ns: int | None = None) -> np.ndarray:
    """Elevation (deg) of every satellite from every point: (n_points, n_sats, n_times).

    Memory is n_points x n_sats x n_times: for large problems use
    ``orbit_model.handover.handover_schedule``, which streams over time.
    """
    t_ns = _as_times(t_ns)
    sat = itrs_positions_km(constellation, t_ns, knot_ns=knot_ns)
    xyz, up = ground.itrs_km, ground.up
    return np.stack([_elevation(sat, xyz[i], up[i]) for i in range(len(ground))])


@numba.njit(cache=True)
def _elevation_from_teme(position, theta, g, up, out):
    """Elevation (deg) from one ground point of TEME positions (n_sats, n_t, 3); -90 for NaN."""
    for j in range(position.shape[1]):
        c, s = np.cos(theta[j]), np.sin(theta[j])
        for i in range(position.shape[0]):
            x, y, z = position[i, j, 0], position[i, j, 1], position[i, j, 2]
            dx = c * x + s * y - g[0]
            dy = -s * x + c * y - g[1]
            dz = z - g[2]
            sin_el = (dx * up[0] + dy * up[1] + dz * up[2]) / np.sqrt(dx * dx + dy * dy + dz * dz)
            out[i, j] = np.degrees(np.arcsin(sin_el)) if np.isfinite(sin_el) else -90.0


def _pair_elevation(constellation, sats, t_ns, xyz, up) -> np.ndarray:
    return _elevation(itrs_positions_at_km(constellation, sats, t_ns), xyz, up)


def find_passes(constellation: Constellation, latitude_deg: float, longitude_deg: float,
                duration_ns: int, min_elevation_deg: float = 10.0, step_ns: int = 10 * NS_PER_S,
                elevation_m: float = 0.0, satellite_chunk: int = 256) -> np.ndarray:
    """Passes of every satellite over one place in ``[0, duration_ns]``, as ``PASS_DTYPE`` rows.

    Elevation is sampled every ``step_ns``; runs above ``min_elevation_deg`` and
    sampled local maxima within 3 deg below it (a short pass between samples)
    are refined: culmination by ternary search, rise and set by bisection,
    both to better than 10 ms. Sorted by rise time, then satellite.
    """
    if not -90.0 <= min_elevation_deg < 90.0:
        raise ValueError(f"minimum elevation {min_elevation_deg} deg is outside -90..90")
    if duration_ns <= 0 or step_ns <= 0:
        raise ValueError(f"duration {duration_ns} ns and step {step_ns} ns must be positive")
    ground = GroundPoints.from_degrees(latitude_deg, longitude_deg, elevation_m)
    xyz, up = ground.itrs_km[0], ground.up[0]
    t = np.arange(0, duration_ns, step_ns, dtype=np.int64)
    t = np.append(t, np.int64(duration_ns)) if t[-1] != duration_ns else t
    margin_deg = 3.0
    theta = gmst_angles_rad(constellation, t)
    failed = []
    # candidates: (satellite, lo, hi, kind) in sample indices; kind 0 = run, 1 = grazing peak
    cand_sat, cand_first, cand_last, cand_best = [], [], [], []
    for lo in range(0, constellation.n_satellites, satellite_chunk):
        sats = np.arange(lo, min(lo + satellite_chunk, constellation.n_satellites))
        sub = _subset(constellation, sats)
        position = teme_positions_km(sub, t, report=False)
        failed.append(sats[np.isnan(position[:, :, 0]).any(axis=1)])
        el = np.empty(position.shape[:2])
        _elevation_from_teme(position, theta, xyz, up, el)  # (n, n_t)
        above = el >= min_elevation_deg
        edges = np.diff(above.astype(np.int8), axis=1, prepend=0, append=0)
        s_i, s_j = np.nonzero(edges == 1)
        e_i, e_j = np.nonzero(edges == -1)
        # nonzero walks row-major, so starts and ends pair up in order
        cand_sat.append(sats[s_i])
        cand_first.append(s_j)
        cand_last.append(e_j - 1)
        cand_best.append(np.array([s + int(np.argmax(el[i, s:e])) for i, s, e in zip(s_i, s_j, e_j, strict=True)],
                                  dtype=np.int64))
        # grazing: sampled local maximum just below the threshold
        inner = el[:, 1:-1]
        peak = ((inner >= el[:, :-2]) & (inner > el[:, 2:]) & (inner < min_elevation_deg)
                & (inner >= min_elevation_deg - margin_deg))
        g_i, g_j = np.nonzero(peak)
        cand_sat.append(sats[g_i])
        cand_first.append(-(g_j + 1) - 1)  # encoded: negative = grazing peak at sample g_j+1
        cand_last.append(g_j + 1)
        cand_best.append(g_j + 1)
    failed = np.concatenate(failed)
    if failed.size:
        log.warning("SGP4 fails for %d satellites during the window (no passes from them "
                    "while it fails): %s", failed.size, ", ".join(map(str, failed[:10])))
    sat = np.concatenate(cand_sat).astype(np.int64)
    first = np.concatenate(cand_first).astype(np.int64)
    last = np.concatenate(cand_last).astype(np.int64)
    grazing = first < 0
    peak_idx = np.where(grazing, last, 0)
    n = sat.size
    if n == 0:
        return np.zeros(0, PASS_DTYPE)
    n_t = t.size

    fine_ns = NS_PER_S // 2  # refinement sub-step

    def fine_grid(lo, hi):
        """Times from lo to hi (per candidate) every ``fine_ns``: (n, k) int64, k shared."""
        k = int(np.max((hi - lo) // fine_ns, initial=0)) + 2
        grid = lo[:, None] + fine_ns * np.arange(k)[None, :]
        return np.minimum(grid, hi[:, None])

    def elevation_grid(times):
        flat = _pair_elevation(constellation, np.repeat(sat, times.shape[1]), times.ravel(), xyz, up)
        return np.where(np.isfinite(flat), flat, -90.0).reshape(times.shape)

    # --- culmination: finest sample around the best coarse sample, then a parabola through 3
    best = np.concatenate(cand_best).astype(np.int64)
    lo = t[np.clip(best - 1, 0, n_t - 1)]
    hi = t[np.clip(best + 1, 0, n_t - 1)]
    grid = fine_grid(lo, hi)
    el = elevation_grid(grid)
    j = np.argmax(el, axis=1)
    rows = np.arange(n)
    jm, jp = np.clip(j - 1, 0, grid.shape[1] - 1), np.clip(j + 1, 0, grid.shape[1] - 1)
    y0, y1, y2 = el[rows, jm], el[rows, j], el[rows, jp]
    denom = y0 - 2 * y1 + y2
    interior = (jm < j) & (jp > j) & (grid[rows, jp] - grid[rows, j] == fine_ns) & \
        (grid[rows, j] - grid[rows, jm] == fine_ns) & (denom < 0)
    shift = np.where(interior, 0.5 * (y0 - y2) / np.where(denom < 0, denom, -1.0), 0.0)
    t_max = grid[rows, j] + np.round(shift * fine_ns).astype(np.int64)
    el_max = np.where(interior, y1 - 0.25 * (y0 - y2) * shift, y1)
    keep = ~grazing | (el_max >= min_elevation_deg)
    # --- rise and set: the threshold crossing on a fine grid, linearly interpolated
    run_first = np.where(grazing, peak_idx, first)
    run_last = np.where(grazing, peak_idx, last)
    rise_lo = np.where(grazing, t[np.clip(peak_idx - 1, 0, n_t - 1)], t[np.clip(run_first - 1, 0, n_t - 1)])
    rise_hi = np.where(grazing, t_max, t[run_first])
    set_lo = np.where(grazing, t_max, t[run_last])
    set_hi = np.where(grazing, t[np.clip(peak_idx + 1, 0, n_t - 1)], t[np.clip(run_last + 1, 0, n_t - 1)])
    rise_open = ~grazing & (run_first == 0)  # above the threshold at the start
    set_open = ~grazing & (run_last == n_t - 1)
    rise = _crossing(fine_grid(rise_lo, rise_hi), elevation_grid, min_elevation_deg, rising=True)
    set_ = _crossing(fine_grid(set_lo, set_hi), elevation_grid, min_elevation_deg, rising=False)
    rise = np.where(rise_open, 0, rise)
    set_ = np.where(set_open, duration_ns, set_)
    out = np.zeros(int(keep.sum()), PASS_DTYPE)
    out["satellite"] = sat[keep]
    out["rise_ns"] = rise[keep]
    out["culmination_ns"] = t_max[keep]
    out["set_ns"] = set_[keep]
    out["max_elevation_deg"] = el_max[keep]
    return np.sort(out, order=["rise_ns", "satellite"])


def _crossing(grid, elevation_grid, threshold, rising: bool) -> np.ndarray:
    """Time (ns) where elevation crosses ``threshold`` along each row of ``grid``, linearly
    interpolated between the two fine samples around it."""
    el = elevation_grid(grid) - threshold
    above = el >= 0
    k = grid.shape[1]
    # first sample at/above (rising) or first below after being above (setting)
    idx = np.argmax(above, axis=1) if rising else np.argmax(~above & (np.arange(k) > 0), axis=1)
    idx = np.clip(idx, 1, k - 1)
    rows = np.arange(grid.shape[0])
    t0, t1 = grid[rows, idx - 1].astype(np.float64), grid[rows, idx].astype(np.float64)
    e0, e1 = el[rows, idx - 1], el[rows, idx]
    frac = np.where(e1 != e0, e0 / np.where(e1 != e0, e0 - e1, 1.0), 0.0)
    return np.round(t0 + np.clip(frac, 0.0, 1.0) * (t1 - t0)).astype(np.int64)


def _subset(constellation: Constellation, sats: np.ndarray) -> Constellation:
    """A view of some satellites with the same epoch (for chunked propagation)."""
    if sats.size == constellation.n_satellites:
        return constellation
    return Constellation(
        epoch=constellation.epoch, satrecs=tuple(constellation.satrecs[i] for i in sats),
        names=tuple(constellation.names[i] for i in sats), shell=constellation.shell[sats],
        plane=constellation.plane[sats], slot=constellation.slot[sats],
        arg_latitude_deg=constellation.arg_latitude_deg[sats], shells=constellation.shells,
        spec=constellation.spec,
    )
