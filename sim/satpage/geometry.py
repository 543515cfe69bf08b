"""Earth-fixed geometry the simulation needs: satellite positions over a time window,
ground points, elevations, and the +Grid plane layout of a constellation.

`SatelliteSet` is the one object the rest of satpage.sim uses. It is built from
orbit_model's `Constellation` (SGP4 through its batched propagation) when that
API is present; otherwise from satpage's own circular two-body propagation of
the Walker elements of DESIGN.md section 3 (``_walker_positions``), which is
what a Walker shell at bstar 0 reduces to apart from J2 (a drift of a few km
per orbit, well inside the 10 s handover step; see docs/strategies.md).

Shape contract: positions are float64 ``(n_sats, n_times, 3)`` in km, Earth-fixed
(ITRS/ECEF), for integer-ns times from the scenario epoch.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
from dataclasses import dataclass

import numpy as np

__all__ = ["SatelliteSet", "PositionCache", "WalkerSpec", "parse_walker", "ground_ecef_km",
           "EARTH_RADIUS_KM", "MU_KM3_S2", "C_KM_S"]

log = logging.getLogger(__name__)

EARTH_RADIUS_KM = 6378.137          # WGS 84 equatorial radius (DESIGN.md section 3)
MU_KM3_S2 = 398600.4418             # Earth's GM (DESIGN.md section 3)
C_KM_S = 299792.458                 # speed of light in vacuum (SI definition)
OMEGA_EARTH_RAD_S = 7.2921150e-5    # Earth rotation rate (IERS conventions)

_WALKER = re.compile(r"^(walker|walker-star):(\d+)/(\d+)/(\d+):([0-9.]+):([0-9.]+)$")


@dataclass(frozen=True)
class WalkerSpec:
    star: bool
    total: int
    planes: int
    phasing: int
    altitude_km: float
    inclination_deg: float

    @property
    def per_plane(self) -> int:
        return self.total // self.planes


def parse_walker(spec: str) -> WalkerSpec:
    """``walker:T/P/F:ALT_KM:INC_DEG`` or ``walker-star:...``; errors quote the value."""
    m = _WALKER.match(spec.strip())
    if not m:
        raise ValueError(f"constellation spec {spec!r} is not walker:T/P/F:ALT_KM:INC_DEG "
                         "or walker-star:T/P/F:ALT_KM:INC_DEG")
    kind, t, p, f, alt, inc = m.groups()
    w = WalkerSpec(kind == "walker-star", int(t), int(p), int(f), float(alt), float(inc))
    if w.planes <= 0 or w.total <= 0 or w.total % w.planes:
        raise ValueError(f"constellation spec {spec!r}: T={w.total} is not divisible by "
                         f"P={w.planes}")
    if not 0 <= w.phasing < w.planes:
        raise ValueError(f"constellation spec {spec!r}: F={w.phasing} outside [0, {w.planes})")
    if w.altitude_km < 150:
        raise ValueError(f"constellation spec {spec!r}: altitude {w.altitude_km} km is below "
                         "150 km")
    if not 0 <= w.inclination_deg <= 180:
        raise ValueError(f"constellation spec {spec!r}: inclination {w.inclination_deg} "
                         "outside [0, 180] deg")
    return w


def _gmst_rad(epoch: dt.datetime, t_s: np.ndarray) -> np.ndarray:
    """Greenwich mean sidereal angle (IAU 1982 polynomial, linear term), enough for a frame
    whose only job is to turn the constellation under the ground clients."""
    j2000 = dt.datetime(2000, 1, 1, 12, tzinfo=dt.UTC)
    d0 = (epoch - j2000).total_seconds() / 86400.0
    gmst0_deg = (280.46061837 + 360.98564736629 * d0) % 360.0
    return np.radians(gmst0_deg) + OMEGA_EARTH_RAD_S * t_s


def _walker_positions(w: WalkerSpec, epoch: dt.datetime, t_ns: np.ndarray) -> np.ndarray:
    s = w.per_plane
    idx = np.arange(w.total)
    p, k = idx // s, idx % s
    raan = np.radians((180.0 if w.star else 360.0) * p / w.planes)
    m0 = np.radians(360.0 * k / s + 360.0 * w.phasing * p / w.total)
    a = EARTH_RADIUS_KM + w.altitude_km
    n = np.sqrt(MU_KM3_S2 / a**3)
    inc = np.radians(w.inclination_deg)
    t_s = np.asarray(t_ns, dtype=np.int64) / 1e9
    u = m0[:, None] + n * t_s[None, :]                      # circular: argument of latitude
    cu, su = np.cos(u), np.sin(u)
    co, so = np.cos(raan)[:, None], np.sin(raan)[:, None]
    x = a * (co * cu - so * su * np.cos(inc))
    y = a * (so * cu + co * su * np.cos(inc))
    z = a * (su * np.sin(inc))
    th = _gmst_rad(epoch, t_s)[None, :]
    ct, st = np.cos(th), np.sin(th)
    return np.stack([ct * x + st * y, -st * x + ct * y, np.broadcast_to(z, x.shape)], axis=-1)


def ground_ecef_km(lat_deg: np.ndarray, lon_deg: np.ndarray) -> np.ndarray:
    """(n, 3) Earth-fixed positions of ground points on a sphere of the equatorial radius
    (the same sphere the footprint radius is computed on)."""
    lat, lon = np.radians(np.asarray(lat_deg, float)), np.radians(np.asarray(lon_deg, float))
    return EARTH_RADIUS_KM * np.stack(
        [np.cos(lat) * np.cos(lon), np.cos(lat) * np.sin(lon), np.sin(lat)], axis=-1)


def _orbit_model_api():
    """orbit_model's Constellation, Earth-fixed propagation and +Grid links, or None."""
    try:
        from orbit_model.constellation import Constellation
        from orbit_model.isl import grid_links
        from orbit_model.propagate import itrs_positions_km
    except ImportError:
        return None
    return Constellation, itrs_positions_km, grid_links


class SatelliteSet:
    """The satellites of a scenario: count, plane layout, +Grid links, Earth-fixed positions.

    ``links`` int32 (m, 2) and ``link_cross_plane`` bool (m,) are the +Grid ISLs
    (orbit_model.isl.grid_links: DESIGN.md section 3, including TLE catalogues
    grouped into planes)."""

    def __init__(self, spec: str, epoch: dt.datetime) -> None:
        self.spec = spec
        self.epoch = epoch
        api = _orbit_model_api()
        self._walker: WalkerSpec | None = None
        self._constellation = None
        if api is not None:
            constellation_cls, self._itrs, grid_links = api
            c = constellation_cls.from_spec(spec, epoch=epoch)
            self._constellation = c
            self.backend = "orbit_model-sgp4"
            self.n_sats = c.n_satellites
            self.plane = np.asarray(c.plane, dtype=np.int64)
            self.slot = np.asarray(c.slot, dtype=np.int64)
            self.altitude_km = float(np.median([sh.altitude_km for sh in c.shells]))
            links = grid_links(c)
            self.links = np.asarray(links.endpoints, dtype=np.int32)
            self.link_cross_plane = np.asarray(links.cross_plane, dtype=bool)
        else:
            if spec.startswith("tle:"):
                raise ValueError(f"constellation spec {spec!r}: TLE catalogues need orbit_model")
            w = self._walker = parse_walker(spec)
            self.backend = "satpage-kepler"
            self.n_sats = w.total
            self.plane = np.arange(w.total) // w.per_plane
            self.slot = np.arange(w.total) % w.per_plane
            self.altitude_km = w.altitude_km
            self.links, self.link_cross_plane = _plus_grid_links(w)

    def positions_km(self, t_ns: np.ndarray) -> np.ndarray:
        """float64 (n_sats, n_times, 3), Earth-fixed km; NaN rows where SGP4 fails."""
        t_ns = np.asarray(t_ns, dtype=np.int64)
        if self._constellation is None:
            return _walker_positions(self._walker, self.epoch, t_ns)
        return np.asarray(self._itrs(self._constellation, t_ns), dtype=np.float64)


class PositionCache:
    """Earth-fixed positions at the handover steps ``j * step_ns``, ``j = 0..n_steps-1``.

    Small runs (the default scenario) hold the whole span in memory. Larger ones
    (a Starlink-sized catalogue over a day is 26 M satellite-steps) write it once, in
    time blocks, to a float32 file in ``store_dir`` (0.5 m resolution at 7000 km)
    that every worker process maps read-only; windows are slices of it."""

    def __init__(self, sats: SatelliteSet, step_ns: int, n_steps: int,
                 max_cached_values: int = 8_000_000, store_dir: str | None = None,
                 block_steps: int = 360) -> None:
        self.sats = sats
        self.step_ns = int(step_ns)
        self.n_steps = int(n_steps)
        self._all = None
        self.path = None
        if sats.n_sats * self.n_steps <= max_cached_values:
            self._all = sats.positions_km(np.arange(self.n_steps, dtype=np.int64) * self.step_ns)
        elif store_dir is not None:
            import pathlib
            self.path = pathlib.Path(store_dir) / f"positions-{self.n_steps}x{sats.n_sats}.f32"
            shape = (sats.n_sats, self.n_steps, 3)
            if not self.path.exists():
                tmp = self.path.with_suffix(".tmp")
                mm = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.float32, shape=shape)
                for j in range(0, self.n_steps, block_steps):
                    k = min(self.n_steps, j + block_steps)
                    mm[:, j:k] = sats.positions_km(np.arange(j, k, dtype=np.int64) * self.step_ns)
                mm.flush()
                del mm
                tmp.rename(self.path)
            self._all = np.load(self.path, mmap_mode="r")

    def window(self, j0: int, j1: int) -> np.ndarray:
        """(n_sats, j1 - j0 + 1, 3) float64 at steps j0..j1 inclusive."""
        if self._all is not None and j1 < self.n_steps:
            return np.asarray(self._all[:, j0:j1 + 1], dtype=np.float64)
        return self.sats.positions_km(np.arange(j0, j1 + 1, dtype=np.int64) * self.step_ns)


def _plus_grid_links(w: WalkerSpec) -> tuple[np.ndarray, np.ndarray]:
    """+Grid links of a Walker shell, the rule of orbit_model.isl (used only without it):
    in-plane rings; (p, k)-(p+1, k); for delta with P >= 3 the wrap (P-1, k)-(0, k+F)."""
    s, n_p = w.per_plane, w.planes
    idx = np.arange(w.total).reshape(n_p, s)
    pairs, cross = [], []
    if s >= 2:
        pairs.append(np.stack([idx.ravel(), np.roll(idx, -1, axis=1).ravel()], 1))
        cross.append(np.zeros(w.total, bool))
    for p in range(n_p - 1):
        pairs.append(np.stack([idx[p], idx[p + 1]], 1))
        cross.append(np.ones(s, bool))
    if not w.star and n_p >= 3:
        pairs.append(np.stack([idx[n_p - 1], idx[0][(np.arange(s) + w.phasing) % s]], 1))
        cross.append(np.ones(s, bool))
    ends = np.sort(np.concatenate(pairs), axis=1)
    cr = np.concatenate(cross)
    keep = ends[:, 0] != ends[:, 1]
    ends, cr = ends[keep], cr[keep]
    _, first = np.unique(ends[:, 0] * w.total + ends[:, 1], return_index=True)
    return ends[first].astype(np.int32), cr[first]
