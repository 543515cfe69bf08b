"""Satellite footprints on a spherical Earth and the population inside them.

A satellite at altitude h serves the ground points that see it at elevation
>= el_min. On a sphere of radius Re that region is a spherical cap around the
sub-satellite point whose Earth central angle is

    lambda = arccos(Re cos(el_min) / (Re + h)) - el_min

(triangle Earth centre - ground point - satellite: the angle at the ground
point is 90 deg + el_min, so by the law of sines the nadir angle is
eta = arcsin(Re cos(el_min) / (Re + h)) and lambda = 90 deg - el_min - eta).
For Fongen's 500 km and el_min = 10 deg: lambda = 14.05 deg, 1,564 km of ground
arc. Re is ``EARTH_RADIUS_KM`` (6378.137 km, as the Walker orbits use).

The footprint population is ``PopulationGrid.population_in_cap`` over those
caps, vectorised over (n_sats, n_times) sub-satellite points: it is the load
measure the simulation can use per satellite and time step.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from orbit_model.constants import EARTH_RADIUS_KM
from orbit_model.population import PopulationGrid, _check_latitudes

__all__ = ["footprint_central_angle_rad", "footprint_radius_km", "footprint_population",
           "footprint_outline_deg", "destination_point_deg", "FootprintLoad", "footprint_load"]

log = logging.getLogger(__name__)

# Fewer, larger propagation chunks are much faster (frame rotations and Hermite
# knots per chunk): 2e6 positions = 48 MB of float64 xyz.
_POSITIONS_PER_CHUNK = 2_000_000


@dataclass(frozen=True, eq=False)
class FootprintLoad:
    """Footprint population of every satellite at every time: the load measure.

    ``t_ns`` (n_times,) int64 from the constellation epoch; ``population``,
    ``sub_lat_deg``, ``sub_lon_deg`` (n_sats, n_times) float64 (NaN where SGP4
    failed); ``central_angle_rad`` (n_sats,) footprint size of each satellite,
    from its shell's nominal altitude and ``min_elevation_deg``.
    """

    t_ns: np.ndarray
    population: np.ndarray
    sub_lat_deg: np.ndarray
    sub_lon_deg: np.ndarray
    central_angle_rad: np.ndarray
    min_elevation_deg: float


def footprint_load(grid: PopulationGrid, constellation, t_ns, min_elevation_deg: float,
                   chunk_steps: int | None = None) -> FootprintLoad:
    """Footprint populations for a ``Constellation`` over ``t_ns`` (int64 ns from its epoch).

    Sub-satellite points are WGS84 geodetic (as the grid's latitudes are); the cap
    radius uses each shell's nominal altitude (a TLE shell: its median altitude),
    so that one satellite's footprint keeps its size over the orbit as in Fongen.
    Works in time chunks of ``chunk_steps`` (default: about 2 million satellite
    positions per chunk) to bound the propagation memory.
    """
    from orbit_model.propagate import geodetic_from_itrs, iter_itrs_chunks

    t_ns = np.asarray(t_ns, dtype=np.int64).reshape(-1)
    altitude_km = np.array([constellation.shells[i].altitude_km for i in constellation.shell],
                           dtype=np.float64)
    angle = np.asarray(footprint_central_angle_rad(altitude_km, min_elevation_deg),
                       dtype=np.float64).reshape(-1)
    n = constellation.n_satellites
    if chunk_steps is None:
        chunk_steps = max(360, _POSITIONS_PER_CHUNK // max(n, 1))
    lat = np.empty((n, t_ns.size))
    lon = np.empty((n, t_ns.size))
    for part, position_km in iter_itrs_chunks(constellation, t_ns, chunk_steps=chunk_steps):
        lat[:, part], lon[:, part], _ = geodetic_from_itrs(position_km)
    population = footprint_population(grid, lat, lon, altitude_km[:, None], min_elevation_deg)
    log.debug("footprint load: %d satellites x %d times", n, t_ns.size)
    return FootprintLoad(t_ns, population, lat, lon, angle, float(min_elevation_deg))


def footprint_central_angle_rad(altitude_km, min_elevation_deg,
                                earth_radius_km: float = EARTH_RADIUS_KM):
    """Earth central angle (radians) of the footprint; inputs broadcast."""
    h = np.asarray(altitude_km, dtype=np.float64)
    el_deg = np.asarray(min_elevation_deg, dtype=np.float64)
    bad = ~(h > 0) | ~np.isfinite(h)
    if np.any(bad):
        raise ValueError(f"altitude_km must be positive, got {h[bad].flat[0].item()!r}")
    bad = ~((el_deg >= 0) & (el_deg < 90))
    if np.any(bad):
        raise ValueError(f"min_elevation_deg must be in [0, 90), got {el_deg[bad].flat[0].item()!r}")
    el = np.radians(el_deg)
    lam = np.arccos(earth_radius_km * np.cos(el) / (earth_radius_km + h)) - el
    return float(lam) if lam.ndim == 0 else lam


def footprint_radius_km(altitude_km, min_elevation_deg,
                        earth_radius_km: float = EARTH_RADIUS_KM):
    """Footprint radius as great-circle distance on the ground (km)."""
    return footprint_central_angle_rad(altitude_km, min_elevation_deg,
                                       earth_radius_km) * earth_radius_km


def footprint_population(grid: PopulationGrid, sub_lat_deg, sub_lon_deg, altitude_km,
                         min_elevation_deg, method: str = "auto"):
    """Population inside the footprints centred on the sub-satellite points.

    ``sub_lat_deg``/``sub_lon_deg`` are e.g. (n_sats, n_times); ``altitude_km`` is a
    scalar, (n_sats, 1) or the full shape. NaN positions (a failed SGP4 element)
    give NaN, not an exception. Returns float64 of the broadcast shape.
    """
    lat, lon, ang = np.broadcast_arrays(
        np.asarray(sub_lat_deg, dtype=np.float64), np.asarray(sub_lon_deg, dtype=np.float64),
        np.asarray(footprint_central_angle_rad(altitude_km, min_elevation_deg)))
    ok = np.isfinite(lat) & np.isfinite(lon)
    out = np.full(lat.shape, np.nan)
    out[ok] = grid.population_in_cap(lat[ok], lon[ok], ang[ok], method=method)
    return float(out) if out.ndim == 0 else out


def destination_point_deg(lat_deg, lon_deg, central_angle_rad, bearing_deg):
    """The point at ``central_angle_rad`` along the great circle leaving (lat, lon) at
    ``bearing_deg`` (clockwise from north); inputs broadcast. Longitudes in [-180, 180)."""
    phi1 = np.radians(np.asarray(lat_deg, dtype=np.float64))
    lam1 = np.radians(np.asarray(lon_deg, dtype=np.float64))
    d = np.asarray(central_angle_rad, dtype=np.float64)
    brg = np.radians(np.asarray(bearing_deg, dtype=np.float64))
    sin_phi2 = np.sin(phi1) * np.cos(d) + np.cos(phi1) * np.sin(d) * np.cos(brg)
    phi2 = np.arcsin(np.clip(sin_phi2, -1.0, 1.0))
    lam2 = lam1 + np.arctan2(np.sin(brg) * np.sin(d) * np.cos(phi1),
                             np.cos(d) - np.sin(phi1) * sin_phi2)
    return np.degrees(phi2), (np.degrees(lam2) + 180.0) % 360.0 - 180.0


def footprint_outline_deg(lat_deg, lon_deg, central_angle_rad, n_points: int = 73):
    """Outline of each cap: (lat, lon) arrays of shape (..., n_points), the first and
    last point equal (closed ring), for drawing."""
    lat = np.asarray(lat_deg, dtype=np.float64)
    _check_latitudes(lat)
    bearings = np.linspace(0.0, 360.0, n_points)
    return destination_point_deg(lat[..., None], np.asarray(lon_deg)[..., None],
                                 np.asarray(central_angle_rad)[..., None], bearings)
