"""`satpage population ...`: the issue's command line, figures and files, bad input.

Authorities: the densest cell stated in ../shared/data/README.md, brute-force
haversine sums over the grid's cell centres, Kepler's third law for the period,
GeoPandas/shapely for the written clients.
"""

import csv
import json
import math

import geopandas as gpd
import numpy as np
import pytest
import shapely
from shapely.geometry import box
from typer.testing import CliRunner

from orbit_model import PopulationGrid
from orbit_model.constants import EARTH_RADIUS_KM
from satpage.cli import app

MU_KM3_S2 = 398600.4418          # docs/conventions.md
PERIOD_TOLERANCE = 2e-3          # SGP4 (Kozai) mean motion vs two-body: well under 0.2 %


def run(*args):
    return CliRunner().invoke(app, ["population", *map(str, args)])


def squash(text):
    """Rich wraps stderr at the terminal width, even inside words: compare without spaces."""
    return "".join(text.split())


def haversine_sum(grid, lat, lon, radius_km):
    phi = np.radians(grid.lat_centres_deg)[:, None]
    dlam = np.radians(grid.lon_centres_deg[None, :] - lon)
    phi0 = math.radians(lat)
    h = np.sin((phi - phi0) / 2) ** 2 + math.cos(phi0) * np.cos(phi) * np.sin(dlam / 2) ** 2
    return float(grid.counts[2 * EARTH_RADIUS_KM * np.arcsin(np.sqrt(h)) <= radius_km].sum())


def test_the_issue_command_line_prints_the_population_as_json():
    result = run("--lat", -6.25, "--lon", 106.75, "--radius-km", 1, "--json")
    assert result.exit_code == 0, result.output
    # one cell's centre within 1 km: the Jakarta cell of ../shared/data/README.md
    assert json.loads(result.stdout)["population"] == 23_065_670


def test_a_circle_population_is_the_haversine_sum_of_cell_centres_inside():
    result = run("--lat", 48.85, "--lon", 2.35, "--radius-km", 500, "--source", "default",
                 "--json")
    assert result.exit_code == 0, result.output
    want = haversine_sum(PopulationGrid.default(), 48.85, 2.35, 500.0)
    assert json.loads(result.stdout)["population"] == pytest.approx(want, rel=1e-12)


def test_a_gpw_ascii_source_is_read_from_its_path(tmp_path):
    path = tmp_path / "tiny.asc"
    path.write_text("ncols 4\nnrows 2\nxllcorner 0\nyllcorner 0\ncellsize 1\n"
                    "NODATA_value -9999\n1 2 -9999 8\n16 32 64 128\n")
    result = run("--lat", 0.5, "--lon", 0.5, "--radius-km", 120, "--source", f"gpw:{path}",
                 "--json")
    assert result.exit_code == 0, result.output
    grid = PopulationGrid.from_file(path)
    want = haversine_sum(grid, 0.5, 0.5, 120.0)
    # centres within 120 km: (1.5N, 0.5E) 111 km, (0.5N, 0.5E) 0 km, (0.5N, 1.5E) 111 km
    assert json.loads(result.stdout)["population"] == want == 1 + 16 + 32


def test_the_plain_output_is_one_readable_line():
    result = run("--lat", 0, "--lon", 0, "--radius-km", 10)
    assert result.exit_code == 0 and "population within 10 km" in result.stdout


@pytest.mark.parametrize(("args", "message"), [
    (("--lat", 91, "--lon", 0, "--radius-km", 5), "latitude must be in [-90, 90] degrees, got 91"),
    (("--lat", 0, "--lon", 0, "--radius-km", -5), "radius_km must be >= 0, got -5"),
    (("--lat", 0, "--radius-km", 5), "missing --lon"),
    (("--lat", 0, "--lon", 0, "--radius-km", 5, "--source", "gpw:/no/such.asc"), "/no/such.asc"),
    (("--lat", 0, "--lon", 0, "--radius-km", 5, "--source", "census:x"), "'census:x'"),
])
def test_bad_input_exits_2_and_names_the_value(args, message):
    result = run(*args)
    assert result.exit_code == 2
    assert squash(message) in squash(result.stderr)


def test_the_group_without_options_shows_its_help_and_subcommands():
    result = run()
    assert result.exit_code == 0
    for name in ("--lat", "--radius-km", "footprint", "map", "clients", "load"):
        assert name in result.output


def test_circle_options_with_a_subcommand_are_refused():
    result = run("--lat", 3, "map")
    assert result.exit_code == 2 and squash("go without a subcommand") in squash(result.stderr)
    result = run("--json", "map")
    assert result.exit_code == 2 and squash("after the subcommand") in squash(result.stderr)


def test_a_wrong_header_names_the_file(tmp_path):
    path = tmp_path / "broken.asc"
    path.write_text("ncols 2\nnrows 3\nxllcorner 0\nyllcorner 0\ncellsize 1\n1 2\n")
    result = run("--lat", 0, "--lon", 0, "--radius-km", 5, "--source", f"gpw:{path}")
    assert result.exit_code == 2
    assert "broken.asc" in squash(result.stderr) and "6values" in squash(result.stderr)


def test_fig2_covers_three_orbits_and_its_csv_holds_the_footprint_populations(tmp_path):
    result = run("footprint", "--satellite", 7, "--step-s", 60, "--out-dir", tmp_path, "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    kepler_s = 2 * math.pi * math.sqrt((EARTH_RADIUS_KM + 500.0) ** 3 / MU_KM3_S2)
    assert summary["period_s"] == pytest.approx(kepler_s, rel=PERIOD_TOLERANCE)
    with open(summary["csv"]) as f:
        rows = list(csv.DictReader(f))
    t = np.array([float(r["t_s"]) for r in rows])
    assert t[0] == 0 and t[-1] <= 3 * summary["period_s"] < t[-1] + 60
    assert len(rows) == summary["samples"]
    grid = PopulationGrid.default()
    for r in rows[::97]:
        want = haversine_sum(grid, float(r["sub_lat_deg"]), float(r["sub_lon_deg"]),
                             summary["footprint_radius_km"])
        # the CSV rounds positions to 1e-4 deg: allow the cells that 11 m can move
        assert float(r["footprint_population"]) == pytest.approx(want, rel=1e-3, abs=1)
    assert _png_size(summary["png"])[0] > 500


def test_fig1_draws_every_footprint_over_the_grid(tmp_path):
    png = tmp_path / "fig1.png"
    result = run("map", "--png", png, "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["satellites"] == 150 and 0 < summary["covered_share"] <= 1
    width, height = _png_size(png)
    assert width > height > 400


def test_clients_are_written_for_gis_tools_and_repeat_with_the_seed(tmp_path):
    region = tmp_path / "europe.geojson"
    gpd.GeoDataFrame(geometry=[box(-10, 35, 30, 60)], crs="EPSG:4326").to_file(region)
    outs = []
    for name in ("a.geojson", "b.parquet"):
        result = run("clients", "--n", 500, "--seed", 3, "--region", region,
                     "--out", tmp_path / name, "--json")
        assert result.exit_code == 0, result.output
        frame = (gpd.read_parquet if name.endswith("parquet") else gpd.read_file)(tmp_path / name)
        assert len(frame) == 500
        assert shapely.contains_xy(box(-10, 35, 30, 60), frame.geometry.x, frame.geometry.y).all()
        outs.append(frame)
    np.testing.assert_allclose(outs[0].geometry.x, outs[1].geometry.x, atol=1e-9)


def test_a_region_file_that_is_missing_is_named(tmp_path):
    result = run("clients", "--n", 5, "--region", tmp_path / "nowhere.gpkg",
                 "--out", tmp_path / "c.geojson")
    assert result.exit_code == 2 and "nowhere.gpkg" in squash(result.stderr)


def test_the_load_measure_has_one_row_per_satellite_and_one_column_per_step(tmp_path):
    out = tmp_path / "load.npz"
    result = run("load", "--hours", 0.5, "--step-s", 60, "--out", out, "--json")
    assert result.exit_code == 0, result.output
    with np.load(out) as z:
        assert z["population"].shape == (150, 31)
        assert z["t_ns"][-1] == 1800 * 10**9


def _png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")
