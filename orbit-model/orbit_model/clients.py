"""Ground clients placed with probability proportional to population.

Placement is two-stage, as Fongen drives his sessions from GPW: pick a grid cell
with probability (cell population / total), then a point uniformly *by area*
inside that cell (longitude uniform, sin(latitude) uniform: a cell near the pole
is narrower at its poleward edge). A region (a polygon, e.g. from a GeoJSON or
GeoPackage file read by ``clients_io.read_region``) keeps only the cells whose
centres lie inside it, the same rule as the circle populations, and points that
land outside the polygon in a boundary cell are drawn again inside that cell.

Randomness comes only from the ``numpy.random.Generator`` passed in.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from orbit_model.population import PopulationGrid

__all__ = ["Clients", "place_clients", "region_mask", "population_in_region"]

# Redraws for a point that fell outside the region inside an accepted cell;
# after that the cell centre (inside by construction) is used.
_MAX_REDRAWS = 64


@dataclass(frozen=True, eq=False)
class Clients:
    """N ground clients: ``lat_deg``, ``lon_deg`` float64 (N,), and the grid cell each was
    drawn from, ``row``/``col`` int64 (N,) (-1 when read from a file without them)."""

    lat_deg: np.ndarray
    lon_deg: np.ndarray
    row: np.ndarray
    col: np.ndarray

    def __post_init__(self) -> None:
        n = len(self.lat_deg)
        for name in ("lon_deg", "row", "col"):
            if len(getattr(self, name)) != n:
                raise ValueError(f"clients: {name} has {len(getattr(self, name))} entries, "
                                 f"lat_deg has {n}")

    def __len__(self) -> int:
        return len(self.lat_deg)


def region_mask(grid: PopulationGrid, region) -> np.ndarray:
    """(n_rows, n_cols) bool: cells whose centre lies inside the shapely ``region``
    (longitude/latitude degrees, EPSG:4326)."""
    import shapely

    keep = np.zeros(grid.population.shape, dtype=bool)
    if region is None or region.is_empty:
        return keep
    west, south, east, north = region.bounds
    lat_c, lon_c = grid.lat_centres_deg, grid.lon_centres_deg
    rows = np.flatnonzero((lat_c >= south) & (lat_c <= north))
    cols = np.flatnonzero((lon_c >= west) & (lon_c <= east))
    if rows.size and cols.size:
        shapely.prepare(region)
        lon2, lat2 = np.meshgrid(lon_c[cols], lat_c[rows])
        keep[np.ix_(rows, cols)] = _covers_xy(region, lon2, lat2)
    return keep


def population_in_region(grid: PopulationGrid, region) -> float:
    """Population of the cells whose centres lie inside ``region``."""
    return float(grid.counts[region_mask(grid, region)].sum())


def place_clients(grid: PopulationGrid, n_clients: int, rng: np.random.Generator,
                  region=None) -> Clients:
    """``n_clients`` clients, cell chosen with probability proportional to population,
    then a uniform-by-area point in the cell; only inside ``region`` when given."""
    if not isinstance(n_clients, int | np.integer) or n_clients < 0:
        raise ValueError(f"number of clients must be a non-negative integer, got {n_clients!r}")
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    weights = grid.counts
    if region is not None:
        weights = np.where(region_mask(grid, region), weights, 0.0)
    cum = np.cumsum(weights.ravel())
    total = cum[-1]
    if not total > 0:
        where = f" inside the region (bounds {tuple(region.bounds)})" if region is not None else ""
        raise ValueError(f"{grid.source}: no population{where} to place clients in")
    # side="right": a draw u*total in [cum[j-1], cum[j]) picks j; empty cells
    # (cum[j] == cum[j-1]) can never be picked.
    flat = np.searchsorted(cum, rng.random(n_clients) * total, side="right")
    flat = np.minimum(flat, int(np.flatnonzero(weights.ravel())[-1]))
    row, col = np.divmod(flat, grid.n_cols)
    lat, lon = _uniform_in_cells(grid, row, col, rng)
    if region is not None and n_clients:
        lat, lon = _redraw_outside(grid, region, row, col, lat, lon, rng)
    return Clients(lat, lon, row.astype(np.int64), col.astype(np.int64))


def _uniform_in_cells(grid: PopulationGrid, row: np.ndarray, col: np.ndarray,
                      rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    cs = grid.cell_size_deg
    north = np.radians(grid.north_deg - row * cs)
    south = np.radians(grid.north_deg - (row + 1) * cs)
    u = rng.random((2, row.size))
    sin_lat = np.sin(south) + u[0] * (np.sin(north) - np.sin(south))
    lat = np.degrees(np.arcsin(np.clip(sin_lat, -1.0, 1.0)))
    lon = grid.west_deg + (col + u[1]) * cs
    return lat, lon


def _covers_xy(region, x, y) -> np.ndarray:
    """Points inside or on the boundary (a centre on the edge counts, like distance <= r)."""
    import shapely

    shapely.prepare(region)
    return shapely.contains_xy(region, x, y) | shapely.intersects_xy(region.boundary, x, y)


def _redraw_outside(grid, region, row, col, lat, lon, rng):
    lat, lon = lat.copy(), lon.copy()
    for _ in range(_MAX_REDRAWS):
        out = np.flatnonzero(~_covers_xy(region, lon, lat))
        if out.size == 0:
            return lat, lon
        lat[out], lon[out] = _uniform_in_cells(grid, row[out], col[out], rng)
    out = np.flatnonzero(~_covers_xy(region, lon, lat))
    lat[out] = grid.lat_centres_deg[row[out]]
    lon[out] = grid.lon_centres_deg[col[out]]
    return lat, lon
