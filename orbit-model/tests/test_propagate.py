"""Propagation against sgp4's scalar Satrec.sgp4 and Skyfield's EarthSatellite and frames."""

import datetime as dt

import numpy as np
import pytest
from sgp4.api import WGS72, Satrec, jday
from skyfield.api import EarthSatellite, wgs84
from skyfield.framelib import itrs

from orbit_model import Constellation, itrs_positions_km, propagate
from orbit_model.kernels import geodetic_from_itrs
from orbit_model.propagate import teme_to_itrs_matrices, teme_to_itrs_matrices_skyfield
from orbit_model.timebase import skyfield_times, timescale

EPOCH = "2022-09-14T00:00:00Z"
S = 1_000_000_000
MM_KM = 1e-6
M_KM = 1e-3


@pytest.fixture(scope="module")
def walker():
    return Constellation.from_spec("walker-star:150/10/1:500:87", epoch=EPOCH)


def test_positions_equal_scalar_sgp4_to_a_millimetre(walker):
    t_ns = np.array([0, 7 * S, 3600 * S + 123_456_789, 86_400 * S], dtype=np.int64)
    eph = propagate(walker, t_ns)
    assert eph.position_km.shape == (150, 4, 3) and eph.velocity_km_s.shape == (150, 4, 3)
    for i in (0, 17, 149):
        for j, t in enumerate(t_ns):
            jd, fr = jday(2022, 9, 14, 0, 0, 0)
            err, r, v = walker.satrecs[i].sgp4(jd, fr + t / (86_400 * S))
            assert err == 0
            np.testing.assert_allclose(eph.position_km[i, j], r, atol=MM_KM)
            np.testing.assert_allclose(eph.velocity_km_s[i, j], v, atol=1e-9)


def test_earth_fixed_positions_and_velocities_match_skyfield(walker):
    t_ns = np.arange(0, 3 * 3600 * S, 600 * S)
    eph = propagate(walker, t_ns, frame="itrs")
    sat = EarthSatellite.from_satrec(walker.satrecs[42], timescale())
    pos, vel = sat.at(skyfield_times(walker.epoch, t_ns)).frame_xyz_and_velocity(itrs)
    np.testing.assert_allclose(eph.position_km[42], pos.km.T, atol=MM_KM)
    # Skyfield's ITRS velocity also carries the slow nutation rate: 1 mm/s
    np.testing.assert_allclose(eph.velocity_km_s[42], vel.km_per_s.T, atol=1e-6)


def test_the_gmst_rotation_is_skyfields_frame_product(walker):
    t_ns = np.arange(0, 86_400 * S, 3600 * S)
    np.testing.assert_allclose(teme_to_itrs_matrices(walker, t_ns)[0],
                               teme_to_itrs_matrices_skyfield(walker, t_ns), atol=1e-13)


def test_hermite_interpolation_is_within_a_metre_of_direct_sgp4(walker):
    t_ns = np.arange(0, 2 * 3600 * S + 1, 10 * S)
    direct = itrs_positions_km(walker, t_ns, knot_ns=None)
    interpolated = itrs_positions_km(walker, t_ns)  # 60 s knots by default
    assert np.max(np.linalg.norm(direct - interpolated, axis=-1)) < 1 * M_KM


def test_geodetic_coordinates_match_skyfield_wgs84(walker):
    t_ns = np.arange(0, 3600 * S, 300 * S)
    position = itrs_positions_km(walker, t_ns, knot_ns=None)
    lat, lon, height = geodetic_from_itrs(position[5])
    sat = EarthSatellite.from_satrec(walker.satrecs[5], timescale())
    where = wgs84.geographic_position_of(sat.at(skyfield_times(walker.epoch, t_ns)))
    np.testing.assert_allclose(lat, where.latitude.degrees, atol=1e-7)
    np.testing.assert_allclose(lon, where.longitude.degrees, atol=1e-7)
    np.testing.assert_allclose(height, where.elevation.km, atol=MM_KM)


def test_a_failing_element_set_gives_nan_rows_and_error_codes_not_an_exception(caplog):
    good = Constellation.from_spec("walker:2/1/0:500:50", epoch=EPOCH)
    doomed = Satrec()
    # e = 0.5 at ~1,000 km mean altitude: perigee inside the Earth, SGP4 error 6 (decayed)
    epoch_days = (dt.datetime(2022, 9, 14) - dt.datetime(1949, 12, 31)).days
    doomed.sgp4init(WGS72, "i", 9, float(epoch_days), 0.0, 0.0, 0.0, 0.5, 0.0, 0.9, 0.0,
                    0.07, 0.0)
    mixed = Constellation(epoch=good.epoch, satrecs=good.satrecs + (doomed,),
                          names=good.names + ("doomed",), shell=[0, 0, -1], plane=[0, 0, -1],
                          slot=[0, 1, -1], arg_latitude_deg=[0, 180, 0], shells=good.shells,
                          spec="mixed")
    eph = propagate(mixed, np.array([0, 3600 * S]))
    assert eph.error[2].any() and not eph.error[:2].any()
    assert np.isnan(eph.position_km[2][eph.error[2] != 0]).all()
    assert np.isfinite(eph.position_km[:2]).all()
    assert eph.failed_satellites.tolist() == [2]
    assert "doomed" in caplog.text


def test_times_must_be_integer_nanoseconds(walker):
    with pytest.raises(ValueError, match="integer nanoseconds"):
        propagate(walker, np.array([0.5]))


def test_a_kept_block_is_the_direct_propagation_to_the_bit_and_is_not_propagated_twice(walker):
    from orbit_model import teme_positions_km
    from orbit_model.kernels import BLOCK_STEPS, itrs_block_km, teme_block_km
    from orbit_model.propagate import gmst_angles_rad

    t_ns = np.arange(BLOCK_STEPS, 2 * BLOCK_STEPS, dtype=np.int64) * 10 * S
    teme, theta = teme_block_km(walker, t_ns)
    assert np.array_equal(teme, teme_positions_km(walker, t_ns), equal_nan=True)
    assert np.array_equal(theta, gmst_angles_rad(walker, t_ns))
    # the Earth-fixed block equals itrs_positions_km (held to Skyfield above), not nearly
    assert np.array_equal(itrs_block_km(walker, t_ns), itrs_positions_km(walker, t_ns))
    again, _ = teme_block_km(walker, t_ns)
    assert again is teme                         # kept: no second SGP4
    # another constellation of the same size at the same times keeps its own block
    other = Constellation.from_spec("walker-star:150/10/1:600:87", epoch=EPOCH)
    assert not np.allclose(teme_block_km(other, t_ns)[0], teme)
