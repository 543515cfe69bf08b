"""Named constellations: multi-shell layouts as their operators filed them.

A name (``starlink-gen1``) stands for several Walker delta shells joined with
``+`` (``Constellation.from_spec`` accepts the name wherever it accepts a spec).
Every figure cites its source; what the filing does not give (the Walker
phasing F, the right ascension of plane 0) is an assumption, stated in
``assumptions``. docs/orbit-model.md ("Named constellations") has the table.

Between shells there are no ISLs (the +Grid rule of ``orbit_model.isl``): the
filings describe optical links but not which satellites of two shells pair up,
so a route never leaves its shell.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["FiledShell", "NamedConstellation", "NAMED_CONSTELLATIONS", "named_constellation"]


@dataclass(frozen=True)
class FiledShell:
    """One shell of a filing: ``planes`` x ``per_plane`` satellites, circular, at
    ``altitude_km`` and ``inclination_deg`` (from ``source``); ``phasing`` is the
    Walker F, an assumption where the filing gives none."""

    planes: int
    per_plane: int
    altitude_km: float
    inclination_deg: float
    phasing: int
    source: str

    @property
    def n_satellites(self) -> int:
        return self.planes * self.per_plane

    @property
    def spec(self) -> str:
        return (f"walker:{self.n_satellites}/{self.planes}/{self.phasing}:"
                f"{self.altitude_km:g}:{self.inclination_deg:g}")


@dataclass(frozen=True)
class NamedConstellation:
    """Shells in index order (shell 0 holds satellites 0 .. n0-1, and so on)."""

    name: str
    description: str
    shells: tuple[FiledShell, ...]
    assumptions: str

    @property
    def n_satellites(self) -> int:
        return sum(shell.n_satellites for shell in self.shells)

    @property
    def spec(self) -> str:
        """The ``walker:...+walker:...`` spec the name stands for."""
        return "+".join(shell.spec for shell in self.shells)


_STARLINK_2020 = ("FCC IBFS SAT-MOD-20200417-00037 (SpaceX's third modification, filed "
                  "17 April 2020), granted by FCC 21-48, Order and Authorization, "
                  "released 27 April 2021")

NAMED_CONSTELLATIONS: dict[str, NamedConstellation] = {
    "starlink-gen1": NamedConstellation(
        name="starlink-gen1",
        description="SpaceX Starlink first generation, five shells, 4,408 satellites, as "
                    "modified in 2019 (shell 0) and 2020 (shells 1-4) and authorised in 2021",
        shells=(
            # Shell 0 was moved to 72 planes of 22 by the 2019 modification; the 2020
            # application (and the 2021 order) kept it unchanged.
            FiledShell(72, 22, 550.0, 53.0, 1,
                       "FCC IBFS SAT-MOD-20190830-00087 (72 planes x 22 at 550 km, 53 deg), "
                       f"kept by {_STARLINK_2020}"),
            FiledShell(72, 22, 540.0, 53.2, 1, _STARLINK_2020),
            FiledShell(36, 20, 570.0, 70.0, 1, _STARLINK_2020),
            FiledShell(6, 58, 560.0, 97.6, 1, _STARLINK_2020),
            FiledShell(4, 43, 560.0, 97.6, 1, _STARLINK_2020),
        ),
        assumptions=(
            "The filings give planes, satellites per plane, altitude and inclination, not "
            "the in-orbit phasing: every shell is a Walker delta with phasing F = 1 (the "
            "smallest non-zero offset between neighbouring planes), ascending nodes spread "
            "evenly over 360 deg from RAAN 0 at the scenario epoch, circular orbits "
            "(docs/conventions.md). Shells 3 and 4 share altitude and inclination, so "
            "under this assumption their planes at RAAN 0 and 180 deg coincide (they carry "
            "58 and 43 satellites at different spacings; no ISLs join them). No ISLs "
            "between shells."
        ),
    ),
}


def named_constellation(name: str) -> NamedConstellation | None:
    """The named constellation ``name`` (exact, after stripping), or None."""
    return NAMED_CONSTELLATIONS.get(name.strip())
