"""Ephemeris files for the live service (``satpage-ephemeris/1``, docs/live.md).

The daemons do not propagate orbits: orbit_model writes every satellite's
Earth-fixed position at knots a fixed step apart over a horizon, and the gateway
interpolates them (4-point Lagrange, within 3.2 m of orbit_model's own positions
at 60 s knots for 500 km orbits; docs/live.md) to decide who serves a place.

Layout: one line of JSON (the header, UTF-8, ending in ``\\n``), then
``knots x satellites x 3`` little-endian float32 km, knot-major (knot k's
satellites in index order, x y z each). Knot k is at ``t0_ns + k * knot_ns``
nanoseconds from ``epoch``. The frame is the one the handover kernel uses:
TEME rotated about z by GMST-1982 (``orbit_model.itrs_positions_km``).
The header also carries the handover policy the gateway applies, so a file
names everything a live schedule depends on; under scheduled reallocation also
``interval_ns`` and ``phase_ns`` (absent: none; orbit_model.handover).

Compressed body (``compress=True``; header ``dtype`` ``delta5-i1-zlib``, or
``-i2-``/``-i4-`` when the residuals need them, and ``quantum_m``): positions
rounded to ``quantum_m`` metres as integers; per satellite and axis (series-major:
satellite 0's x, y, z, then satellite 1's ...) the first value of the
0th..4th differences along time as 5 little-endian int32, then the 5th
differences (``knots - 5`` of them) as int8 (int16, int32); the whole body
zlib-compressed. Decoding is five cumulative sums, exact in integers. At 60 s
knots of 500 km orbits the 5th differences of 1 m integers stay within 127, and
a day of 150 satellites takes 0.41 MB instead of 2.6 MB: a Kubernetes ConfigMap
(1 MiB) or a Docker config (500 kB) holds it (docs/emulation.md).
"""

from __future__ import annotations

import json
import os
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from orbit_model.constellation import Constellation
from orbit_model.handover import POLICIES, reallocation_steps
from orbit_model.propagate import itrs_positions_km
from orbit_model.timebase import NS_PER_S

__all__ = ["EPHEMERIS_FORMAT", "EphemerisFile", "write_ephemeris", "read_ephemeris"]

EPHEMERIS_FORMAT = "satpage-ephemeris/1"
_DTYPE = np.dtype("<f4")
_DELTA_ORDER = 5
_RESIDUALS = {"i1": np.dtype("<i1"), "i2": np.dtype("<i2"), "i4": np.dtype("<i4")}
_DELTA_DTYPES = {f"delta{_DELTA_ORDER}-{k}-zlib": v for k, v in _RESIDUALS.items()}


@dataclass(frozen=True)
class EphemerisFile:
    """What a ``satpage-ephemeris/1`` file holds; ``position_km`` is (knots, satellites, 3) float32."""

    constellation: str
    epoch: str
    t0_ns: int
    knot_ns: int
    position_km: np.ndarray
    policy: str
    sticky: bool
    min_elevation_deg: float
    step_ns: int
    interval_ns: int = 0
    phase_ns: int = 0

    @property
    def end_ns(self) -> int:
        """Last knot time (the horizon): the gateway serves times up to it."""
        return self.t0_ns + (self.position_km.shape[0] - 1) * self.knot_ns


def write_ephemeris(path: str | Path, constellation: Constellation, duration_ns: int, *,
                    t0_ns: int = 0, knot_ns: int = 60 * NS_PER_S, policy: str = "highest",
                    sticky: bool = True, min_elevation_deg: float = 10.0,
                    step_ns: int = 10 * NS_PER_S, interval_ns: int = 0,
                    phase_ns: int = 0, compress: bool = False,
                    quantum_m: float = 1.0) -> EphemerisFile:
    """Write positions at ``t0_ns, t0_ns + knot_ns, ...`` covering ``duration_ns``, atomically
    (a temporary file renamed over ``path``, so a gateway reloading it never sees half a file).

    ``step_ns`` is the handover step (``satpage orbit handovers --step-s``); it must divide
    ``knot_ns``. ``interval_ns`` > 0: the gateway reallocates at ``phase_ns + k *
    interval_ns`` (both multiples of ``step_ns``). Size: 12 bytes per satellite per knot
    (docs/live.md); ``compress``: the delta-coded body of the module docstring, positions
    rounded to ``quantum_m`` (6 to 7 times smaller at 60 s knots)."""
    if policy not in POLICIES:
        raise ValueError(f"live handover policy {policy!r} is not one of {', '.join(POLICIES)}")
    if knot_ns <= 0 or step_ns <= 0 or knot_ns % step_ns:
        raise ValueError(f"knot step {knot_ns} ns must be a positive multiple of the handover step {step_ns} ns")
    if duration_ns < 3 * knot_ns:
        raise ValueError(f"duration {duration_ns} ns is shorter than 3 knots of {knot_ns} ns")
    if t0_ns < 0 or t0_ns % knot_ns:
        raise ValueError(f"t0 {t0_ns} ns must be a non-negative multiple of the knot step {knot_ns} ns")
    if not -90.0 <= min_elevation_deg < 90.0:
        raise ValueError(f"minimum elevation {min_elevation_deg} deg is outside -90..90")
    reallocation_steps(np.array([0, step_ns], np.int64), interval_ns, phase_ns)  # the ranges
    if interval_ns % step_ns or phase_ns % step_ns:
        raise ValueError(f"reallocation interval {interval_ns} ns and phase {phase_ns} ns must be "
                         f"multiples of the handover step {step_ns} ns")
    n = -(-int(duration_ns) // int(knot_ns)) + 1
    t = t0_ns + np.arange(n, dtype=np.int64) * knot_ns
    position = itrs_positions_km(constellation, t, knot_ns=None)  # SGP4 at every knot
    if not np.isfinite(position).all():
        bad = int(np.flatnonzero(~np.isfinite(position).all(axis=(1, 2)))[0])
        raise ValueError(f"SGP4 fails for satellite {bad} inside the horizon")
    if compress and not (quantum_m > 0 and np.isfinite(quantum_m)):
        raise ValueError(f"quantum {quantum_m} m: want a positive finite figure")
    if compress and n <= _DELTA_ORDER:
        raise ValueError(f"{n} knots: a compressed ephemeris needs more than {_DELTA_ORDER}")
    if compress:  # the file holds the rounded positions: return what a reader gets
        q = np.round(position * (1000.0 / quantum_m)).astype(np.int64)  # (satellites, knots, 3)
        body, dtype = _delta_encode(q.transpose(0, 2, 1))
        position = q * (quantum_m / 1000.0)
    data = np.ascontiguousarray(position.transpose(1, 0, 2), dtype=_DTYPE)
    epoch = constellation.epoch.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    header = {"format": EPHEMERIS_FORMAT, "constellation": constellation.spec, "epoch": epoch,
              "t0_ns": int(t0_ns), "knot_ns": int(knot_ns), "knots": n,
              "satellites": constellation.n_satellites, "frame": "teme-rotated-by-gmst1982",
              "dtype": dtype if compress else "<f4", "policy": policy, "sticky": bool(sticky),
              "min_elevation_deg": float(min_elevation_deg), "step_ns": int(step_ns)}
    if compress:
        header["quantum_m"] = float(quantum_m)
    if interval_ns:
        header |= {"interval_ns": int(interval_ns), "phase_ns": int(phase_ns)}
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as f:
        f.write(json.dumps(header, separators=(",", ":")).encode() + b"\n")
        f.write(body if compress else data.tobytes())
    os.replace(tmp, path)
    return EphemerisFile(constellation.spec, epoch, int(t0_ns), int(knot_ns), data, policy,
                         bool(sticky), float(min_elevation_deg), int(step_ns), int(interval_ns),
                         int(phase_ns))


def read_ephemeris(path: str | Path) -> EphemerisFile:
    """Read a file ``write_ephemeris`` wrote; ``ValueError`` names what is wrong."""
    raw = Path(path).read_bytes()
    end = raw.find(b"\n")
    try:
        header = json.loads(raw[:end])
    except (ValueError, UnicodeDecodeError):
        raise ValueError(f"{path}: no JSON header line (not a {EPHEMERIS_FORMAT} file)") from None
    if header.get("format") != EPHEMERIS_FORMAT:
        raise ValueError(f"{path}: format {header.get('format')!r}, want {EPHEMERIS_FORMAT!r}")
    n, s = int(header["knots"]), int(header["satellites"])
    body = raw[end + 1:]
    dtype = header.get("dtype")
    if dtype in _DELTA_DTYPES:
        quantum_m = float(header.get("quantum_m", 0))
        if not (quantum_m > 0 and np.isfinite(quantum_m)) or n <= _DELTA_ORDER:
            raise ValueError(f"{path}: quantum {header.get('quantum_m')!r} m and {n} knots: want "
                             f"a positive quantum and more than {_DELTA_ORDER} knots")
        q = _delta_decode(body, s * 3, n, _DELTA_DTYPES[dtype], path)
        data = (q.reshape(s, 3, n).transpose(2, 0, 1) * (quantum_m / 1000.0)).astype(_DTYPE)
    elif dtype == "<f4":
        if len(body) != n * s * 3 * _DTYPE.itemsize:
            raise ValueError(f"{path}: {len(body)} bytes of positions, want {n * s * 12} "
                             f"({n} knots x {s} satellites x 12)")
        data = np.frombuffer(body, _DTYPE).reshape(n, s, 3)
    else:
        raise ValueError(f"{path}: dtype {dtype!r}, want <f4 or one of {', '.join(_DELTA_DTYPES)}")
    return EphemerisFile(header["constellation"], header["epoch"], int(header["t0_ns"]),
                         int(header["knot_ns"]), data, header["policy"], bool(header["sticky"]),
                         float(header["min_elevation_deg"]), int(header["step_ns"]),
                         int(header.get("interval_ns", 0)), int(header.get("phase_ns", 0)))


def _delta_encode(series: np.ndarray) -> tuple[bytes, str]:
    """The compressed body of integer ``series`` (satellites, 3, knots) and its dtype name."""
    heads = np.stack([np.diff(series[..., :_DELTA_ORDER], n=j, axis=-1)[..., 0]
                      for j in range(_DELTA_ORDER)], axis=-1)  # (satellites, 3, order)
    residual = np.diff(series, n=_DELTA_ORDER, axis=-1)
    if np.abs(heads).max(initial=0) >= 2**31:
        raise ValueError("positions beyond 2^31 quanta: use a larger quantum_m")
    big = int(np.abs(residual).max(initial=0))
    kind = next(k for k, d in _RESIDUALS.items() if big < 2 ** (8 * d.itemsize - 1))
    rows = np.concatenate([heads.astype("<i4").view(np.uint8).reshape(*heads.shape[:2], -1),
                           residual.astype(_RESIDUALS[kind]).view(np.uint8)
                           .reshape(*residual.shape[:2], -1)], axis=-1)
    return zlib.compress(rows.tobytes(), 9), f"delta{_DELTA_ORDER}-{kind}-zlib"


def _delta_decode(body: bytes, n_series: int, knots: int, residual: np.dtype, path) -> np.ndarray:
    """Integer positions (series, knots) from a compressed body (``_delta_encode``)."""
    try:
        raw = zlib.decompress(body)
    except zlib.error as e:
        raise ValueError(f"{path}: the compressed positions do not inflate: {e}") from None
    row = 4 * _DELTA_ORDER + (knots - _DELTA_ORDER) * residual.itemsize
    if len(raw) != n_series * row:
        raise ValueError(f"{path}: {len(raw)} bytes of inflated positions, want {n_series * row} "
                         f"({n_series} series x {row})")
    rows = np.frombuffer(raw, np.uint8).reshape(n_series, row)
    heads = rows[:, :4 * _DELTA_ORDER].copy().view("<i4").astype(np.int64)
    q = rows[:, 4 * _DELTA_ORDER:].copy().view(residual).astype(np.int64)
    for j in reversed(range(_DELTA_ORDER)):  # x_j = cumsum([x_j[0], x_{j+1}...])
        q = np.concatenate([heads[:, j:j + 1], q], axis=1).cumsum(axis=1)
    return q
