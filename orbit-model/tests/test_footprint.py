"""Footprints: the central-angle formula against an independent vector computation
of the elevation at the footprint edge, and footprint populations against the
brute-force haversine sum."""

import numpy as np
import pytest

from orbit_model import (
    PopulationGrid,
    footprint_load,
    footprint_outline_deg,
    footprint_population,
    footprint_radius_km,
)
from orbit_model.constants import EARTH_RADIUS_KM
from orbit_model.kernels import footprint_central_angle_rad

ELEVATION_TOLERANCE_DEG = 1e-9
EDGE_TOLERANCE_KM = 1e-6  # a micrometre-scale slack on the outline distance


def elevation_deg_from_vectors(central_angle_rad, altitude_km, re=EARTH_RADIUS_KM):
    """Elevation of a satellite above the local horizontal of a ground point at the
    given central angle from the sub-satellite point (plain 3-D vectors)."""
    sat = np.array([0.0, 0.0, re + altitude_km])
    ground = re * np.array([np.sin(central_angle_rad), 0.0, np.cos(central_angle_rad)])
    up = ground / np.linalg.norm(ground)
    los = sat - ground
    return np.degrees(np.arcsin(los @ up / np.linalg.norm(los)))


def haversine_km(lat1, lon1, lat2, lon2, re=EARTH_RADIUS_KM):
    p1, p2 = np.radians(lat1), np.radians(lat2)
    h = (np.sin((p2 - p1) / 2) ** 2
         + np.cos(p1) * np.cos(p2) * np.sin(np.radians(lon2 - lon1) / 2) ** 2)
    return 2 * re * np.arcsin(np.sqrt(h))


@pytest.mark.parametrize(("altitude_km", "min_elevation_deg"),
                         [(500.0, 10.0), (550.0, 25.0), (1200.0, 0.0), (35786.0, 5.0)])
def test_the_footprint_edge_sees_the_satellite_at_the_minimum_elevation(
        altitude_km, min_elevation_deg):
    lam = footprint_central_angle_rad(altitude_km, min_elevation_deg)
    assert elevation_deg_from_vectors(lam, altitude_km) == pytest.approx(
        min_elevation_deg, abs=ELEVATION_TOLERANCE_DEG)
    # just inside the edge the satellite is higher, just outside lower
    assert elevation_deg_from_vectors(lam * 0.99, altitude_km) > min_elevation_deg
    assert elevation_deg_from_vectors(lam * 1.01, altitude_km) < min_elevation_deg


def test_central_angles_broadcast_over_altitudes_and_elevations():
    alt = np.array([[400.0], [800.0]])
    el = np.array([0.0, 10.0, 30.0])
    lam = footprint_central_angle_rad(alt, el)
    assert lam.shape == (2, 3)
    for i in range(2):
        for j in range(3):
            assert lam[i, j] == footprint_central_angle_rad(alt[i, 0], el[j])
    assert footprint_radius_km(500.0, 10.0) == pytest.approx(
        footprint_central_angle_rad(500.0, 10.0) * EARTH_RADIUS_KM)


def test_footprint_population_is_the_circle_of_the_footprint_radius():
    grid = PopulationGrid.default()
    rng = np.random.default_rng(61)
    lat = rng.uniform(-80, 80, (3, 20))
    lon = rng.uniform(-180, 180, (3, 20))
    got = footprint_population(grid, lat, lon, 500.0, 10.0)
    assert got.shape == (3, 20)
    radius = footprint_radius_km(500.0, 10.0)
    for (i, j), value in np.ndenumerate(got):
        d = haversine_km(lat[i, j], lon[i, j], grid.lat_centres_deg[:, None],
                         grid.lon_centres_deg[None, :])
        assert value == pytest.approx(grid.counts[d <= radius].sum(), rel=1e-12, abs=1e-3)


def test_a_nan_position_gives_nan_population_and_not_an_error():
    grid = PopulationGrid.default()
    got = footprint_population(grid, [[0.0, np.nan]], [[10.0, np.nan]], 550.0, 25.0)
    assert np.isnan(got[0, 1]) and got[0, 0] >= 0


def test_the_outline_lies_at_the_footprint_radius_and_is_closed():
    lam = footprint_central_angle_rad(500.0, 10.0)
    lat, lon = footprint_outline_deg(np.array([60.0, -6.0]), np.array([170.0, 106.0]), lam, 37)
    assert lat.shape == (2, 37)
    d = haversine_km(np.array([[60.0], [-6.0]]), np.array([[170.0], [106.0]]), lat, lon)
    np.testing.assert_allclose(d, lam * EARTH_RADIUS_KM, atol=EDGE_TOLERANCE_KM)
    assert np.all((lon >= -180) & (lon < 180))
    np.testing.assert_allclose(lat[:, 0], lat[:, -1])


@pytest.mark.parametrize(("alt", "el", "match"), [
    (-5.0, 10.0, "altitude_km must be positive.*-5"),
    (500.0, 90.0, r"min_elevation_deg must be in \[0, 90\).*90"),
    (500.0, -1.0, r"min_elevation_deg must be in \[0, 90\).*-1"),
])
def test_impossible_footprints_quote_the_value(alt, el, match):
    with pytest.raises(ValueError, match=match):
        footprint_central_angle_rad(alt, el)


def test_footprint_load_follows_skyfields_subsatellite_points():
    from skyfield.api import EarthSatellite, wgs84

    from orbit_model import Constellation
    from orbit_model.timebase import skyfield_times, timescale

    grid = PopulationGrid.default()
    cons = Constellation.from_spec("walker-star:12/3/1:500:87", epoch="2023-06-01T00:00:00Z")
    t_ns = np.arange(0, 6000, 600, dtype=np.int64) * 10**9
    load = footprint_load(grid, cons, t_ns, 10.0)
    assert load.population.shape == (12, t_ns.size)
    times = skyfield_times(cons.epoch, t_ns)
    radius_km = footprint_radius_km(500.0, 10.0)
    for i in (0, 5, 11):
        sat = EarthSatellite.from_satrec(cons.satrecs[i], timescale())
        lat, lon = wgs84.latlon_of(sat.at(times))
        # 1e-4 deg is 11 m on the ground: the propagation's interpolation is sub-metre
        np.testing.assert_allclose(load.sub_lat_deg[i], lat.degrees, atol=1e-4)
        dlon = (load.sub_lon_deg[i] - lon.degrees + 180.0) % 360.0 - 180.0
        np.testing.assert_allclose(dlon, 0.0, atol=1e-4)
        for j in (0, 4, 9):
            d = haversine_km(lat.degrees[j], lon.degrees[j], grid.lat_centres_deg[:, None],
                             grid.lon_centres_deg[None, :])
            assert load.population[i, j] == pytest.approx(grid.counts[d <= radius_km].sum(),
                                                          rel=1e-6, abs=1)
