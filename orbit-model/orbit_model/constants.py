"""Physical constants: the one definition every satpage package uses.

Each value cites its source. orbit_model owns them because it owns the geometry;
sim imports them from here (``orbit_model.constants`` or the ``orbit_model``
API); pager has no physical quantities and needs none.

- WGS 84 defining parameters: NIMA TR8350.2, "Department of Defense World
  Geodetic System 1984", 3rd edition (2000), Table 3.1: a = 6378137.0 m,
  1/f = 298.257223563, GM = 3986004.418e8 m^3/s^2 (GM with the atmosphere).
- WGS 72 equatorial radius, the unit of SGP4's element sets: Hoots and Roehrich,
  Spacetrack Report No. 3 (1980), and Vallado et al., "Revisiting Spacetrack
  Report #3", AIAA 2006-6753, ``getgravconst('wgs72')``: 6378.135 km.
- Speed of light in vacuum: exact by the definition of the metre, SI Brochure,
  9th edition (BIPM 2019), section 2.3.1: c = 299 792 458 m/s.

The Walker convention (docs/conventions.md, "Walker notation") derives the mean
motion of a circular orbit at ``altitude_km`` from ``MU_KM3_S2`` and
``EARTH_RADIUS_KM`` = the WGS 84 equatorial radius; footprints and ground
distances use the same sphere.
"""

from __future__ import annotations

__all__ = [
    "WGS84_A_KM",
    "WGS84_F",
    "WGS84_B_KM",
    "EARTH_RADIUS_KM",
    "MU_KM3_S2",
    "SPEED_OF_LIGHT_KM_S",
    "WGS72_RADIUS_KM",
]

WGS84_A_KM = 6378.137
"""WGS 84 semi-major (equatorial) axis, km (NIMA TR8350.2, Table 3.1)."""

WGS84_F = 1.0 / 298.257223563
"""WGS 84 flattening (NIMA TR8350.2, Table 3.1)."""

WGS84_B_KM = WGS84_A_KM * (1.0 - WGS84_F)
"""WGS 84 semi-minor (polar) axis, km: a (1 - f) = 6356.752 km."""

EARTH_RADIUS_KM = WGS84_A_KM
"""Spherical Earth radius for Walker altitudes, footprints and ground distances:
the WGS 84 equatorial radius (docs/conventions.md)."""

MU_KM3_S2 = 398600.4418
"""Earth's gravitational parameter GM, km^3/s^2 (WGS 84, NIMA TR8350.2, Table 3.1)."""

SPEED_OF_LIGHT_KM_S = 299_792.458
"""Speed of light in vacuum, km/s (exact; SI Brochure, 9th ed., 2.3.1)."""

WGS72_RADIUS_KM = 6378.135
"""WGS 72 equatorial radius, km: SGP4's unit (``satrec.alta`` and ``altp`` are in
these; Vallado et al., AIAA 2006-6753)."""
