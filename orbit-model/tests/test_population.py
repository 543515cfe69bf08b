"""PopulationGrid: readers, the embedded default, and circle populations.

Authorities: the facts in ../shared/data/README.md (total and densest cell of
the GPW v4.11 2020 30' grid), the original ESRI ASCII file itself, and a
brute-force haversine sum over every cell centre.
"""

import gzip
from pathlib import Path

import numpy as np
import pytest

from orbit_model import PopulationGrid
from orbit_model.constants import EARTH_RADIUS_KM
from orbit_model.population import default_population_path

SHARED_GPW = (Path(__file__).resolve().parents[2].parent / "shared" / "data"
              / "gpw-v4-2020-30min" / "gpw_v4_population_count_adjusted_2020_30_min.asc.gz")

# ../shared/data/README.md
README_TOTAL = 7_757_982_778
JAKARTA_ROW, JAKARTA_COL, JAKARTA_POP = 192, 573, 23_065_670


@pytest.fixture(scope="module")
def grid():
    return PopulationGrid.default()


def brute_force_circle(grid, lat_deg, lon_deg, radius_km, earth_radius_km=EARTH_RADIUS_KM):
    """Sum of the cells whose centres are within radius_km (haversine), cell by cell."""
    phi = np.radians(grid.lat_centres_deg)[:, None]
    lam = np.radians(grid.lon_centres_deg)[None, :]
    phi0, lam0 = np.radians(lat_deg), np.radians(lon_deg)
    h = (np.sin((phi - phi0) / 2) ** 2
         + np.cos(phi0) * np.cos(phi) * np.sin((lam - lam0) / 2) ** 2)
    d_km = 2 * earth_radius_km * np.arcsin(np.sqrt(np.clip(h, 0, 1)))
    return float(grid.counts[d_km <= radius_km].sum())


def write_asc(path, values, west=-10.0, south=-5.0, cell=1.0, nodata=-9999, extra=""):
    nrows, ncols = values.shape
    header = (f"ncols {ncols}\nnrows {nrows}\nxllcorner {west}\nyllcorner {south}\n"
              f"cellsize {cell}\nNODATA_value {nodata}\n{extra}")
    body = "\n".join(" ".join(f"{v:g}" for v in row) for row in values) + "\n"
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "wt") as f:
        f.write(header + body)
    return path


# ---- the embedded default -----------------------------------------------------------

def test_the_embedded_grid_has_the_total_the_shared_readme_states(grid):
    assert (grid.n_rows, grid.n_cols) == (360, 720)
    assert round(grid.total) == README_TOTAL


def test_the_densest_embedded_cell_is_jakarta_as_the_shared_readme_states(grid):
    row, col = np.unravel_index(np.argmax(grid.counts), grid.counts.shape)
    assert (row, col) == (JAKARTA_ROW, JAKARTA_COL)
    assert grid.counts[row, col] == JAKARTA_POP
    assert grid.lat_centres_deg[row] == -6.25 and grid.lon_centres_deg[col] == 106.75


def test_a_one_km_circle_on_the_jakarta_cell_centre_holds_exactly_that_cell(grid):
    assert grid.population_in_circle(-6.25, 106.75, 1.0) == JAKARTA_POP


def test_the_default_spec_and_an_empty_spec_give_the_embedded_grid(grid):
    assert PopulationGrid.from_spec(None) is grid
    assert PopulationGrid.from_spec("default") is grid


def test_the_embedded_file_is_found_without_shared_data():
    path = default_population_path()
    assert path.is_file() and "shared" not in path.parts


@pytest.mark.needs_shared
def test_the_embedded_grid_equals_the_shared_ascii_grid_cell_by_cell(grid):
    if not SHARED_GPW.is_file():
        pytest.skip(f"{SHARED_GPW} is absent (../shared/data not mounted)")
    original = PopulationGrid.from_spec(f"gpw:{SHARED_GPW}")
    assert np.array_equal(original.population, grid.population, equal_nan=True)
    assert (original.west_deg, original.north_deg, original.cell_size_deg) == (
        grid.west_deg, grid.north_deg, grid.cell_size_deg)


# ---- readers ------------------------------------------------------------------------

def test_an_ascii_grid_reads_rows_north_first_with_nodata_as_nan(tmp_path):
    values = np.array([[1, 2, -9999], [4, 5, 6]], dtype=float)
    g = PopulationGrid.from_file(write_asc(tmp_path / "g.asc", values))
    assert g.north_deg == -3.0 and g.west_deg == -10.0 and g.cell_size_deg == 1.0
    assert np.isnan(g.population[0, 2]) and g.counts[0, 2] == 0
    assert g.counts[1, 0] == 4 and g.total == 18
    np.testing.assert_array_equal(g.lat_centres_deg, [-3.5, -4.5])


def test_a_gzipped_ascii_grid_reads_the_same_as_the_plain_one(tmp_path):
    values = np.arange(12, dtype=float).reshape(3, 4)
    a = PopulationGrid.from_file(write_asc(tmp_path / "g.asc", values))
    b = PopulationGrid.from_spec(f"gpw:{write_asc(tmp_path / 'g.asc.gz', values)}")
    np.testing.assert_array_equal(a.population, b.population)


def test_an_ascii_header_with_cell_centres_places_the_grid_half_a_cell_further(tmp_path):
    p = tmp_path / "c.asc"
    p.write_text("ncols 2\nnrows 1\nxllcenter 0.5\nyllcenter 0.5\ncellsize 1\n3 4\n")
    g = PopulationGrid.from_file(p)
    assert (g.west_deg, g.north_deg) == (0.0, 1.0)


def test_a_geotiff_reads_the_same_grid_as_the_ascii_file(tmp_path, grid):
    rasterio = pytest.importorskip("rasterio")
    from affine import Affine

    path = tmp_path / "gpw.tif"
    data = np.where(np.isnan(grid.population), -9999.0, grid.population).astype(np.float32)
    with rasterio.open(path, "w", driver="GTiff", width=grid.n_cols, height=grid.n_rows,
                       count=1, dtype="float32", crs="EPSG:4326", nodata=-9999.0,
                       transform=Affine(0.5, 0.0, -180.0, 0.0, -0.5, 90.0)) as dst:
        dst.write(data, 1)
    g = PopulationGrid.from_spec(f"gpw:{path}")
    assert (g.west_deg, g.north_deg, g.cell_size_deg) == (-180.0, 90.0, 0.5)
    want = np.where(data == -9999.0, np.nan, data.astype(np.float64))
    np.testing.assert_array_equal(g.population, want)
    # float32 storage: the total moves by rounding only
    assert g.total == pytest.approx(grid.total, rel=1e-8)


def test_a_geotiff_in_a_projected_crs_is_refused_with_its_crs(tmp_path):
    rasterio = pytest.importorskip("rasterio")
    from affine import Affine

    path = tmp_path / "mercator.tif"
    with rasterio.open(path, "w", driver="GTiff", width=4, height=2, count=1, dtype="float32",
                       crs="EPSG:3857", transform=Affine(1000.0, 0.0, 0.0, 0.0, -1000.0, 0.0)
                       ) as dst:
        dst.write(np.ones((2, 4), dtype=np.float32), 1)
    with pytest.raises(ValueError, match=r"mercator.tif.*EPSG:4326.*3857"):
        PopulationGrid.from_file(path)


# ---- bad input ----------------------------------------------------------------------

def test_a_missing_file_names_the_file(tmp_path):
    with pytest.raises(OSError, match="nope.asc"):
        PopulationGrid.from_spec(f"gpw:{tmp_path / 'nope.asc'}")


def test_a_corrupt_gzip_file_names_the_file(tmp_path):
    p = tmp_path / "bad.asc.gz"
    p.write_bytes(b"this is not gzip")
    with pytest.raises(ValueError, match="bad.asc.gz"):
        PopulationGrid.from_file(p)


@pytest.mark.parametrize("name", ["broken.tif", "broken.npz"])
def test_a_corrupt_geotiff_or_npz_names_the_file(tmp_path, name):
    p = tmp_path / name
    p.write_bytes(b"\x00\x01 not a raster at all")
    with pytest.raises(ValueError, match=name):
        PopulationGrid.from_file(p)


def test_an_unknown_header_line_is_quoted(tmp_path):
    p = tmp_path / "h.asc"
    p.write_text("ncols 2\nnrows 1\nxllcorner 0\nyllcorner 0\ncellsize 1\nbanana 3\n1 2\n")
    with pytest.raises(ValueError, match=r"h.asc.*banana"):
        PopulationGrid.from_file(p)


def test_a_header_without_ncols_says_so(tmp_path):
    p = tmp_path / "h.asc"
    p.write_text("nrows 1\nxllcorner 0\nyllcorner 0\ncellsize 1\n1 2\n")
    with pytest.raises(ValueError, match=r"h.asc.*'ncols'"):
        PopulationGrid.from_file(p)


def test_a_grid_with_fewer_values_than_its_header_names_both_counts(tmp_path):
    p = write_asc(tmp_path / "short.asc", np.ones((2, 3)))
    p.write_text(p.read_text().rsplit("\n", 2)[0] + "\n")  # drop the last row
    with pytest.raises(ValueError, match=r"short.asc.*2 rows x 3 columns = 6 values.*has 3"):
        PopulationGrid.from_file(p)


def test_a_non_numeric_value_is_quoted(tmp_path):
    p = tmp_path / "n.asc"
    p.write_text("ncols 2\nnrows 1\nxllcorner 0\nyllcorner 0\ncellsize 1\n1 x7\n")
    with pytest.raises(ValueError, match=r"n.asc.*x7"):
        PopulationGrid.from_file(p)


def test_a_grid_reaching_beyond_the_pole_is_refused(tmp_path):
    p = write_asc(tmp_path / "p.asc", np.ones((2, 2)), south=89.5)
    with pytest.raises(ValueError, match=r"p.asc.*outside \[-90, 90\]"):
        PopulationGrid.from_file(p)


def test_an_unknown_file_type_and_an_unknown_spec_are_refused(tmp_path):
    with pytest.raises(ValueError, match="pop.csv"):
        PopulationGrid.from_file(tmp_path / "pop.csv")
    with pytest.raises(ValueError, match="'worldpop:x'"):
        PopulationGrid.from_spec("worldpop:x")


@pytest.mark.parametrize("lat", [90.5, -91.0, float("nan")])
def test_a_latitude_outside_the_range_is_quoted(grid, lat):
    with pytest.raises(ValueError, match=r"latitude must be in \[-90, 90\].*" + str(lat)):
        grid.population_in_circle(lat, 0.0, 100.0)


def test_a_negative_radius_is_quoted(grid):
    with pytest.raises(ValueError, match=r"radius_km must be >= 0.*-5"):
        grid.population_in_circle([0.0, 1.0], 0.0, [10.0, -5.0])


# ---- circle populations against the brute-force haversine sum ------------------------

def test_circle_populations_match_the_brute_force_haversine_sum(grid):
    rng = np.random.default_rng(6)
    lat = np.r_[90.0, -90.0, 89.9, 0.0, -6.25, rng.uniform(-90, 90, 60)]
    lon = np.r_[0.0, 45.0, 179.99, 180.0, 106.75, rng.uniform(-540, 540, 60)]
    radius = np.r_[3000.0, 2500.0, 800.0, 1500.0, 0.0, rng.uniform(0, 21000, 60)]
    got = grid.population_in_circle(lat, lon, radius)
    want = [brute_force_circle(grid, *args) for args in zip(lat, lon, radius, strict=True)]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-3)


def test_small_circles_around_the_antimeridian_match_the_brute_force_sum(grid):
    lat = np.array([-17.0, -17.5, 64.0, -40.0])
    lon = np.array([179.8, -179.9, -179.0, 180.0])      # Fiji, Chukotka, New Zealand's edge
    radius = np.array([300.0, 600.0, 500.0, 900.0])
    want = [brute_force_circle(grid, *a) for a in zip(lat, lon, radius, strict=True)]
    assert min(want) > 0
    np.testing.assert_allclose(grid.population_in_circle(lat, lon, radius), want, rtol=1e-12)


def test_a_circle_wider_than_the_earth_holds_everyone(grid):
    assert grid.population_in_circle(12.0, 34.0, 30_000.0) == pytest.approx(grid.total, rel=1e-12)


def test_a_regional_grid_sums_circles_across_the_antimeridian(grid):
    # East-edge crop (145E..180), centres on the far side of the antimeridian.
    crop = PopulationGrid(grid.population[180:300, 650:], 145.0, 0.0, 0.5, "crop")
    assert not crop.is_global_in_longitude
    lat = np.array([-17.5, -40.0, -20.0, -30.0])
    lon = np.array([-179.5, -178.0, 170.0, 150.0])
    radius = np.array([700.0, 1500.0, 2500.0, 4000.0])
    want = [brute_force_circle(crop, *a) for a in zip(lat, lon, radius, strict=True)]
    assert min(want) > 0
    for method in ("numpy", "numba"):
        np.testing.assert_allclose(crop.population_in_circle(lat, lon, radius, method=method),
                                   want, rtol=1e-12)


def test_the_compiled_path_gives_the_numpy_result(grid):
    rng = np.random.default_rng(60)
    lat, lon = rng.uniform(-90, 90, 4000), rng.uniform(-180, 180, 4000)
    angle = rng.uniform(0, 0.5, 4000)
    np.testing.assert_allclose(grid.population_in_cap(lat, lon, angle, method="numba"),
                               grid.population_in_cap(lat, lon, angle, method="numpy"),
                               rtol=1e-12, atol=1e-6)


def test_scalars_give_a_float_and_arrays_keep_their_shape(grid):
    assert isinstance(grid.population_in_circle(0.0, 0.0, 500.0), float)
    lat = np.zeros((3, 4))
    assert grid.population_in_circle(lat, np.arange(4.0) * 30, 800.0).shape == (3, 4)


def test_cell_of_finds_the_cell_that_holds_a_point(grid):
    row, col = grid.cell_of([-6.3, 91.0], [106.9, 0.0])
    assert (row[0], col[0]) == (JAKARTA_ROW, JAKARTA_COL)
    assert (row[1], col[1]) == (-1, -1)
