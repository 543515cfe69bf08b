"""SGP4 propagation of a whole constellation at once, in TEME or Earth-fixed (ITRS) axes.

Shape contract: positions and velocities are ``(n_sats, n_times, 3)`` float64
in km and km/s; ``error`` is ``(n_sats, n_times)`` uint8 with sgp4's error codes
(0 = fine). A satellite whose elements fail at some time has NaN there and the
failure is logged, never raised for the whole batch (as ``SatrecArray`` does).

Times are int64 nanoseconds from the constellation's epoch.

Earth-fixed axes: the same rotation Skyfield applies to an ``EarthSatellite``
(TEME -> GCRS with ``TEME.rotation_at``, then GCRS -> ITRS with ``itrs``),
which reduces to a z-rotation by the GMST-1982 angle of UT1 (polar motion is
not applied, as Skyfield's default timescale has none). ``teme_to_itrs_matrices``
composes Skyfield's two frame rotations so this stays true by construction.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass

import numba
import numpy as np
from sgp4.api import SGP4_ERRORS
from skyfield.framelib import itrs
from skyfield.functions import T as transpose
from skyfield.functions import mxm
from skyfield.sgp4lib import TEME, theta_GMST1982

from orbit_model.constants import WGS84_A_KM, WGS84_F
from orbit_model.constellation import Constellation
from orbit_model.timebase import NS_PER_S, skyfield_times, utc_jd

__all__ = [
    "Ephemeris",
    "propagate",
    "teme_to_itrs_matrices",
    "gmst_angles_rad",
    "teme_to_itrs_matrices_skyfield",
    "itrs_positions_km",
    "teme_positions_km",
    "BLOCK_STEPS",
    "teme_block_km",
    "itrs_block_km",
    "iter_itrs_chunks",
    "itrs_positions_at_km",
    "geodetic_from_itrs",
    "subsatellite_points",
]

log = logging.getLogger(__name__)

_DAY_S = 86400.0
# Hermite knots at most this far apart: cubic Hermite on SGP4 position+velocity
# is good to well under a metre at 60 s (docs/orbit-model.md, bench/bench_orbit.py).
DEFAULT_KNOT_NS = 60 * NS_PER_S


@dataclass(frozen=True)
class Ephemeris:
    """Positions and velocities of every satellite at every time.

    ``position_km``/``velocity_km_s``: (n_sats, n_times, 3); ``error``:
    (n_sats, n_times) sgp4 error codes; ``frame``: ``"teme"`` or ``"itrs"``.
    """

    t_ns: np.ndarray
    position_km: np.ndarray
    velocity_km_s: np.ndarray
    error: np.ndarray
    frame: str

    @property
    def failed_satellites(self) -> np.ndarray:
        """Indices of satellites with an SGP4 error at any of the times."""
        return np.flatnonzero(self.error.any(axis=1))


def _as_times(t_ns) -> np.ndarray:
    t_ns = np.asarray(t_ns)
    if t_ns.dtype.kind not in "iu":
        raise ValueError(f"times must be integer nanoseconds, got dtype {t_ns.dtype}")
    return np.atleast_1d(t_ns.astype(np.int64))


def _report_errors(constellation: Constellation, error: np.ndarray) -> None:
    if not error.any():
        return
    sats = np.array([i for i in np.flatnonzero(error.any(axis=1)) if i not in constellation._reported],
                    dtype=np.int64)
    if sats.size == 0:
        return
    constellation._reported.update(int(i) for i in sats)
    first = sats[:5]
    detail = "; ".join(
        f"satellite {i} ({constellation.names[i] or 'unnamed'}): "
        f"{SGP4_ERRORS.get(int(error[i][error[i] != 0][0]), 'error')}" for i in first
    )
    log.warning("SGP4 failed for %d satellites (NaN positions): %s%s", sats.size, detail,
                " ..." if sats.size > first.size else "")


def _sgp4_teme(constellation: Constellation, t_ns: np.ndarray):
    whole, fraction = utc_jd(constellation.epoch, t_ns)
    error, position, velocity = constellation.satrec_array.sgp4(whole, fraction)
    bad = error != 0
    if bad.any():
        position[bad] = np.nan
        velocity[bad] = np.nan
    return error.astype(np.uint8), position, velocity


def teme_to_itrs_matrices(constellation_or_epoch, t_ns) -> tuple[np.ndarray, np.ndarray]:
    """Rotation TEME -> ITRS, shape (n_times, 3, 3), and Earth's rotation rate (n_times,) rad/s.

    Skyfield's frames give ``itrs.rotation_at(t) @ TEME.rotation_at(t).T``; the
    precession-nutation matrix and GAST cancel in that product (Skyfield's own
    ``find_events`` skips them for the same reason), leaving a z-rotation by
    -GMST1982(UT1). That is computed here directly, with UT1 from Skyfield's
    timescale; a test holds it to the full frame product.
    """
    epoch = getattr(constellation_or_epoch, "epoch", constellation_or_epoch)
    t = skyfield_times(epoch, _as_times(t_ns))
    theta, theta_dot = theta_GMST1982(t.whole, t.ut1_fraction)  # rad, rad per UT1 day
    theta = np.atleast_1d(theta)
    return _z_rotations(theta), np.broadcast_to(theta_dot / _DAY_S, (theta.size,)).copy()


def _z_rotations(theta: np.ndarray) -> np.ndarray:
    """rot_z(-theta) for each angle: (n, 3, 3), TEME -> ITRS."""
    c, s = np.cos(theta), np.sin(theta)
    rotation = np.zeros((theta.size, 3, 3))
    rotation[:, 0, 0], rotation[:, 0, 1] = c, s
    rotation[:, 1, 0], rotation[:, 1, 1] = -s, c
    rotation[:, 2, 2] = 1.0
    return rotation


def gmst_angles_rad(constellation_or_epoch, t_ns) -> np.ndarray:
    """GMST-1982 angle theta (n_times,) rad: ITRS = rot_z(-theta) TEME (see ``teme_to_itrs_matrices``)."""
    epoch = getattr(constellation_or_epoch, "epoch", constellation_or_epoch)
    t = skyfield_times(epoch, _as_times(t_ns))
    theta, _ = theta_GMST1982(t.whole, t.ut1_fraction)
    return np.atleast_1d(np.asarray(theta, dtype=np.float64))


def teme_to_itrs_matrices_skyfield(constellation_or_epoch, t_ns) -> np.ndarray:
    """The same rotation as the full Skyfield frame product (slow; the reference for tests)."""
    epoch = getattr(constellation_or_epoch, "epoch", constellation_or_epoch)
    t = skyfield_times(epoch, _as_times(t_ns))
    rotation = mxm(itrs.rotation_at(t), transpose(TEME.rotation_at(t)))  # (3, 3, n)
    return np.moveaxis(np.asarray(rotation).reshape(3, 3, -1), -1, 0)


def _rotate(rotation: np.ndarray, vectors: np.ndarray) -> np.ndarray:
    """(n_times, 3, 3) applied to (n_sats, n_times, 3)."""
    return np.einsum("tij,stj->sti", rotation, vectors)


def propagate(constellation: Constellation, t_ns, frame: str = "teme") -> Ephemeris:
    """SGP4 for every satellite at every time in one ``SatrecArray`` call.

    ``frame="itrs"`` gives Earth-fixed positions and velocities (velocity
    relative to the rotating Earth, as Skyfield's ``TEME_to_ITRF``).
    """
    if frame not in ("teme", "itrs"):
        raise ValueError(f"frame {frame!r} is not 'teme' or 'itrs'")
    t_ns = _as_times(t_ns)
    error, position, velocity = _sgp4_teme(constellation, t_ns)
    _report_errors(constellation, error)
    if frame == "itrs":
        rotation, omega = teme_to_itrs_matrices(constellation, t_ns)
        position = _rotate(rotation, position)
        velocity = _rotate(rotation, velocity)
        # v_ITRS = R v_TEME - omega x r_ITRS, omega along +z
        velocity[..., 0] += omega * position[..., 1]
        velocity[..., 1] -= omega * position[..., 0]
    return Ephemeris(t_ns=t_ns, position_km=position, velocity_km_s=velocity, error=error, frame=frame)


@numba.njit(cache=True)
def _hermite_kernel(pos_k, vel_k, knot_s, t_s, seg, out):
    """Cubic Hermite between SGP4 knots: pos_k/vel_k (n_sats, n_knots, 3), out (n_sats, n_t, 3)."""
    for j in range(t_s.size):
        g = seg[j]
        h = knot_s[g + 1] - knot_s[g]
        s = (t_s[j] - knot_s[g]) / h
        s2 = s * s
        s3 = s2 * s
        h00 = 2 * s3 - 3 * s2 + 1
        h10 = (s3 - 2 * s2 + s) * h
        h01 = -2 * s3 + 3 * s2
        h11 = (s3 - s2) * h
        for i in range(pos_k.shape[0]):
            for c in range(3):
                out[i, j, c] = (h00 * pos_k[i, g, c] + h10 * vel_k[i, g, c]
                                + h01 * pos_k[i, g + 1, c] + h11 * vel_k[i, g + 1, c])


def teme_positions_km(constellation: Constellation, t_ns, knot_ns: int | None = DEFAULT_KNOT_NS,
                      report: bool = True) -> np.ndarray:
    """TEME positions (n_sats, n_times, 3) km, NaN where SGP4 fails.

    With ``knot_ns`` SGP4 runs only on knots at most ``knot_ns`` apart and
    positions between them come from cubic Hermite interpolation of the TEME
    position and velocity (sub-metre at 60 s; parity test in the test suite).
    ``knot_ns=None`` runs SGP4 at every time. Times must be sorted ascending
    for interpolation.
    """
    t_ns = _as_times(t_ns)
    direct = knot_ns is None or t_ns.size < 3
    if not direct:
        if np.any(np.diff(t_ns) < 0):
            raise ValueError("times must be ascending for interpolated propagation")
        span = int(t_ns[-1] - t_ns[0])
        n_knots = max(2, -(-span // int(knot_ns)) + 1)
        direct = n_knots >= t_ns.size
    if direct:
        error, position, _ = _sgp4_teme(constellation, t_ns)
    else:
        knots = np.linspace(t_ns[0], t_ns[-1], n_knots).round().astype(np.int64)
        knots[-1] = t_ns[-1]
        error_k, pos_k, vel_k = _sgp4_teme(constellation, knots)
        seg = np.clip(np.searchsorted(knots, t_ns, side="right") - 1, 0, knots.size - 2)
        knot_s = (knots - knots[0]) / NS_PER_S
        t_s = (t_ns - knots[0]) / NS_PER_S
        position = np.empty((pos_k.shape[0], t_ns.size, 3))
        _hermite_kernel(pos_k, vel_k, knot_s, t_s, seg, position)
        error = np.maximum(error_k[:, seg], error_k[:, seg + 1])
    if report:
        _report_errors(constellation, error)
    return position


def itrs_positions_km(constellation: Constellation, t_ns, knot_ns: int | None = DEFAULT_KNOT_NS,
                      report: bool = True) -> np.ndarray:
    """Earth-fixed positions (n_sats, n_times, 3) km (see ``teme_positions_km`` for ``knot_ns``)."""
    t_ns = _as_times(t_ns)
    position = teme_positions_km(constellation, t_ns, knot_ns=knot_ns, report=report)
    rotation, _ = teme_to_itrs_matrices(constellation, t_ns)
    return _rotate(rotation, position)


#: The fixed time grid on which whole-constellation positions are computed and kept:
#: blocks of BLOCK_STEPS steps from step 0 (the handover sweep's chunks). The knots of
#: the interpolation lie within a block, so a step's position does not depend on which
#: window asked for it.
BLOCK_STEPS = 360

#: TEME positions and GMST of the last few blocks, per constellation: sim asks for the
#: schedules of start-ordered session chunks one after another, then for their Earth-fixed
#: windows and the gateway's schedule over the same hour-long blocks (a 1,000,000-session
#: day propagated each block about 100 times, 4,408 satellites x 360 steps each, without
#: this).
_BLOCKS: dict[tuple, tuple] = {}
_BLOCKS_KEPT = 4


def teme_block_km(constellation: Constellation, t_ns, knot_ns: int | None = DEFAULT_KNOT_NS
                  ) -> tuple[np.ndarray, np.ndarray]:
    """(TEME positions (n_sats, n, 3) km as ``teme_positions_km``, GMST (n,) rad as
    ``gmst_angles_rad``) at the times of one block. Kept (least recently used dropped
    first) and returned as they are: callers only read them."""
    t_ns = _as_times(t_ns)
    key = (id(constellation), knot_ns, t_ns.tobytes())
    got = _BLOCKS.pop(key, None)
    if got is None or got[0] is not constellation:
        got = (constellation, teme_positions_km(constellation, t_ns, knot_ns=knot_ns),
               gmst_angles_rad(constellation, t_ns))
        while len(_BLOCKS) >= _BLOCKS_KEPT:
            _BLOCKS.pop(next(iter(_BLOCKS)))
    _BLOCKS[key] = got
    return got[1], got[2]


def itrs_block_km(constellation: Constellation, t_ns, knot_ns: int | None = DEFAULT_KNOT_NS
                  ) -> np.ndarray:
    """Earth-fixed positions (n_sats, n, 3) km of one block: ``itrs_positions_km`` of the
    same times to the bit, rotated from the kept TEME block (no second SGP4 after the
    handover sweep of the block)."""
    position, theta = teme_block_km(constellation, t_ns, knot_ns)
    return _rotate(_z_rotations(theta), position)


def itrs_positions_at_km(constellation: Constellation, satellites, t_ns) -> np.ndarray:
    """Earth-fixed positions (n, 3) km of ``satellites[i]`` at ``t_ns[i]`` (pairs, not a grid).

    One ``Satrec.sgp4_array`` call per distinct satellite: for refining events
    of many satellites at their own times.
    """
    satellites, t_ns = np.broadcast_arrays(np.asarray(satellites, np.int64), _as_times(t_ns))
    satellites, t_ns = satellites.ravel(), t_ns.ravel()
    position = np.full((t_ns.size, 3), np.nan)
    if t_ns.size == 0:
        return position
    whole, fraction = utc_jd(constellation.epoch, t_ns)
    order = np.argsort(satellites, kind="stable")
    bounds = np.flatnonzero(np.diff(satellites[order])) + 1
    for group in np.split(order, bounds):
        satrec = constellation.satrecs[satellites[group[0]]]
        error, r, _ = satrec.sgp4_array(whole[group], fraction[group])
        r[error != 0] = np.nan
        position[group] = r
    rotation, _ = teme_to_itrs_matrices(constellation, t_ns)
    return np.einsum("tij,tj->ti", rotation, position)


def iter_itrs_chunks(constellation: Constellation, t_ns, chunk_steps: int = 360,
                     knot_ns: int | None = DEFAULT_KNOT_NS) -> Iterator[tuple[slice, np.ndarray]]:
    """Earth-fixed positions over ``t_ns`` in time chunks: yields ``(slice into t_ns,
    positions (n_sats, len(slice), 3))`` so memory stays bounded by the chunk."""
    t_ns = _as_times(t_ns)
    if chunk_steps < 1:
        raise ValueError(f"chunk_steps {chunk_steps} must be at least 1")
    for start in range(0, t_ns.size, chunk_steps):
        part = slice(start, min(start + chunk_steps, t_ns.size))
        yield part, itrs_positions_km(constellation, t_ns[part], knot_ns=knot_ns)


def geodetic_from_itrs(position_km: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """WGS84 geodetic latitude, longitude (deg) and height (km) of ITRS positions (..., 3).

    Bowring's iteration, three rounds: well under a millimetre for LEO.
    """
    x, y, z = position_km[..., 0], position_km[..., 1], position_km[..., 2]
    e2 = WGS84_F * (2 - WGS84_F)
    p = np.hypot(x, y)
    lat = np.arctan2(z, p * (1 - e2))
    for _ in range(3):
        sin_lat = np.sin(lat)
        n = WGS84_A_KM / np.sqrt(1 - e2 * sin_lat**2)
        lat = np.arctan2(z + e2 * n * sin_lat, p)
    sin_lat = np.sin(lat)
    n = WGS84_A_KM / np.sqrt(1 - e2 * sin_lat**2)
    cos_lat = np.cos(lat)
    # height: along the normal; the z form is better conditioned near the poles
    height = np.where(np.abs(cos_lat) > 1e-3, p / np.where(cos_lat == 0, 1, cos_lat) - n,
                      z / np.where(sin_lat == 0, 1, sin_lat) - n * (1 - e2))
    return np.degrees(lat), np.degrees(np.arctan2(y, x)), height


def subsatellite_points(constellation: Constellation, t_ns,
                        knot_ns: int | None = DEFAULT_KNOT_NS) -> tuple[np.ndarray, np.ndarray]:
    """Geodetic latitude and longitude (deg) below every satellite: two (n_sats, n_times) arrays.

    For long spans call it per time chunk (or use ``iter_itrs_chunks``).
    """
    lat, lon, _ = geodetic_from_itrs(itrs_positions_km(constellation, t_ns, knot_ns=knot_ns))
    return lat, lon
