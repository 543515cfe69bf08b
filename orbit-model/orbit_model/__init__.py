"""orbit_model: constellations, SGP4 propagation vectorised over satellites x
times, ISL topology, ground visibility and handovers, gridded population.

Public API: import from ``orbit_model`` (see ``__all__``); modules behind it are internal.
"""

__version__ = "0.1.0"

from orbit_model.clients import Clients, place_clients, population_in_region, region_mask
from orbit_model.clients_io import read_clients, read_region, write_clients
from orbit_model.footprint import (
    FootprintLoad,
    footprint_central_angle_rad,
    footprint_load,
    footprint_outline_deg,
    footprint_population,
    footprint_radius_km,
)
from orbit_model.population import EARTH_RADIUS_KM, PopulationGrid

__all__ = [
    "__version__",
    # population (issue 6)
    "PopulationGrid", "EARTH_RADIUS_KM",
    "footprint_central_angle_rad", "footprint_radius_km", "footprint_population",
    "footprint_outline_deg", "FootprintLoad", "footprint_load",
    "Clients", "place_clients", "region_mask", "population_in_region",
    "read_region", "read_clients", "write_clients",
]
