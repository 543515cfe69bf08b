"""Reading and writing gridded population files (internal; use ``PopulationGrid``).

Formats, each read into the same in-memory layout (rows north to south, columns
west to east, float population counts, NaN where the file says "no data"):

- ESRI ASCII grid (``.asc``, ``.asc.gz``): six header lines ``ncols``, ``nrows``,
  ``xllcorner``/``xllcenter``, ``yllcorner``/``yllcenter``, ``cellsize`` and an
  optional ``NODATA_value``, then ``nrows`` x ``ncols`` numbers, north row first.
  This is how GPW v4 ships its grids (and how ../shared/data holds the 30' one).
- GeoTIFF (``.tif``, ``.tiff``) through rasterio: band 1 of a north-up grid in
  geographic coordinates (EPSG:4326 or no CRS), square cells.
- satpage's compact grid (``.npz``, NumPy ``savez_compressed``), format version 1:
  ``population`` float64 (n_rows, n_cols) with NaN for no data, scalars
  ``west_deg``, ``north_deg``, ``cell_size_deg``, ``format_version`` (1) and the
  strings ``source`` (what it was converted from) and ``source_sha256``.
  The embedded default ``orbit_model/data/gpw-v4-2020-30min.npz`` is one of these.

Errors are ``ValueError`` (bad content) or ``OSError`` (unreadable file), and
always name the file.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import logging
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["GridArrays", "read_esri_ascii", "read_geotiff", "read_npz", "write_npz",
           "read_grid_file", "NPZ_FORMAT_VERSION"]

log = logging.getLogger(__name__)

NPZ_FORMAT_VERSION = 1

_ASCII_KEYS = ("ncols", "nrows", "xllcorner", "xllcenter", "yllcorner", "yllcenter",
               "cellsize", "nodata_value")


@dataclass(frozen=True, eq=False)
class GridArrays:
    """What a reader returns: the grid and where it sits (cell edges, degrees)."""

    population: np.ndarray  # (n_rows, n_cols) float, NaN = no data
    west_deg: float
    north_deg: float
    cell_size_deg: float
    source: str


def sha256_of(path: Path) -> str:
    """Hex SHA-256 of a file's bytes (recorded as provenance of converted grids)."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _open_text(path: Path) -> io.TextIOBase:
    if path.name.endswith(".gz"):
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="ascii")
    return open(path, encoding="ascii")


def read_esri_ascii(path: str | Path) -> GridArrays:
    """Read an ESRI ASCII grid (optionally gzip-compressed)."""
    path = Path(path)
    header: dict[str, float] = {}
    try:
        with _open_text(path) as f:
            # The header is a run of "key value" lines; the data starts at the first
            # line whose first token is a number.
            line = ""
            for line in f:
                parts = line.split()
                if not parts:
                    continue
                key = parts[0].lower()
                if key[0].isdigit() or key[0] in "+-.":
                    break
                if key not in _ASCII_KEYS or len(parts) != 2:
                    raise ValueError(f"{path}: not an ESRI ASCII grid header line: {line.strip()!r}")
                try:
                    header[key] = float(parts[1])
                except ValueError:
                    raise ValueError(f"{path}: header {parts[0]} is not a number: {parts[1]!r}") from None
            else:
                line = ""
            text = line + f.read()
    except (UnicodeDecodeError, EOFError, gzip.BadGzipFile) as exc:
        raise ValueError(f"{path}: not a readable ESRI ASCII grid ({exc})") from None
    for key in ("ncols", "nrows", "cellsize"):
        if key not in header:
            raise ValueError(f"{path}: ESRI ASCII header lacks {key!r} (has {sorted(header)})")
    if ("xllcorner" in header) == ("xllcenter" in header) or (
            ("yllcorner" in header) == ("yllcenter" in header)):
        raise ValueError(f"{path}: ESRI ASCII header needs exactly one of xllcorner/xllcenter "
                         f"and of yllcorner/yllcenter (has {sorted(header)})")
    ncols, nrows, cell = header["ncols"], header["nrows"], header["cellsize"]
    if ncols != int(ncols) or nrows != int(nrows) or ncols < 1 or nrows < 1:
        raise ValueError(f"{path}: ncols/nrows must be positive integers, got {ncols:g}/{nrows:g}")
    if not cell > 0:
        raise ValueError(f"{path}: cellsize must be positive, got {cell:g}")
    ncols, nrows = int(ncols), int(nrows)
    west = header.get("xllcorner", header.get("xllcenter", 0.0) - cell / 2)
    south = header.get("yllcorner", header.get("yllcenter", 0.0) - cell / 2)
    try:
        values = np.array(text.split(), dtype=np.float64)
    except ValueError as exc:
        raise ValueError(f"{path}: grid values: {exc}") from None
    if values.size != nrows * ncols:
        raise ValueError(f"{path}: header says {nrows} rows x {ncols} columns = {nrows * ncols} "
                         f"values, the file has {values.size}")
    grid = values.reshape(nrows, ncols)
    if "nodata_value" in header:
        grid[grid == header["nodata_value"]] = np.nan
    return GridArrays(grid, float(west), float(south + nrows * cell), float(cell), str(path))


def read_geotiff(path: str | Path) -> GridArrays:
    """Read band 1 of a north-up geographic GeoTIFF with rasterio."""
    import rasterio  # slow import, only for GeoTIFF sources
    from rasterio.errors import RasterioIOError

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    try:
        with rasterio.open(path) as src:
            t = src.transform
            if src.crs is not None and src.crs.to_epsg() != 4326:
                raise ValueError(f"{path}: CRS must be geographic EPSG:4326, got {src.crs}")
            if t.b != 0 or t.d != 0 or t.e >= 0:
                raise ValueError(f"{path}: the grid must be north-up without rotation, "
                                 f"got transform {tuple(t)[:6]}")
            if not np.isclose(t.a, -t.e, rtol=1e-9, atol=0):
                raise ValueError(f"{path}: cells must be square, got {t.a} x {-t.e} degrees")
            band = src.read(1, masked=True)
    except RasterioIOError as exc:
        raise ValueError(f"{path}: not a readable GeoTIFF ({exc})") from None
    grid = np.ma.filled(band.astype(np.float64), np.nan)
    return GridArrays(grid, float(t.c), float(t.f), float(t.a), str(path))


def read_npz(path: str | Path) -> GridArrays:
    """Read satpage's compact grid format (see the module docstring)."""
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as z:
            version = int(z["format_version"])
            if version != NPZ_FORMAT_VERSION:
                raise ValueError(f"{path}: grid format version {version}, "
                                 f"this code reads {NPZ_FORMAT_VERSION}")
            return GridArrays(np.array(z["population"], dtype=np.float64),
                              float(z["west_deg"]), float(z["north_deg"]),
                              float(z["cell_size_deg"]), str(path))
    except KeyError as exc:
        raise ValueError(f"{path}: not a satpage population grid (missing {exc})") from None
    except (EOFError, ValueError, zipfile.BadZipFile) as exc:
        if isinstance(exc, ValueError) and str(path) in str(exc):
            raise
        raise ValueError(f"{path}: not a satpage population grid ({exc})") from None


def write_npz(path: str | Path, grid: GridArrays, source: str, source_sha256: str) -> None:
    """Write the compact grid format: float64 keeps every cell value exactly as read."""
    np.savez_compressed(
        Path(path),
        population=np.asarray(grid.population, dtype=np.float64),
        west_deg=np.float64(grid.west_deg),
        north_deg=np.float64(grid.north_deg),
        cell_size_deg=np.float64(grid.cell_size_deg),
        format_version=np.int64(NPZ_FORMAT_VERSION),
        source=np.str_(source),
        source_sha256=np.str_(source_sha256),
    )


def read_grid_file(path: str | Path) -> GridArrays:
    """Dispatch on the file name: ``.asc``/``.asc.gz``, ``.tif``/``.tiff``, ``.npz``."""
    path = Path(path)
    name = path.name.lower()
    if name.endswith((".asc", ".asc.gz")):
        reader = read_esri_ascii
    elif name.endswith((".tif", ".tiff")):
        reader = read_geotiff
    elif name.endswith(".npz"):
        reader = read_npz
    else:
        raise ValueError(f"{path}: unknown population grid format (want .asc, .asc.gz, "
                         ".tif, .tiff or .npz)")
    log.debug("reading population grid %s", path)
    return reader(path)
