"""Ground visibility and passes against Skyfield: wgs84 places, altaz, find_events."""

import numpy as np
import pytest
from skyfield.api import EarthSatellite, wgs84

from orbit_model import Constellation, GroundPoints, elevations_deg, find_passes
from orbit_model.timebase import skyfield_times, timescale

EPOCH = "2022-09-14T00:00:00Z"
S = 1_000_000_000
ONE_SECOND_NS = S
MIN_EL = 10.0


@pytest.fixture(scope="module")
def walker():
    return Constellation.from_spec("walker-star:150/10/1:500:87", epoch=EPOCH)


def test_ground_points_sit_where_skyfield_puts_them():
    lat, lon, height = [59.9, -33.9, 0.0, 89.5], [10.7, 151.2, -179.9, 45.0], [100.0, 0.0, 0.0, 2800.0]
    points = GroundPoints.from_degrees(lat, lon, height)
    for i in range(4):
        expected = wgs84.latlon(lat[i], lon[i], elevation_m=height[i]).itrs_xyz.km
        np.testing.assert_allclose(points.itrs_km[i], expected, atol=1e-6)  # 1 mm


def test_elevations_match_skyfield_altaz(walker):
    t_ns = np.arange(0, 3600 * S, 120 * S)
    points = GroundPoints.from_degrees([59.9, -10.0], [10.7, 100.0])
    el = elevations_deg(walker, points, t_ns)
    assert el.shape == (2, 150, t_ns.size)
    times = skyfield_times(walker.epoch, t_ns)
    for i in (3, 77):
        sat = EarthSatellite.from_satrec(walker.satrecs[i], timescale())
        alt = (sat - wgs84.latlon(-10.0, 100.0)).at(times).altaz()[0].degrees
        np.testing.assert_allclose(el[1, i], alt, atol=1e-6)


@pytest.mark.parametrize(("spec", "lat", "lon", "min_el", "hours"), [
    ("walker-star:150/10/1:500:87", 59.9, 10.7, MIN_EL, 3),
    # the edge of a 53-deg shell at 0 deg: many grazing passes; and the antimeridian
    ("walker:60/6/2:550:53", 60.5, -150.0, 0.0, 4),
    ("walker:60/6/2:550:53", -20.0, 179.9, 5.0, 4),
])
def test_passes_match_skyfield_find_events_within_a_second(spec, lat, lon, min_el, hours):
    walker = Constellation.from_spec(spec, epoch=EPOCH)
    duration = hours * 3600 * S
    passes = find_passes(walker, lat, lon, duration, min_elevation_deg=min_el)
    ts, place = timescale(), wgs84.latlon(lat, lon)
    t0, t1 = skyfield_times(walker.epoch, np.array([0, duration]))
    compared = 0
    for i in np.unique(passes["satellite"]):
        sat = EarthSatellite.from_satrec(walker.satrecs[i], ts)
        t, events = sat.find_events(place, t0, t1, altitude_degrees=min_el)
        seconds = (t.tt - t0.tt) * 86_400.0
        mine = passes[passes["satellite"] == i]
        rises = mine["rise_ns"][mine["rise_ns"] > 0] / S
        sets = mine["set_ns"][mine["set_ns"] < duration] / S
        np.testing.assert_allclose(rises, seconds[events == 0], atol=1.0)
        np.testing.assert_allclose(sets, seconds[events == 2], atol=1.0)
        compared += rises.size + sets.size
    # and no satellite with a Skyfield pass is missing from ours
    for i in sorted(set(range(walker.n_satellites)) - set(passes["satellite"].tolist()))[:40]:
        sat = EarthSatellite.from_satrec(walker.satrecs[i], ts)
        assert len(sat.find_events(place, t0, t1, altitude_degrees=min_el)[1]) == 0
    assert compared > 20


def test_refined_events_sit_on_the_threshold_to_a_thousandth_of_a_degree(walker):
    """Skyfield's find_events stops at half a second; our events are finer than that."""
    duration = 2 * 3600 * S
    passes = find_passes(walker, -33.9, 151.2, duration, min_elevation_deg=MIN_EL)
    inner = passes[(passes["rise_ns"] > 0) & (passes["set_ns"] < duration)]
    place, ts = wgs84.latlon(-33.9, 151.2), timescale()
    for p in inner[:15]:
        sat = EarthSatellite.from_satrec(walker.satrecs[p["satellite"]], ts)
        t = skyfield_times(walker.epoch, np.array([p["rise_ns"], p["set_ns"], p["culmination_ns"]]))
        alt = (sat - place).at(t).altaz()[0].degrees
        assert alt[:2] == pytest.approx([MIN_EL, MIN_EL], abs=1e-3)
        assert alt[2] == pytest.approx(p["max_elevation_deg"], abs=1e-3)
        around = skyfield_times(walker.epoch, p["culmination_ns"] + np.array([-ONE_SECOND_NS, ONE_SECOND_NS]))
        assert (sat - place).at(around).altaz()[0].degrees.max() <= p["max_elevation_deg"] + 1e-3


def test_passes_cut_by_the_window_start_at_zero_and_end_at_the_end(walker):
    duration = 1800 * S
    passes = find_passes(walker, 59.9, 10.7, duration, min_elevation_deg=MIN_EL)
    el = elevations_deg(walker, GroundPoints.from_degrees(59.9, 10.7), np.array([0, duration]))[0]
    assert sorted(passes["satellite"][passes["rise_ns"] == 0]) == sorted(np.flatnonzero(el[:, 0] >= MIN_EL))
    assert sorted(passes["satellite"][passes["set_ns"] == duration]) == \
        sorted(np.flatnonzero(el[:, 1] >= MIN_EL))


def test_bad_places_and_elevations_name_the_value(walker):
    with pytest.raises(ValueError, match="latitude 91.0 deg"):
        GroundPoints.from_degrees(91, 0)
    with pytest.raises(ValueError, match="minimum elevation 95"):
        find_passes(walker, 0, 0, S, min_elevation_deg=95)
