"""Scheduled reallocation in sim: the scenario keys, the shipped `starlink-15s` scenario,
the sessions' visits (orbit_model's schedule, joined), `satpage orbit handovers
--interval-s`, and bad settings exiting 2 with the value."""

import json
import subprocess
import sys

import numpy as np
import pytest
from typer.testing import CliRunner

from orbit_model import (
    Constellation,
    GroundPoints,
    handover_schedule,
    session_schedule,
    step_times_ns,
)
from satpage.cli import app
from satpage.geometry import SatelliteSet
from satpage.scenario import load_scenario, parse_scenario, shipped_scenario, with_overrides
from satpage.workload import _visits_of, session_visits, step_times

S = 1_000_000_000


def test_the_keys_are_left_out_of_a_record_without_a_schedule():
    sc = parse_scenario({})
    assert "interval_s" not in sc.to_dict()["handover"]
    on = with_overrides(sc, {"handover.interval_s": 30.0, "handover.phase_s": 10.0})
    assert on.to_dict()["handover"] | {} == dict(sc.to_dict()["handover"], interval_s=30.0,
                                                phase_s=10.0)
    assert with_overrides(on, {"handover.interval_s": 0.0, "handover.phase_s": 0.0}) \
        .to_dict() == sc.to_dict()


def test_the_shipped_scenario_reallocates_every_15_s_at_second_12_on_3_s_steps():
    sc = load_scenario(shipped_scenario("starlink-15s"))
    assert (sc.handover.interval_s, sc.handover.phase_s, sc.time.step_s) == (15.0, 12.0, 3.0)
    assert sc.constellation.spec == "starlink-gen1" and sc.clients.placement == "population"
    assert (sc.sessions.count, sc.time.duration_s) == (10_000, 86_400.0)


@pytest.mark.parametrize("overrides, message", [
    ({"handover.interval_s": 15, "handover.phase_s": 12},
     r"handover.interval_s = 15.0: must be a multiple of time.step_s = 10.0"),
    ({"handover.interval_s": 20, "handover.phase_s": 25}, r"handover.phase_s = 25.0: must be in"),
    ({"handover.phase_s": 10}, r"handover.phase_s = 10.0 needs handover.interval_s"),
    ({"handover.interval_s": -10}, r"handover.interval_s = -10.0: must not be negative"),
    ({"handover.interval_s": 20, "handover.policy": "trail"}, r"`trail` policy has no reallocation"),
])
def test_bad_reallocation_keys_are_named(overrides, message):
    with pytest.raises(ValueError, match=message):
        with_overrides(parse_scenario({}), overrides)


@pytest.mark.integration
def test_a_bad_reallocation_key_exits_2_naming_the_value():
    result = subprocess.run([sys.executable, "-m", "satpage.cli", "compare", "--sessions", "2",
                             "--set", "handover.interval_s=15", "--set", "handover.phase_s=12"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stderr
    assert "handover.interval_s = 15.0: must be a multiple of time.step_s = 10.0" in \
        " ".join(result.stderr.split())


def test_sessions_visits_are_orbit_models_reallocated_schedule():
    sc = with_overrides(parse_scenario({}), {"time.step_s": 5.0, "handover.interval_s": 15.0,
                                             "handover.phase_s": 5.0,
                                             "handover.min_elevation_deg": 25.0})
    sats = SatelliteSet(sc.constellation.spec, sc.epoch)
    t_ns = step_times(sc)
    rng = np.random.default_rng(5)
    lat, lon = rng.uniform(-60, 60, 40), rng.uniform(-180, 180, 40)
    first = rng.integers(0, 2000, 40)
    last = first + rng.integers(10, 400, 40)
    ground = GroundPoints.from_degrees(lat, lon)
    kw = {"min_elevation_deg": 25.0, "policy": "highest", "interval_ns": 15 * S, "phase_ns": 5 * S}
    sch = session_schedule(sats.constellation, ground, t_ns, first, last, **kw)
    # windows that see a satellite above the mask (the others take sim's own fallback)
    seen = np.add.reduceat((sch.satellite >= 0).astype(int), sch.offsets[:-1]) > 0
    assert seen.sum() >= 30
    lat, lon, first, last = lat[seen], lon[seen], first[seen], last[seen]
    sch = session_schedule(sats.constellation, GroundPoints.from_degrees(lat, lon), t_ns, first,
                           last, **kw)
    assert sch.forced.any()  # 150 satellites at 25 deg: outages, so forced picks
    got = session_visits(sats, t_ns, lat, lon, first, last, 25.0, "highest-elevation", False,
                         15 * S, 5 * S)
    want = _visits_of(sch.offsets, sch.time_ns, sch.satellite, t_ns, first, last)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(a, b)
    # the visits change only at instants, at session starts, or when forced
    instant = (t_ns - 5 * S) % (15 * S) == 0
    forced_steps = set(np.searchsorted(t_ns, sch.time_ns[sch.forced]).tolist())
    offs, _, step, _ = got
    for i in range(lat.size):
        for s in step[offs[i] + 1:offs[i + 1]]:
            assert instant[s] or s in forced_steps


def test_orbit_handovers_reallocates_on_a_3_s_grid_and_marks_forced_entries():
    spec, start = "walker-star:150/10/1:500:87", "2022-09-14T00:00:00Z"
    result = CliRunner().invoke(app, ["orbit", "handovers", "--constellation", spec, "--lat",
                                      "59.9", "--lon", "10.7", "--start", start, "--hours", "1",
                                      "--min-elevation", "25", "--interval-s", "15",
                                      "--phase-s", "12", "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert (out["step_s"], out["interval_s"], out["phase_s"]) == (3.0, 15.0, 12.0)
    c = Constellation.from_spec(spec, epoch=start)
    sch = handover_schedule(c, GroundPoints.from_degrees(59.9, 10.7), step_times_ns(3600 * S, 3 * S),
                            min_elevation_deg=25.0, interval_ns=15 * S, phase_ns=12 * S)
    assert [(e["time_s"], e["satellite"], e["forced"]) for e in out["schedule"]] == list(
        zip((sch.time_ns / S).tolist(), sch.satellite.tolist(), sch.forced.tolist(), strict=True))
    assert out["n_forced"] == int(sch.forced.sum()) > 0


def test_orbit_handovers_names_an_instant_off_the_step_grid():
    result = CliRunner().invoke(app, ["orbit", "handovers", "--lat", "0", "--lon", "0",
                                      "--hours", "0.1", "--interval-s", "15", "--phase-s", "12",
                                      "--step-s", "10"])
    assert result.exit_code == 2
    assert "12 s + k x 15 s are not all on the step grid (step 10 s)" in " ".join(result.output.split())
