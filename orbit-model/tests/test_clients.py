"""Population-weighted clients: placement statistics against the grid's shares,
uniform-by-area points (KS test, scipy), regions against shapely, GIS files read
back with GeoPandas."""

import json

import geopandas as gpd
import numpy as np
import pytest
import shapely
from scipy import stats
from shapely.geometry import Polygon, box

from orbit_model import PopulationGrid, place_clients, population_in_region, region_mask
from orbit_model.io import read_clients, read_region, write_clients

# Significance for the statistical checks: a correct sampler fails one in 10^4 seeds.
ALPHA = 1e-4


@pytest.fixture(scope="module")
def grid():
    return PopulationGrid.default()


def test_the_same_seed_places_the_same_clients_and_another_seed_does_not(grid):
    a = place_clients(grid, 1000, np.random.default_rng(7))
    b = place_clients(grid, 1000, np.random.default_rng(7))
    c = place_clients(grid, 1000, np.random.default_rng(8))
    np.testing.assert_array_equal(a.lat_deg, b.lat_deg)
    np.testing.assert_array_equal(a.lon_deg, b.lon_deg)
    assert not np.array_equal(a.lat_deg, c.lat_deg)


def test_every_client_lies_in_a_populated_cell_it_names(grid):
    clients = place_clients(grid, 20_000, np.random.default_rng(1))
    assert np.all(grid.counts[clients.row, clients.col] > 0)
    row, col = grid.cell_of(clients.lat_deg, clients.lon_deg)
    np.testing.assert_array_equal(row, clients.row)
    np.testing.assert_array_equal(col, clients.col)


def test_clients_per_cell_follow_the_population_shares(grid):
    n = 200_000
    clients = place_clients(grid, n, np.random.default_rng(2))
    counts = np.bincount(clients.row * grid.n_cols + clients.col, minlength=grid.counts.size)
    # chi-square over 20 bins of cells grouped by population rank
    order = np.argsort(grid.counts.ravel())[::-1]
    shares = grid.counts.ravel()[order] / grid.total
    cuts = np.searchsorted(np.cumsum(shares), np.linspace(0.05, 0.95, 19))
    groups = np.split(np.arange(order.size), cuts)
    observed = np.array([counts[order[g]].sum() for g in groups])
    expected = np.array([shares[g].sum() * n for g in groups])
    assert stats.chisquare(observed, expected).pvalue > ALPHA


def test_points_are_uniform_by_area_inside_a_high_latitude_cell():
    pop = np.zeros((18, 36))
    pop[2, 5] = 1000.0                       # 60N..70N, a cell 1.46x wider at its south edge
    grid = PopulationGrid(pop, -180.0, 90.0, 10.0, "synthetic")
    clients = place_clients(grid, 20_000, np.random.default_rng(3))
    s, n = np.sin(np.radians(60.0)), np.sin(np.radians(70.0))
    u_lat = (np.sin(np.radians(clients.lat_deg)) - s) / (n - s)
    u_lon = (clients.lon_deg + 130.0) / 10.0
    assert stats.kstest(u_lat, "uniform").pvalue > ALPHA
    assert stats.kstest(u_lon, "uniform").pvalue > ALPHA
    # and uniform-in-latitude would have been detected
    assert stats.kstest((clients.lat_deg - 60.0) / 10.0, "uniform").pvalue < ALPHA


def test_a_region_keeps_every_client_inside_its_polygon(grid, tmp_path):
    # A triangle over Java and Sumatra, so that boundary cells are cut.
    tri = Polygon([(95.0, 5.0), (115.0, -9.0), (100.0, -9.0)])
    path = tmp_path / "region.geojson"
    gpd.GeoDataFrame(geometry=[tri], crs="EPSG:4326").to_file(path, driver="GeoJSON")
    region = read_region(path)
    clients = place_clients(grid, 5000, np.random.default_rng(4), region=region)
    inside = shapely.contains_xy(region, clients.lon_deg, clients.lat_deg)
    assert inside.all()
    assert region_mask(grid, region)[clients.row, clients.col].all()


def test_the_population_of_a_region_is_the_sum_of_cells_with_centres_inside(grid):
    region = box(100.0, -10.0, 120.0, 0.0)
    lat2, lon2 = np.meshgrid(grid.lat_centres_deg, grid.lon_centres_deg, indexing="ij")
    inside = (lon2 >= 100) & (lon2 <= 120) & (lat2 >= -10) & (lat2 <= 0)
    assert population_in_region(grid, region) == pytest.approx(grid.counts[inside].sum(),
                                                               rel=1e-12)


def test_a_region_in_another_crs_is_reprojected(tmp_path):
    square = gpd.GeoDataFrame(geometry=[box(10.0, 40.0, 12.0, 42.0)], crs="EPSG:4326")
    path = tmp_path / "r.gpkg"
    square.to_crs(3857).to_file(path, driver="GPKG")
    region = read_region(path)
    np.testing.assert_allclose(region.bounds, (10.0, 40.0, 12.0, 42.0), atol=1e-9)


def test_a_region_file_without_polygons_is_refused(tmp_path):
    path = tmp_path / "points.geojson"
    path.write_text(json.dumps({"type": "FeatureCollection", "features": [
        {"type": "Feature", "properties": {}, "geometry": {"type": "Point",
                                                           "coordinates": [1, 2]}}]}))
    with pytest.raises(ValueError, match=r"points.geojson.*no polygons"):
        read_region(path)


def test_a_region_over_the_empty_ocean_says_there_is_nobody_to_place(grid):
    with pytest.raises(ValueError, match="no population inside the region"):
        place_clients(grid, 10, np.random.default_rng(5), region=box(-140, -40, -130, -30))


@pytest.mark.parametrize("suffix", [".geojson", ".parquet", ".gpkg"])
def test_clients_written_for_gis_tools_read_back_the_same(grid, tmp_path, suffix):
    clients = place_clients(grid, 300, np.random.default_rng(9))
    path = write_clients(clients, tmp_path / f"clients{suffix}")
    frame = gpd.read_parquet(path) if suffix == ".parquet" else gpd.read_file(path)
    assert frame.crs.to_epsg() == 4326 and len(frame) == 300
    back = read_clients(path)
    np.testing.assert_allclose(back.lat_deg, clients.lat_deg, atol=1e-9)
    np.testing.assert_allclose(back.lon_deg, clients.lon_deg, atol=1e-9)
    np.testing.assert_array_equal(back.row, clients.row)


def test_a_negative_number_of_clients_is_quoted(grid):
    with pytest.raises(ValueError, match="-3"):
        place_clients(grid, -3, np.random.default_rng(0))
