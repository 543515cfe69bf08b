"""Constellations: Walker delta/star shells and TLE catalogues grouped into shells and planes.

A ``Constellation`` is a list of SGP4 element sets (``sgp4.api.Satrec``) plus,
for every satellite, its shell, orbital plane and slot within the plane: the
+Grid ISL topology (``orbit_model.isl``) is built from those three indices.

Walker elements follow docs/conventions.md exactly (see ``walker_elements``).
A TLE catalogue is grouped at the scenario epoch: shells by inclination then
mean altitude, planes by right ascension of the ascending node (RAAN), slots by
argument of latitude, all from mean elements advanced to the epoch
(docs/orbit-model.md has the thresholds and their numbers).
"""

from __future__ import annotations

import datetime as dt
import logging
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from os import PathLike
from pathlib import Path

import numpy as np
from sgp4.api import WGS72, Satrec, SatrecArray

from orbit_model.constants import EARTH_RADIUS_KM, MU_KM3_S2, WGS72_RADIUS_KM
from orbit_model.named import NAMED_CONSTELLATIONS, named_constellation
from orbit_model.timebase import parse_epoch, utc_jd
from orbit_model.tle import TleRecord, read_tle_file

__all__ = [
    "Constellation",
    "Shell",
    "WalkerElements",
    "walker_elements",
    "parse_walker_spec",
    "MIN_ALTITUDE_KM",
]

log = logging.getLogger(__name__)

MIN_ALTITUDE_KM = 150.0  # below this SGP4 decays within hours; the issue rejects it
STALE_TLE_DAYS = 14.0  # warn when the scenario epoch is further than this from an element set
_SGP4_EPOCH_JD = 2433281.5  # sgp4init counts days from 1949 December 31 00:00 UT

_WALKER = re.compile(r"^(walker|walker-star):(\d+)/(\d+)/(\d+):([-+0-9.eE]+):([-+0-9.eE]+)$")


@dataclass(frozen=True)
class Shell:
    """One shell: satellites ``first_index .. first_index + n_satellites - 1``.

    ``kind`` is ``walker`` (delta: nodes over 360 deg), ``walker-star`` (nodes
    over 180 deg) or ``tle`` (grouped from a catalogue). ``wraps`` says whether
    the last plane links to plane 0 (+Grid across the wrap); ``phasing`` is the
    Walker F (0 for TLE shells). For TLE shells ``altitude_km`` and
    ``inclination_deg`` are medians of the group.
    """

    kind: str
    first_index: int
    n_satellites: int
    n_planes: int
    phasing: int
    altitude_km: float
    inclination_deg: float
    wraps: bool
    spec: str

    @property
    def sats_per_plane(self) -> int:
        """S = T / P for Walker shells; the largest plane for TLE shells."""
        return self.n_satellites // max(self.n_planes, 1) if self.kind != "tle" else -1


@dataclass(frozen=True)
class WalkerElements:
    """Mean elements of a Walker shell at its epoch, one entry per satellite (index p*S + k)."""

    plane: np.ndarray  # (T,) int32
    slot: np.ndarray  # (T,) int32
    raan_deg: np.ndarray  # (T,)
    mean_anomaly_deg: np.ndarray  # (T,)
    inclination_deg: float
    mean_motion_rad_min: float
    altitude_km: float


def parse_walker_spec(spec: str) -> tuple[str, int, int, int, float, float]:
    """``walker[-star]:T/P/F:ALT_KM:INC_DEG`` -> (kind, T, P, F, altitude_km, inclination_deg).

    ``ValueError`` quotes the spec and names the impossible value.
    """
    match = _WALKER.match(spec.strip())
    if not match:
        raise ValueError(
            f"constellation {spec!r} is not walker:T/P/F:ALT_KM:INC_DEG or "
            "walker-star:T/P/F:ALT_KM:INC_DEG (example: walker-star:150/10/1:500:87)"
        )
    kind = match.group(1)
    total, planes, phasing = (int(match.group(i)) for i in (2, 3, 4))
    try:
        altitude_km, inclination_deg = float(match.group(5)), float(match.group(6))
    except ValueError:
        raise ValueError(f"constellation {spec!r}: altitude and inclination must be numbers") from None
    _validate_walker(spec, total, planes, phasing, altitude_km, inclination_deg)
    return kind, total, planes, phasing, altitude_km, inclination_deg


def _validate_walker(spec: str, total: int, planes: int, phasing: int,
                     altitude_km: float, inclination_deg: float) -> None:
    if total < 1:
        raise ValueError(f"constellation {spec!r}: T={total} satellites, need at least 1")
    if planes < 1:
        raise ValueError(f"constellation {spec!r}: P={planes} planes, need at least 1")
    if total % planes:
        raise ValueError(f"constellation {spec!r}: T={total} is not divisible by P={planes}")
    if not 0 <= phasing < planes:
        raise ValueError(
            f"constellation {spec!r}: phasing F={phasing} is out of range 0..{planes - 1} (P-1)"
        )
    if not math.isfinite(altitude_km) or altitude_km < MIN_ALTITUDE_KM:
        raise ValueError(
            f"constellation {spec!r}: altitude {altitude_km} km is below {MIN_ALTITUDE_KM:g} km"
        )
    if not math.isfinite(inclination_deg) or not 0.0 <= inclination_deg <= 180.0:
        raise ValueError(
            f"constellation {spec!r}: inclination {inclination_deg} deg is outside 0-180 deg"
        )


def walker_elements(total: int, planes: int, phasing: int, altitude_km: float,
                    inclination_deg: float, star: bool = False) -> WalkerElements:
    """The elements of docs/conventions.md.

    RAAN_p = 360 p / P (star: 180 p / P); M(p, k) = 360 k / S + 360 F p / T with
    S = T / P (reduced to [0, 360)); circular, argument of perigee 0; mean motion
    n = sqrt(mu / a^3), a = Re + altitude. Satellite index p*S + k.
    """
    spec = f"{'walker-star' if star else 'walker'}:{total}/{planes}/{phasing}:{altitude_km}:{inclination_deg}"
    _validate_walker(spec, total, planes, phasing, altitude_km, inclination_deg)
    per_plane = total // planes
    index = np.arange(total)
    plane, slot = index // per_plane, index % per_plane
    span_deg = 180.0 if star else 360.0
    raan = span_deg * plane / planes
    mean_anomaly = np.mod(360.0 * slot / per_plane + 360.0 * phasing * plane / total, 360.0)
    semi_major_km = EARTH_RADIUS_KM + altitude_km
    mean_motion_rad_s = math.sqrt(MU_KM3_S2 / semi_major_km**3)
    return WalkerElements(
        plane=plane.astype(np.int32), slot=slot.astype(np.int32), raan_deg=raan,
        mean_anomaly_deg=mean_anomaly, inclination_deg=inclination_deg,
        mean_motion_rad_min=mean_motion_rad_s * 60.0, altitude_km=altitude_km,
    )


def _readonly(array: np.ndarray) -> np.ndarray:
    array = np.ascontiguousarray(array)
    array.flags.writeable = False
    return array


@dataclass(frozen=True, eq=False)
class Constellation:
    """Satellites with SGP4 elements and their shell / plane / slot.

    Arrays have one entry per satellite (index 0 .. n_satellites-1). ``plane``
    and ``slot`` are -1 for catalogue satellites that could not be placed (for
    example an element set SGP4 cannot propagate at the epoch); they get no ISLs.
    ``epoch`` is the scenario epoch: time offsets in nanoseconds count from it.
    """

    epoch: dt.datetime
    satrecs: tuple[Satrec, ...]
    names: tuple[str, ...]
    shell: np.ndarray
    plane: np.ndarray
    slot: np.ndarray
    arg_latitude_deg: np.ndarray  # argument of latitude at the epoch (orders slots; TLE cross-links)
    shells: tuple[Shell, ...]
    spec: str
    _array: list = field(default_factory=list, repr=False)  # lazily built SatrecArray
    _reported: set = field(default_factory=set, repr=False)  # satellites whose SGP4 failure was logged

    def __post_init__(self) -> None:
        for name in ("shell", "plane", "slot"):
            object.__setattr__(self, name, _readonly(np.asarray(getattr(self, name), np.int32)))
        object.__setattr__(self, "arg_latitude_deg",
                           _readonly(np.asarray(self.arg_latitude_deg, np.float64)))
        n = len(self.satrecs)
        if not (len(self.names) == n == self.shell.size == self.plane.size == self.slot.size):
            raise ValueError("constellation arrays must all have one entry per satellite")

    # ---------------------------------------------------------------- basics
    @property
    def n_satellites(self) -> int:
        return len(self.satrecs)

    def __len__(self) -> int:
        return self.n_satellites

    @property
    def satrec_array(self) -> SatrecArray:
        """All element sets as one sgp4 ``SatrecArray`` (built once)."""
        if not self._array:
            self._array.append(SatrecArray(list(self.satrecs)))
        return self._array[0]

    @property
    def max_altitude_km(self) -> float:
        """Largest apogee altitude of any satellite (for conservative visibility caps)."""
        apogee = np.array([s.alta for s in self.satrecs]) * WGS72_RADIUS_KM
        return float(np.nanmax(apogee)) if apogee.size else 0.0

    def __repr__(self) -> str:
        return (f"Constellation({self.spec!r}, n_satellites={self.n_satellites}, "
                f"shells={len(self.shells)}, epoch={self.epoch.isoformat()})")

    # ---------------------------------------------------------- constructors
    @classmethod
    def from_spec(cls, spec: str, epoch: str | dt.datetime | None = None, **tle_options) -> Constellation:
        """``walker:T/P/F:ALT_KM:INC_DEG``, ``walker-star:...``, ``tle:PATH``, or several
        joined with ``+`` (one shell each, indices in order); or a name from
        ``orbit_model.named`` (``starlink-gen1``: its shells, ``spec`` kept as the name).

        Walker shells need an ``epoch`` (the scenario epoch); a TLE catalogue
        uses its median element epoch when none is given.
        """
        named = named_constellation(spec)
        if named is not None:
            return replace(cls.from_spec(named.spec, epoch=epoch), spec=named.name,
                           _array=[], _reported=set())
        parts = [p for p in re.split(r"\+(?=(?:walker|walker-star|tle):)", spec.strip()) if p]
        if not parts:
            raise ValueError(f"constellation {spec!r} is empty")
        built = []
        for part in parts:
            if part.startswith("tle:"):
                built.append(cls.from_tle_file(part[4:], epoch=epoch, **tle_options))
            elif part.startswith(("walker:", "walker-star:")):
                if epoch is None:
                    raise ValueError(f"constellation {part!r}: a Walker shell needs a scenario epoch")
                kind, total, planes, phasing, alt, inc = parse_walker_spec(part)
                built.append(cls.from_walker(total, planes, phasing, alt, inc, epoch=epoch,
                                             star=kind == "walker-star"))
            else:
                raise ValueError(
                    f"constellation {part!r} is not walker:T/P/F:ALT_KM:INC_DEG, "
                    "walker-star:T/P/F:ALT_KM:INC_DEG, tle:PATH or a named constellation "
                    f"({', '.join(NAMED_CONSTELLATIONS)})"
                )
        return built[0] if len(built) == 1 else cls.combine(built)

    @classmethod
    def from_walker(cls, total: int, planes: int, phasing: int, altitude_km: float,
                    inclination_deg: float, epoch: str | dt.datetime, star: bool = False) -> Constellation:
        """A Walker delta (or star) shell with elements at ``epoch`` (docs/conventions.md)."""
        epoch = parse_epoch(epoch)
        elements = walker_elements(total, planes, phasing, altitude_km, inclination_deg, star)
        whole, fraction = utc_jd(epoch, np.zeros(1, np.int64))
        sgp4_epoch = (whole[0] - _SGP4_EPOCH_JD) + fraction[0]
        inclination = math.radians(inclination_deg)
        satrecs = []
        for index in range(total):
            satrec = Satrec()
            # WGS72 constants: the gravity model SGP4 is defined with (as TLEs are fitted).
            satrec.sgp4init(
                WGS72, "i", index % 100000, sgp4_epoch,
                0.0, 0.0, 0.0,  # bstar, ndot, nddot: no drag (docs/conventions.md: bstar 0)
                0.0, 0.0, inclination,  # eccentricity, argument of perigee, inclination
                math.radians(elements.mean_anomaly_deg[index]),
                elements.mean_motion_rad_min,
                math.radians(elements.raan_deg[index]),
            )
            satrecs.append(satrec)
        kind = "walker-star" if star else "walker"
        spec = f"{kind}:{total}/{planes}/{phasing}:{altitude_km:g}:{inclination_deg:g}"
        shell = Shell(kind=kind, first_index=0, n_satellites=total, n_planes=planes,
                      phasing=phasing, altitude_km=float(altitude_km),
                      inclination_deg=float(inclination_deg),
                      wraps=(not star) and planes >= 3, spec=spec)
        return cls(epoch=epoch, satrecs=tuple(satrecs),
                   names=tuple(f"{kind}-{p}-{k}" for p, k in zip(elements.plane, elements.slot, strict=True)),
                   shell=np.zeros(total, np.int32), plane=elements.plane, slot=elements.slot,
                   arg_latitude_deg=elements.mean_anomaly_deg, shells=(shell,), spec=spec)

    @classmethod
    def from_tle_records(cls, records: Sequence[TleRecord], epoch: str | dt.datetime | None = None,
                         spec: str = "tle", inclination_gap_deg: float = 0.1,
                         altitude_gap_km: float = 10.0, raan_gap_deg: float = 1.5) -> Constellation:
        """Element sets grouped into shells and planes at ``epoch`` (see ``from_tle_file``)."""
        satrecs = []
        for record in records:
            satrec = Satrec.twoline2rv(record.line1, record.line2, WGS72)
            if satrec.error or not satrec.no_kozai > 0:
                raise ValueError(
                    f"{record.source} line {record.line_number}: SGP4 rejects this element set "
                    f"(error {satrec.error}): {record.line1!r}"
                )
            satrecs.append(satrec)
        if epoch is None:
            jd = np.array([s.jdsatepoch + s.jdsatepochF for s in satrecs])
            median = float(np.median(jd))
            epoch = dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(
                seconds=round((median - 2440587.5) * 86400.0))
        epoch = parse_epoch(epoch)
        jd_epoch = sum(utc_jd(epoch, np.zeros(1, np.int64)))[0]
        age_days = np.array([jd_epoch - (s.jdsatepoch + s.jdsatepochF) for s in satrecs])
        if np.abs(age_days).max() > STALE_TLE_DAYS:
            # SGP4 errors grow by kilometres per day away from the element epoch
            log.warning("%s: %d element sets are more than %g days from the epoch %s "
                        "(up to %.0f days): positions will be poor", spec,
                        int((np.abs(age_days) > STALE_TLE_DAYS).sum()), STALE_TLE_DAYS,
                        epoch.isoformat(), float(np.abs(age_days).max()))
        groups = _group_catalogue(satrecs, epoch, inclination_gap_deg, altitude_gap_km, raan_gap_deg, spec)
        shell_of, plane_of, slot_of, arg_lat, shells = groups
        return cls(epoch=epoch, satrecs=tuple(satrecs), names=tuple(r.name for r in records),
                   shell=shell_of, plane=plane_of, slot=slot_of, arg_latitude_deg=arg_lat,
                   shells=shells, spec=spec)

    @classmethod
    def from_tle_file(cls, path: str | PathLike, epoch: str | dt.datetime | None = None,
                      **options) -> Constellation:
        """A CelesTrak-style 2LE/3LE file, grouped into shells and planes.

        Shells: inclination clusters (split where sorted inclinations jump by
        more than ``inclination_gap_deg``), then mean-altitude clusters (jumps
        over ``altitude_gap_km``). Planes: RAAN clusters at the epoch (circular
        jumps over ``raan_gap_deg``), ordered by RAAN. Slots: argument of
        latitude at the epoch, ascending from the ascending node.
        """
        records = read_tle_file(path)
        return cls.from_tle_records(records, epoch=epoch, spec=f"tle:{Path(path)}", **options)

    @classmethod
    def combine(cls, parts: Sequence[Constellation]) -> Constellation:
        """Several constellations as one, shells in order, satellite indices offset."""
        if not parts:
            raise ValueError("combine() needs at least one constellation")
        epoch = parts[0].epoch
        for part in parts[1:]:
            if part.epoch != epoch:
                raise ValueError(
                    f"cannot combine constellations with epochs {epoch.isoformat()} and "
                    f"{part.epoch.isoformat()}"
                )
        shells, shell_ids, offset, shell_offset = [], [], 0, 0
        for part in parts:
            for shell in part.shells:
                shells.append(Shell(**{**shell.__dict__, "first_index": shell.first_index + offset}))
            shell_ids.append(part.shell + shell_offset)
            offset += part.n_satellites
            shell_offset += len(part.shells)
        return cls(
            epoch=epoch, satrecs=tuple(s for p in parts for s in p.satrecs),
            names=tuple(n for p in parts for n in p.names), shell=np.concatenate(shell_ids),
            plane=np.concatenate([p.plane for p in parts]), slot=np.concatenate([p.slot for p in parts]),
            arg_latitude_deg=np.concatenate([p.arg_latitude_deg for p in parts]),
            shells=tuple(shells), spec="+".join(p.spec for p in parts),
        )


def _split_sorted(values: np.ndarray, gap: float) -> list[np.ndarray]:
    """Indices of ``values`` grouped where the sorted values jump by more than ``gap``."""
    order = np.argsort(values, kind="stable")
    cuts = np.flatnonzero(np.diff(values[order]) > gap) + 1
    return np.split(order, cuts)


def _split_circular(angles_deg: np.ndarray, gap_deg: float) -> list[np.ndarray]:
    """Groups of angles on a circle split at jumps over ``gap_deg``, ordered by angle from the
    largest jump (so a plane straddling 0/360 deg stays one group)."""
    order = np.argsort(angles_deg, kind="stable")
    sorted_deg = angles_deg[order]
    jumps = np.diff(np.concatenate([sorted_deg, sorted_deg[:1] + 360.0]))
    if jumps.max(initial=0.0) <= gap_deg:
        return [order]
    start = int(np.argmax(jumps)) + 1
    rolled = np.roll(order, -start)
    rolled_jumps = np.roll(jumps, -start)[:-1]
    cuts = np.flatnonzero(rolled_jumps > gap_deg) + 1
    groups = np.split(rolled, cuts)
    # order planes by their circular mean RAAN so plane 0 is the lowest RAAN
    means = [math.degrees(math.atan2(np.sin(np.radians(angles_deg[g])).mean(),
                                     np.cos(np.radians(angles_deg[g])).mean())) % 360.0 for g in groups]
    return [groups[i] for i in np.argsort(means, kind="stable")]


def _mean_angles_at(satrecs: list[Satrec], epoch: dt.datetime) -> tuple[np.ndarray, ...]:
    """Mean inclination, RAAN and argument of latitude (deg) at ``epoch``, and whether SGP4
    fails there.

    Mean elements advanced by SGP4's secular rates (``nodedot``, ``argpdot``,
    ``mdot`` from sgp4init): free of the short-period terms that move
    osculating angles by ~0.1 deg, so a Walker shell read back from TLEs
    groups exactly as it was built.
    """
    whole, fraction = utc_jd(epoch, np.zeros(1, np.int64))
    error, _, _ = SatrecArray(satrecs).sgp4(whole, fraction)
    bad = error[:, 0] != 0
    minutes = np.array([((whole[0] - s.jdsatepoch) + (fraction[0] - s.jdsatepochF)) * 1440.0
                        for s in satrecs])
    inclination = np.degrees([s.inclo for s in satrecs])
    raan = np.degrees(np.array([s.nodeo for s in satrecs]) + np.array([s.nodedot for s in satrecs]) * minutes)
    u = np.degrees(np.array([s.argpo + s.mo for s in satrecs])
                   + np.array([s.argpdot + s.mdot for s in satrecs]) * minutes)
    raan, u = raan % 360.0, u % 360.0
    # rounding: a Walker slot 0 at u = 0 must not come out as 359.999999
    u = np.where(u > 360.0 - 1e-9, 0.0, u)
    for array in (inclination, raan, u):
        array[bad] = np.nan
    return inclination, raan, u, bad


def _group_catalogue(satrecs: list[Satrec], epoch: dt.datetime, inclination_gap_deg: float,
                     altitude_gap_km: float, raan_gap_deg: float, spec: str):
    n = len(satrecs)
    inclination, raan, arg_lat, bad = _mean_angles_at(satrecs, epoch)
    if bad.any():
        log.warning("%s: %d element sets fail SGP4 at %s; they get no plane and no ISLs",
                    spec, int(bad.sum()), epoch.isoformat())
    mean_motion_rad_s = np.array([s.no_kozai for s in satrecs]) / 60.0
    altitude = (MU_KM3_S2 / mean_motion_rad_s**2) ** (1.0 / 3.0) - EARTH_RADIUS_KM
    shell_of = np.full(n, -1, np.int32)
    plane_of = np.full(n, -1, np.int32)
    slot_of = np.full(n, -1, np.int32)
    shells: list[Shell] = []
    good = np.flatnonzero(~bad)
    # Shells are numbered in order of (inclination, altitude); satellite indices keep the
    # file order, so a shell's satellites need not be contiguous (first_index is its lowest).
    for inc_group in _split_sorted(inclination[good], inclination_gap_deg):
        members = good[inc_group]
        for alt_group in _split_sorted(altitude[members], altitude_gap_km):
            shell_members = members[alt_group]
            shell_id = len(shells)
            planes = _split_circular(raan[shell_members], raan_gap_deg)
            centres = []
            for plane_id, plane_group in enumerate(planes):
                sats = shell_members[plane_group]
                sats = sats[np.argsort(arg_lat[sats], kind="stable")]
                shell_of[sats] = shell_id
                plane_of[sats] = plane_id
                slot_of[sats] = np.arange(sats.size)
                centres.append(math.degrees(math.atan2(np.sin(np.radians(raan[sats])).mean(),
                                                       np.cos(np.radians(raan[sats])).mean())) % 360)
            wraps = False
            if len(planes) >= 3:
                gaps = np.diff(np.concatenate([centres, centres[:1] + np.array([360.0])]))
                # a delta-like shell: the gap from the last plane back to plane 0 is an ordinary one
                wraps = bool(gaps[-1] <= 1.5 * np.median(gaps[:-1]))
            shells.append(Shell(
                kind="tle", first_index=int(shell_members.min()), n_satellites=int(shell_members.size),
                n_planes=len(planes), phasing=0, altitude_km=float(np.median(altitude[shell_members])),
                inclination_deg=float(np.median(inclination[shell_members])), wraps=wraps, spec=spec,
            ))
    return shell_of, plane_of, slot_of, arg_lat, tuple(shells)
