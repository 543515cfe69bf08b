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

__all__ = ["SatelliteSet", "WalkerSpec", "parse_walker", "ground_ecef_km",
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


class SatelliteSet:
    """The satellites of a scenario: count, +Grid plane layout, Earth-fixed positions."""

    def __init__(self, spec: str, epoch: dt.datetime) -> None:
        self.spec = spec
        self.epoch = epoch
        self._constellation = None
        self._walker: WalkerSpec | None = None
        self.backend = "satpage-kepler"
        try:
            from orbit_model import Constellation  # type: ignore[attr-defined]
        except ImportError:
            Constellation = None  # noqa: N806
        if spec.startswith("tle:") and Constellation is None:
            raise ValueError(f"constellation spec {spec!r}: TLE catalogues need "
                             "orbit_model.Constellation, which this installation lacks")
        if spec.startswith("walker"):
            self._walker = parse_walker(spec)
        if Constellation is not None:
            self._constellation = Constellation.from_spec(spec, epoch=epoch)
            self.backend = "orbit_model"
        if self._walker is not None:
            w = self._walker
            self.n_sats = w.total
            self.plane = np.arange(w.total) // w.per_plane
            self.slot = np.arange(w.total) % w.per_plane
            self.star = w.star
            self.altitude_km = w.altitude_km
        else:
            c = self._constellation
            self.n_sats = int(c.n_sats)
            self.plane = np.asarray(c.plane, dtype=np.int64)
            self.slot = np.asarray(c.slot, dtype=np.int64)
            self.star = bool(getattr(c, "star", False))
            self.altitude_km = float(np.median(c.altitude_km))
        self.n_planes = int(self.plane.max()) + 1

    def positions_km(self, t_ns: np.ndarray) -> np.ndarray:
        """float64 (n_sats, n_times, 3), Earth-fixed km."""
        t_ns = np.asarray(t_ns, dtype=np.int64)
        if self._walker is not None and self._constellation is None:
            return _walker_positions(self._walker, self.epoch, t_ns)
        return np.asarray(self._constellation.positions_ecef_km(t_ns), dtype=np.float64)
