import datetime as dt

import numpy as np
import pytest

from satpage.geometry import SatelliteSet
from satpage.scenario import load_scenario, shipped_scenario, with_overrides
from satpage.workload import build_trace, make_sessions, serving_schedule, zipf_cdf

EPOCH = dt.datetime(2023, 6, 1, tzinfo=dt.UTC)
STEP_NS = 10 * 10**9
PLACES = np.array([[59.9, 10.7], [-6.2, 106.8], [40.7, -74.0], [0.0, 0.0], [-33.9, 151.2],
                   [78.2, 15.6]])


@pytest.mark.parametrize("sticky", [False, True])
def test_the_schedule_agrees_with_orbit_models_handover_schedule(sticky):
    handover = pytest.importorskip("orbit_model.handover")
    sats = SatelliteSet("walker-star:150/10/1:500:87", EPOCH)
    n = 360                                   # one hour of 10 s steps
    t = np.arange(n, dtype=np.int64) * STEP_NS
    pos = sats.positions_km(t)
    lat, lon = PLACES[:, 0], PLACES[:, 1]
    offs, ours, unc = serving_schedule(pos, lat, lon, np.zeros(len(lat), np.int64),
                                       np.full(len(lat), n - 1), 10.0, "highest-elevation",
                                       sticky)
    from orbit_model.visibility import GroundPoints
    sched = handover.handover_schedule(sats._constellation, GroundPoints.from_degrees(lat, lon),
                                       t, min_elevation_deg=10.0, policy="highest",
                                       sticky=sticky)
    theirs = sched.serving_at(np.repeat(np.arange(len(lat)), n), np.tile(t, len(lat)))
    covered = theirs >= 0
    assert unc == int((~covered).sum())
    # SGP4 through the same propagation: positions agree to interpolation error, so the
    # server differs only at near-ties of elevation between two satellites
    agree = np.mean(ours[covered] == theirs[covered])
    assert agree > 0.995, agree


def test_sessions_are_sorted_by_start_and_fit_inside_the_span():
    sc = with_overrides(load_scenario(shipped_scenario("default")), {"sessions.count": 500})
    ss = make_sessions(sc)
    assert np.all(np.diff(ss["start_ns"]) >= 0)
    assert ss["start_ns"].min() >= 0 and ss["end_ns"].max() <= sc.duration_ns
    assert np.all(ss["end_ns"] > ss["start_ns"])
    # population-weighted: South and East Asia hold more clients than the Pacific
    asia = np.mean((ss["lon_deg"] > 60) & (ss["lon_deg"] < 150) & (ss["lat_deg"] > -10))
    assert asia > 0.35


def test_the_session_table_does_not_depend_on_the_chunk_size():
    sc = with_overrides(load_scenario(shipped_scenario("default")), {"sessions.count": 100})
    a = make_sessions(sc)
    b = make_sessions(with_overrides(sc, {"run.chunk_sessions": 7}))
    np.testing.assert_array_equal(a, b)


def test_zipf_pages_follow_the_zipf_law():
    sc = with_overrides(load_scenario(shipped_scenario("paper-mimic")),
                        {"sessions.count": 50, "workload.pages": 20})
    sats = SatelliteSet(sc.constellation.spec, sc.epoch)
    ct = build_trace(sc, sats, make_sessions(sc), 0, 0)
    counts = np.bincount(ct.trace.access_page, minlength=20)
    want = np.diff(np.concatenate([[0], zipf_cdf(20, 1.0)])) * ct.trace.n_accesses
    chi2 = np.sum((counts - want) ** 2 / want)
    assert chi2 < 45.3                    # chi-square 19 dof, p = 0.001
    assert ct.trace.n_accesses == 50 * 6 * 1000


def test_a_trail_visits_consecutive_slots_of_one_plane():
    sc = with_overrides(load_scenario(shipped_scenario("paper-mimic")),
                        {"sessions.count": 3, "handover.trail_plane": 2})
    sats = SatelliteSet(sc.constellation.spec, sc.epoch)
    tr = build_trace(sc, sats, make_sessions(sc), 0, 0).trace
    np.testing.assert_array_equal(tr.visit_satellite[:6], 2 * 15 + np.arange(6))
    assert np.all(np.diff(tr.visit_offsets) == 6)
