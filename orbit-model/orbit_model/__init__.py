"""orbit_model: constellations, SGP4 propagation vectorised over satellites x
times, ISL topology, ground visibility and handovers, gridded population.

Public API: import from ``orbit_model`` (see ``__all__``); modules behind it are internal.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
