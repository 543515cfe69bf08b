"""orbit_model: constellations, SGP4 propagation vectorised over satellites x
times, ISL topology, ground visibility and handovers, gridded population.

Public API: the names in ``__all__`` below; three public submodules behind them:
``orbit_model.constants`` (physical constants, each citing its source),
``orbit_model.io`` (file readers and writers) and ``orbit_model.kernels`` (raw array
kernels for callers that run their own compiled loops). Other modules are internal.
"""

__version__ = "0.1.0"

from orbit_model import constants, io, kernels
from orbit_model.clients import Clients, place_clients, population_in_region, region_mask
from orbit_model.constellation import Constellation, Shell, parse_walker_spec
from orbit_model.footprint import (
    FootprintLoad,
    footprint_load,
    footprint_outline_deg,
    footprint_population,
    footprint_radius_km,
)
from orbit_model.handover import (
    HandoverSchedule,
    handover_schedule,
    reallocation_step_ns,
    reallocation_steps,
    session_schedule,
    step_times_ns,
)
from orbit_model.isl import IslLinks, IslNetwork, Routes, RouteWalk, RoutingSnapshots, RoutingTable
from orbit_model.named import (
    NAMED_CONSTELLATIONS,
    FiledShell,
    NamedConstellation,
    named_constellation,
)
from orbit_model.population import PopulationGrid
from orbit_model.propagate import (
    Ephemeris,
    itrs_positions_km,
    propagate,
    subsatellite_points,
    teme_positions_km,
)
from orbit_model.timebase import parse_epoch
from orbit_model.visibility import PASS_DTYPE, GroundPoints, elevations_deg, find_passes

__all__ = [
    "__version__",
    "constants", "io", "kernels",
    # constellations and time
    "Constellation", "Shell", "parse_walker_spec", "parse_epoch",
    "NAMED_CONSTELLATIONS", "NamedConstellation", "FiledShell", "named_constellation",
    # propagation
    "Ephemeris", "propagate", "teme_positions_km", "itrs_positions_km", "subsatellite_points",
    # inter-satellite links and routes
    "IslLinks", "IslNetwork", "Routes", "RoutingTable", "RoutingSnapshots", "RouteWalk",
    # visibility and handovers
    "GroundPoints", "elevations_deg", "find_passes", "PASS_DTYPE",
    "HandoverSchedule", "handover_schedule", "session_schedule", "step_times_ns",
    "reallocation_steps", "reallocation_step_ns",
    # population and clients
    "PopulationGrid", "FootprintLoad", "footprint_load", "footprint_population",
    "footprint_radius_km", "footprint_outline_deg",
    "Clients", "place_clients", "region_mask", "population_in_region",
]
