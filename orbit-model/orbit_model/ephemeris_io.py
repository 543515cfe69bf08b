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
"""

from __future__ import annotations

import json
import os
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
                    phase_ns: int = 0) -> EphemerisFile:
    """Write positions at ``t0_ns, t0_ns + knot_ns, ...`` covering ``duration_ns``, atomically
    (a temporary file renamed over ``path``, so a gateway reloading it never sees half a file).

    ``step_ns`` is the handover step (``satpage orbit handovers --step-s``); it must divide
    ``knot_ns``. ``interval_ns`` > 0: the gateway reallocates at ``phase_ns + k *
    interval_ns`` (both multiples of ``step_ns``). Size: 12 bytes per satellite per knot
    (docs/live.md)."""
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
    data = np.ascontiguousarray(position.transpose(1, 0, 2), dtype=_DTYPE)
    epoch = constellation.epoch.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    header = {"format": EPHEMERIS_FORMAT, "constellation": constellation.spec, "epoch": epoch,
              "t0_ns": int(t0_ns), "knot_ns": int(knot_ns), "knots": n,
              "satellites": constellation.n_satellites, "frame": "teme-rotated-by-gmst1982",
              "dtype": "<f4", "policy": policy, "sticky": bool(sticky),
              "min_elevation_deg": float(min_elevation_deg), "step_ns": int(step_ns)}
    if interval_ns:
        header |= {"interval_ns": int(interval_ns), "phase_ns": int(phase_ns)}
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as f:
        f.write(json.dumps(header, separators=(",", ":")).encode() + b"\n")
        f.write(data.tobytes())
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
    if len(body) != n * s * 3 * _DTYPE.itemsize:
        raise ValueError(f"{path}: {len(body)} bytes of positions, want {n * s * 12} "
                         f"({n} knots x {s} satellites x 12)")
    data = np.frombuffer(body, _DTYPE).reshape(n, s, 3)
    return EphemerisFile(header["constellation"], header["epoch"], int(header["t0_ns"]),
                         int(header["knot_ns"]), data, header["policy"], bool(header["sticky"]),
                         float(header["min_elevation_deg"]), int(header["step_ns"]),
                         int(header.get("interval_ns", 0)), int(header.get("phase_ns", 0)))
