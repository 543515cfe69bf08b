"""`satpage orbit`: JSON output against the orbit_model API, bad input exits 2 with the value."""

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from orbit_model import (
    Constellation,
    GroundPoints,
    IslNetwork,
    find_passes,
    handover_schedule,
    step_times_ns,
)
from satpage.cli import app

S = 1_000_000_000
SPEC = "walker-star:150/10/1:500:87"
START = "2022-09-14T00:00:00Z"


def run(*args):
    return CliRunner().invoke(app, ["orbit", *args])


def test_passes_json_lists_the_refined_passes():
    result = run("passes", "--constellation", SPEC, "--lat", "59.9", "--lon", "10.7",
                 "--start", START, "--hours", "1", "--min-elevation", "10", "--json")
    assert result.exit_code == 0, result.output
    got = json.loads(result.stdout)["passes"]
    c = Constellation.from_spec(SPEC, epoch=START)
    expected = find_passes(c, 59.9, 10.7, 3600 * S, min_elevation_deg=10.0)
    assert [p["satellite"] for p in got] == expected["satellite"].tolist()
    np.testing.assert_allclose([p["rise_s"] for p in got], expected["rise_ns"] / S)
    np.testing.assert_allclose([p["set_s"] for p in got], expected["set_ns"] / S)
    assert min(p["rise_s"] for p in got) == 0.0 and max(p["set_s"] for p in got) == 3600.0
    assert {"satellite", "rise_s", "set_s", "max_elevation_deg"} <= set(got[0])


def test_passes_without_json_prints_a_table():
    result = run("passes", "--lat", "0", "--lon", "0", "--hours", "0.5")
    assert result.exit_code == 0 and "passes over" in result.stdout


def test_handovers_json_is_the_schedule():
    result = run("handovers", "--constellation", SPEC, "--lat", "-33.9", "--lon", "151.2",
                 "--start", START, "--hours", "2", "--policy", "longest", "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    c = Constellation.from_spec(SPEC, epoch=START)
    schedule = handover_schedule(c, GroundPoints.from_degrees(-33.9, 151.2),
                                 step_times_ns(2 * 3600 * S), min_elevation_deg=10.0, policy="longest")
    times, sats = schedule.for_client(0)
    assert [e["satellite"] for e in out["schedule"]] == sats.tolist()
    assert [e["time_s"] for e in out["schedule"]] == (times / S).tolist()
    assert out["n_handovers"] == int(schedule.n_handovers[0])


def test_isl_json_gives_hops_and_delay():
    result = run("isl", "--constellation", SPEC, "--src", "0", "--dst", "77", "--at-s", "600",
                 "--per-hop-ms", "1", "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    network = IslNetwork(Constellation.from_spec(SPEC, epoch=START), per_hop_processing_ms=1.0)
    route = network.route(0, 77, 600 * S)
    assert out["hops"] == int(route.hops) == network.hop_matrix(600 * S)[0, 77]
    assert out["delay_ms"] == pytest.approx(float(route.delay_ms), abs=1e-6)
    assert out["path"] == network.path(0, 77, 600 * S).tolist() and len(out["path"]) == out["hops"] + 1


@pytest.mark.parametrize(("args", "message"), [
    (["passes", "--constellation", "walker:150/7/1:500:87", "--lat", "0", "--lon", "0"],
     "T=150 is not divisible by P=7"),
    (["passes", "--constellation", "walker:150/10/12:500:87", "--lat", "0", "--lon", "0"],
     "F=12 is out of range"),
    (["passes", "--constellation", "walker:150/10/1:100:87", "--lat", "0", "--lon", "0"],
     "altitude 100.0 km is below 150 km"),
    (["passes", "--constellation", "walker:150/10/1:500:200", "--lat", "0", "--lon", "0"],
     "inclination 200.0 deg is outside 0-180"),
    (["passes", "--lat", "0", "--lon", "0", "--start", "2022-13-45"], "start time '2022-13-45'"),
    (["passes", "--lat", "95", "--lon", "0"], "latitude 95.0 deg"),
    (["handovers", "--lat", "0", "--lon", "0", "--policy", "random"], "policy 'random'"),
    (["isl", "--src", "0", "--dst", "150"], "destination satellite 150 is outside 0..149"),
])
def test_bad_input_exits_2_naming_the_value(args, message):
    result = run(*args)
    assert result.exit_code == 2
    assert message in " ".join(result.stderr.split())
    assert "Traceback" not in result.output


def test_a_malformed_tle_names_the_file_and_line(tmp_path):
    path = tmp_path / "broken.tle"
    path.write_text("SAT\n2 25544  51.6498 109.4756 0003572  55.9686 274.8005 15.49815350868473\n")
    result = run("passes", "--constellation", f"tle:{path}", "--lat", "0", "--lon", "0")
    assert result.exit_code == 2
    assert "broken.tle line 2: TLE line 2 without a line 1" in " ".join(result.stderr.split())


@pytest.mark.slow  # the unit tier (make test-unit) leaves it to make test
def test_isl_on_the_five_shell_starlink_routes_inside_a_shell_only():
    inside = run("isl", "--constellation", "starlink-gen1", "--src", "0", "--dst", "1583", "--json")
    across = run("isl", "--constellation", "starlink-gen1", "--src", "0", "--dst", "1584", "--json")
    assert inside.exit_code == 0 and across.exit_code == 0, inside.output + across.output
    network = IslNetwork(Constellation.from_spec("starlink-gen1", epoch=START))
    got_in, got_across = json.loads(inside.stdout), json.loads(across.stdout)
    assert got_in["constellation"] == "starlink-gen1"
    assert got_in["hops"] == int(network.route(0, 1583, 0).hops) > 0
    assert got_across["hops"] == -1 and got_across["path"] == []
