"""Gridded population (GPW v4) and the population inside circles on the Earth.

A ``PopulationGrid`` is a regular latitude/longitude grid of population counts
(rows north to south, columns west to east). "The population inside a circle"
is the sum of the cells whose *centres* lie within the great-circle distance
of the circle's centre (distance <= radius, on a sphere); the fraction of a
cell that the circle covers is not apportioned. This is the definition the
tests check against a brute-force haversine sum.

How the sum is computed (exact, vectorised over many centres): a cell centre
at latitude phi_i is inside the cap of angular radius theta around (phi0, lam0)
iff  cos(dlam) >= (cos(theta) - sin(phi0) sin(phi_i)) / (cos(phi0) cos(phi_i)),
so in each grid row the cells inside form one longitude interval
[lam0 - dlam_i, lam0 + dlam_i] (or the whole row, or nothing). With prefix
sums along every row, each (centre, row) pair costs O(1); only the rows in the
cap's latitude band are visited. See docs/population.md for the numbers.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from functools import cached_property
from importlib import resources
from pathlib import Path

import numpy as np

from orbit_model import population_io
from orbit_model.constants import EARTH_RADIUS_KM

__all__ = ["PopulationGrid", "DEFAULT_POPULATION_SOURCE",
           "default_population_path"]

log = logging.getLogger(__name__)

#: The source spec that means "the embedded default grid".
DEFAULT_POPULATION_SOURCE = "default"

_DEFAULT_FILE = "gpw-v4-2020-30min.npz"

# Work in chunks of about this many (centre, row) pairs to bound memory (~ 16
# float64 temporaries of this size are alive at once: ~ 50 MB).
_CHUNK_PAIRS = 400_000

# Below this many centres the numba kernel's first-call compile (~1 s, then cached
# on disk) costs more than it saves.
_NUMBA_MIN_CENTRES = 5_000


def default_population_path() -> Path:
    """Where the embedded default grid lives: ``$SATPAGE_DATA_DIR`` if set, else the
    package data of orbit_model (``orbit_model/data/``, in a wheel and in a checkout)."""
    env = os.environ.get("SATPAGE_DATA_DIR")
    base = Path(env) if env else Path(os.fspath(resources.files("orbit_model") / "data"))
    return base / _DEFAULT_FILE


@dataclass(frozen=True, eq=False)
class PopulationGrid:
    """Population counts on a regular latitude/longitude grid.

    ``population`` has shape (n_rows, n_cols), rows north to south starting at
    ``north_deg``, columns west to east starting at ``west_deg``, square cells of
    ``cell_size_deg``; NaN marks "no data" (water in GPW) and counts as 0.
    """

    population: np.ndarray
    west_deg: float
    north_deg: float
    cell_size_deg: float
    source: str = ""

    def __post_init__(self) -> None:
        pop = np.asarray(self.population)
        if pop.ndim != 2 or pop.size == 0:
            raise ValueError(f"{self.source or 'population grid'}: need a non-empty 2-D grid, "
                             f"got shape {pop.shape}")
        if not self.cell_size_deg > 0:
            raise ValueError(f"{self.source}: cell size must be positive, got {self.cell_size_deg}")
        south = self.north_deg - pop.shape[0] * self.cell_size_deg
        tol = 1e-9 * self.cell_size_deg
        if self.north_deg > 90 + tol or south < -90 - tol:
            raise ValueError(f"{self.source}: grid latitudes {south:g}..{self.north_deg:g} "
                             "fall outside [-90, 90]")
        if pop.shape[1] * self.cell_size_deg > 360 + tol:
            raise ValueError(f"{self.source}: grid spans {pop.shape[1] * self.cell_size_deg:g} "
                             "degrees of longitude, more than 360")
        if np.nanmin(pop, initial=0.0) < 0:
            raise ValueError(f"{self.source}: negative population {np.nanmin(pop):g} "
                             "(a NODATA value the header does not declare?)")
        object.__setattr__(self, "population", pop)

    # ---- constructors -------------------------------------------------------------

    @classmethod
    def from_file(cls, path: str | Path) -> PopulationGrid:
        """A GPW v4 grid file: ESRI ASCII (``.asc``, ``.asc.gz``), GeoTIFF (``.tif``,
        ``.tiff``) at any resolution, or satpage's compact ``.npz``."""
        g = population_io.read_grid_file(path)
        return cls(g.population, g.west_deg, g.north_deg, g.cell_size_deg, g.source)

    @classmethod
    def default(cls) -> PopulationGrid:
        """The embedded default: GPW v4.11, 2020, UN WPP-adjusted count, 30 arc-minutes
        (CC BY 4.0, CIESIN; provenance in the repository's data/README.md)."""
        path = default_population_path()
        if not path.is_file():
            raise FileNotFoundError(f"{path}: the embedded population grid is missing "
                                    "(set SATPAGE_DATA_DIR to the folder that holds it)")
        return _cached_default(str(path), path.stat().st_mtime_ns)

    @classmethod
    def from_spec(cls, spec: str | None) -> PopulationGrid:
        """A population source spec: ``gpw:PATH``, or ``default`` / None / "" for the
        embedded grid."""
        if spec is None or spec.strip() in ("", DEFAULT_POPULATION_SOURCE):
            return cls.default()
        kind, sep, rest = spec.partition(":")
        if sep and kind == "gpw" and rest:
            return cls.from_file(rest)
        raise ValueError(f"population source {spec!r}: want 'gpw:PATH' or "
                         f"'{DEFAULT_POPULATION_SOURCE}'")

    # ---- geometry -------------------------------------------------------------------

    @property
    def n_rows(self) -> int:
        return int(self.population.shape[0])

    @property
    def n_cols(self) -> int:
        return int(self.population.shape[1])

    @property
    def south_deg(self) -> float:
        return self.north_deg - self.n_rows * self.cell_size_deg

    @property
    def is_global_in_longitude(self) -> bool:
        """True when the columns go all the way round (then longitudes wrap)."""
        return abs(self.n_cols * self.cell_size_deg - 360.0) < 1e-9 * self.cell_size_deg

    @cached_property
    def lat_centres_deg(self) -> np.ndarray:
        """(n_rows,) latitude of each row's cell centres, north first."""
        return self.north_deg - (np.arange(self.n_rows) + 0.5) * self.cell_size_deg

    @cached_property
    def lon_centres_deg(self) -> np.ndarray:
        """(n_cols,) longitude of each column's cell centres, west first."""
        return self.west_deg + (np.arange(self.n_cols) + 0.5) * self.cell_size_deg

    @cached_property
    def counts(self) -> np.ndarray:
        """(n_rows, n_cols) float64 population with no-data cells as 0 (read-only)."""
        c = np.nan_to_num(np.asarray(self.population, dtype=np.float64), nan=0.0)
        c.setflags(write=False)
        return c

    @cached_property
    def total(self) -> float:
        """The whole grid's population."""
        return float(self.counts.sum(dtype=np.float64))

    @cached_property
    def _row_prefix(self) -> np.ndarray:
        """(n_rows, n_cols + 1) prefix sums along each row: [i, j] = sum of cells 0..j-1."""
        p = np.zeros((self.n_rows, self.n_cols + 1), dtype=np.float64)
        np.cumsum(self.counts, axis=1, out=p[:, 1:])
        return p

    def cell_of(self, lat_deg: np.ndarray | float, lon_deg: np.ndarray | float
                ) -> tuple[np.ndarray, np.ndarray]:
        """Row and column of the cells holding the given points (-1 where outside)."""
        lat = np.asarray(lat_deg, dtype=np.float64)
        lon = np.asarray(lon_deg, dtype=np.float64)
        row = np.floor((self.north_deg - lat) / self.cell_size_deg).astype(np.int64)
        x = lon - self.west_deg
        if self.is_global_in_longitude:
            x = np.mod(x, 360.0)
        col = np.floor(x / self.cell_size_deg).astype(np.int64)
        outside = (row < 0) | (row >= self.n_rows) | (col < 0) | (col >= self.n_cols)
        return np.where(outside, -1, row), np.where(outside, -1, col)

    def masked(self, keep: np.ndarray, source: str | None = None) -> PopulationGrid:
        """A grid with only the cells where ``keep`` (n_rows, n_cols) is True; others 0."""
        keep = np.asarray(keep, dtype=bool)
        if keep.shape != self.population.shape:
            raise ValueError(f"mask shape {keep.shape} != grid shape {self.population.shape}")
        pop = np.where(keep, self.population, np.where(np.isnan(self.population), np.nan, 0.0))
        return PopulationGrid(pop, self.west_deg, self.north_deg, self.cell_size_deg,
                              source if source is not None else self.source)

    # ---- population inside circles ---------------------------------------------------

    def population_in_circle(self, lat_deg, lon_deg, radius_km,
                             earth_radius_km: float = EARTH_RADIUS_KM,
                             method: str = "auto") -> np.ndarray | float:
        """Population of the cells whose centres lie within ``radius_km`` (great-circle
        distance on a sphere of ``earth_radius_km``) of each centre.

        ``lat_deg``, ``lon_deg`` and ``radius_km`` broadcast together to any shape,
        e.g. (n_sats, n_times); the result has that shape (a float for scalars).
        ``method`` as for ``population_in_cap``.
        """
        radius = np.asarray(radius_km, dtype=np.float64)
        bad = ~(radius >= 0)
        if np.any(bad):
            raise ValueError(f"radius_km must be >= 0, got {radius[bad].flat[0].item()!r}")
        if not earth_radius_km > 0:
            raise ValueError(f"earth_radius_km must be positive, got {earth_radius_km!r}")
        return self.population_in_cap(lat_deg, lon_deg, radius / earth_radius_km, method=method)

    def population_in_cap(self, lat_deg, lon_deg, central_angle_rad,
                          method: str = "auto") -> np.ndarray | float:
        """Like ``population_in_circle`` with the radius as an Earth central angle
        (radians); angles beyond pi mean the whole sphere.

        ``method``: "numpy" (the plain vectorised version), "numba" (the same
        arithmetic compiled, ~20x faster; bench/bench_population.py) or "auto"
        (numba for more than a few thousand centres).
        """
        if method not in ("auto", "numpy", "numba"):
            raise ValueError(f"method must be 'auto', 'numpy' or 'numba', got {method!r}")
        lat, lon, ang = np.broadcast_arrays(
            np.asarray(lat_deg, dtype=np.float64), np.asarray(lon_deg, dtype=np.float64),
            np.asarray(central_angle_rad, dtype=np.float64))
        _check_latitudes(lat)
        bad = ~(ang >= 0)
        if np.any(bad):
            raise ValueError(f"central angle must be >= 0 radians, got {ang[bad].flat[0].item()!r}")
        bad = ~np.isfinite(lon)
        if np.any(bad):
            raise ValueError(f"longitude must be finite, got {lon[bad].flat[0].item()!r}")
        shape = lat.shape
        lat, lon, ang = lat.ravel(), lon.ravel(), np.minimum(ang.ravel(), np.pi)
        out = np.empty(lat.size, dtype=np.float64)
        if method == "numba" or (method == "auto" and lat.size > _NUMBA_MIN_CENTRES):
            from orbit_model import _population_kernels

            sin_c = np.sin(np.radians(self.lat_centres_deg))
            cos_c = np.cos(np.radians(self.lat_centres_deg))
            _population_kernels.cap_sums(
                lat, lon, ang, self._row_prefix, sin_c, cos_c, self.north_deg, self.west_deg,
                self.cell_size_deg, self.is_global_in_longitude,
                int(round(360.0 / self.cell_size_deg)), out)
        elif lat.size:
            # Chunk by the widest cap in the batch: rows per centre <= its band height.
            max_rows = min(self.n_rows, int(2 * np.degrees(ang.max()) / self.cell_size_deg) + 3)
            step = max(1, _CHUNK_PAIRS // max_rows)
            for s in range(0, lat.size, step):
                out[s:s + step] = self._cap_sums(lat[s:s + step], lon[s:s + step],
                                                 ang[s:s + step])
        out = out.reshape(shape)
        return float(out) if out.ndim == 0 else out

    def _cap_sums(self, lat_deg: np.ndarray, lon_deg: np.ndarray, ang: np.ndarray) -> np.ndarray:
        """Cap populations for 1-D arrays of centres (the per-row interval method)."""
        cs = self.cell_size_deg
        ang_deg = np.degrees(ang)
        # Rows whose centre latitude can be inside: [lat - ang, lat + ang], one row of
        # margin each side (the per-row test below is what decides).
        i_lo = np.floor((self.north_deg - (lat_deg + ang_deg)) / cs - 0.5).astype(np.int64) - 1
        i_hi = np.ceil((self.north_deg - (lat_deg - ang_deg)) / cs - 0.5).astype(np.int64) + 1
        i_lo = np.clip(i_lo, 0, self.n_rows - 1)
        i_hi = np.clip(i_hi, 0, self.n_rows - 1)
        k = int((i_hi - i_lo).max()) + 1
        rows = i_lo[:, None] + np.arange(k)[None, :]                       # (m, k)
        in_band = rows <= i_hi[:, None]
        rows = np.minimum(rows, self.n_rows - 1)

        phi0 = np.radians(lat_deg)[:, None]
        phi_i = np.radians(self.lat_centres_deg)[rows]
        num = np.cos(ang)[:, None] - np.sin(phi0) * np.sin(phi_i)
        den = np.cos(phi0) * np.cos(phi_i)
        # den ~ 0 (centre at a pole): distance does not depend on longitude, the row
        # is all in (num <= 0) or all out.
        tiny = den <= 1e-15
        c = np.divide(num, den, out=np.where(num <= 0, -np.inf, np.inf), where=~tiny)
        whole = in_band & (c <= -1.0)
        part = in_band & (c > -1.0) & (c <= 1.0)
        half_deg = np.degrees(np.arccos(np.clip(c, -1.0, 1.0)))           # (m, k)

        prefix = self._row_prefix
        n = self.n_cols
        # Columns j with centre longitude in [lon0 - half, lon0 + half]:
        # lon_j = west + (j + 0.5) cs  ->  j in [x0 - w, x0 + w].
        x0 = ((lon_deg - self.west_deg) / cs - 0.5)[:, None]
        w = half_deg / cs
        a = np.ceil(x0 - w).astype(np.int64)
        b = np.floor(x0 + w).astype(np.int64)
        length = np.clip(b - a + 1, 0, n)
        if self.is_global_in_longitude:
            a0 = np.mod(a, n)
            end = a0 + length
            first = prefix[rows, np.minimum(end, n)] - prefix[rows, a0]
            wrapped = prefix[rows, np.clip(end - n, 0, n)]   # the part past the seam
            interval = first + np.where(end > n, wrapped, 0.0)
        else:
            # A regional grid: the interval may reach the grid through +-360 degrees.
            interval = np.zeros(rows.shape)
            shift = int(round(360.0 / cs))
            for kshift in (-shift, 0, shift):
                lo = np.clip(a + kshift, 0, n)
                hi = np.clip(b + kshift + 1, 0, n)
                interval += np.where(hi > lo, prefix[rows, hi] - prefix[rows, lo], 0.0)
            # A regional grid whose interval is wider than 360 degrees: whole row.
        row_total = prefix[rows, n]
        contrib = np.where(whole, row_total, np.where(part & (length > 0), interval, 0.0))
        return contrib.sum(axis=1)


def _check_latitudes(lat: np.ndarray) -> None:
    bad = ~((lat >= -90.0) & (lat <= 90.0))
    if np.any(bad):
        raise ValueError(f"latitude must be in [-90, 90] degrees, got {lat[bad].flat[0].item()!r}")


_DEFAULT_CACHE: dict[tuple[str, int], PopulationGrid] = {}


def _cached_default(path: str, mtime_ns: int) -> PopulationGrid:
    """The default grid is read once per process (it is immutable)."""
    key = (path, mtime_ns)
    if key not in _DEFAULT_CACHE:
        g = population_io.read_npz(path)
        _DEFAULT_CACHE[key] = PopulationGrid(g.population, g.west_deg, g.north_deg,
                                             g.cell_size_deg, DEFAULT_POPULATION_SOURCE)
    return _DEFAULT_CACHE[key]
