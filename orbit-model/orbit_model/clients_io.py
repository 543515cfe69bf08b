"""Vector files for clients and regions, through GeoPandas (pyogrio, pyarrow).

- Regions: any polygon file GeoPandas reads (GeoJSON ``.geojson``/``.json``,
  GeoPackage ``.gpkg``, shapefile); all polygons are unioned; a CRS other than
  EPSG:4326 is reprojected; a file without a CRS is taken as EPSG:4326.
- Clients: one point per client (EPSG:4326, lon/lat), columns ``client``
  (index), ``row`` and ``col`` (the grid cell it was drawn from). Written as
  GeoJSON (``.geojson``/``.json``), GeoParquet (``.parquet``/``.geoparquet``,
  GeoParquet metadata from GeoPandas) or GeoPackage (``.gpkg``), by suffix.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from orbit_model.clients import Clients

__all__ = ["read_region", "write_clients", "read_clients", "clients_to_geodataframe"]

_GEOJSON = (".geojson", ".json")
_PARQUET = (".parquet", ".geoparquet")
_GPKG = (".gpkg",)


def read_region(path: str | Path):
    """The union of the polygons in a vector file, as one shapely geometry (EPSG:4326)."""
    import geopandas as gpd

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such region file")
    try:
        if path.suffix.lower() in _PARQUET:
            frame = gpd.read_parquet(path)
        else:
            frame = gpd.read_file(path)
    except Exception as exc:  # pyogrio/pyarrow raise their own types: report them as bad input
        raise ValueError(f"{path}: not a readable region file ({exc})") from None
    if frame.crs is not None and frame.crs.to_epsg() != 4326:
        frame = frame.to_crs(4326)
    polys = frame.geometry[frame.geometry.geom_type.isin(["Polygon", "MultiPolygon"])]
    if polys.empty:
        kinds = sorted(set(frame.geometry.geom_type.dropna()))
        raise ValueError(f"{path}: no polygons in the region file (found {kinds or 'nothing'})")
    region = polys.union_all()
    if not region.is_valid:
        region = region.buffer(0)
    return region


def clients_to_geodataframe(clients: Clients):
    """The clients as a GeoDataFrame of points (EPSG:4326)."""
    import geopandas as gpd

    return gpd.GeoDataFrame(
        {"client": np.arange(len(clients), dtype=np.int64), "row": clients.row,
         "col": clients.col},
        geometry=gpd.points_from_xy(clients.lon_deg, clients.lat_deg), crs="EPSG:4326")


def write_clients(clients: Clients, path: str | Path) -> Path:
    """Write the clients to GeoJSON, GeoParquet or GeoPackage (chosen by suffix)."""
    path = Path(path)
    suffix = path.suffix.lower()
    frame = clients_to_geodataframe(clients)
    if suffix in _GEOJSON:
        frame.to_file(path, driver="GeoJSON")
    elif suffix in _PARQUET:
        frame.to_parquet(path)
    elif suffix in _GPKG:
        frame.to_file(path, driver="GPKG", layer="clients")
    else:
        raise ValueError(f"{path}: unknown clients format (want .geojson, .json, .parquet, "
                         ".geoparquet or .gpkg)")
    return path


def read_clients(path: str | Path) -> Clients:
    """Read clients written by ``write_clients`` (or any point file: row/col then -1)."""
    import geopandas as gpd

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such clients file")
    frame = gpd.read_parquet(path) if path.suffix.lower() in _PARQUET else gpd.read_file(path)
    if frame.crs is not None and frame.crs.to_epsg() != 4326:
        frame = frame.to_crs(4326)
    if not (frame.geometry.geom_type == "Point").all():
        raise ValueError(f"{path}: clients must be points")
    n = len(frame)
    row = frame["row"].to_numpy(np.int64) if "row" in frame else np.full(n, -1, np.int64)
    col = frame["col"].to_numpy(np.int64) if "col" in frame else np.full(n, -1, np.int64)
    return Clients(frame.geometry.y.to_numpy(np.float64), frame.geometry.x.to_numpy(np.float64),
                   row, col)
