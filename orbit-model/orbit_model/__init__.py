"""orbit_model: constellations, SGP4 propagation vectorised over satellites x
times, ISL topology, ground visibility and handovers, gridded population.

Public API: import from ``orbit_model`` (see ``__all__``); modules behind it are internal.
"""

__version__ = "0.1.0"

from orbit_model.clients import Clients, place_clients, population_in_region, region_mask
from orbit_model.clients_io import read_clients, read_region, write_clients
from orbit_model.constants import (
    EARTH_RADIUS_KM,
    MU_KM3_S2,
    SPEED_OF_LIGHT_KM_S,
    WGS84_A_KM,
    WGS84_B_KM,
    WGS84_F,
)
from orbit_model.constellation import Constellation, Shell, parse_walker_spec, walker_elements
from orbit_model.ephemeris_io import (
    EPHEMERIS_FORMAT,
    EphemerisFile,
    read_ephemeris,
    write_ephemeris,
)
from orbit_model.footprint import (
    FootprintLoad,
    footprint_central_angle_rad,
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
from orbit_model.isl import (
    IslLinks,
    IslNetwork,
    Routes,
    RouteWalk,
    RoutingSnapshots,
    RoutingStack,
    RoutingTable,
    disjoint_route,
    grid_links,
    isl_test_vectors,
    route_links,
    write_isl_test_vectors,
)
from orbit_model.named import (
    NAMED_CONSTELLATIONS,
    FiledShell,
    NamedConstellation,
    named_constellation,
)
from orbit_model.population import PopulationGrid
from orbit_model.propagate import (
    BLOCK_STEPS,
    Ephemeris,
    geodetic_from_itrs,
    iter_itrs_chunks,
    itrs_block_km,
    itrs_positions_km,
    propagate,
    subsatellite_points,
    teme_block_km,
    teme_positions_km,
)
from orbit_model.timebase import parse_epoch
from orbit_model.tle import TleRecord, read_tle_file
from orbit_model.visibility import PASS_DTYPE, GroundPoints, elevations_deg, find_passes

__all__ = [
    "__version__",
    # physical constants (each cites its source)
    "WGS84_A_KM", "WGS84_F", "WGS84_B_KM", "EARTH_RADIUS_KM", "MU_KM3_S2", "SPEED_OF_LIGHT_KM_S",
    # population (issue 6)
    "PopulationGrid",
    "footprint_central_angle_rad", "footprint_radius_km", "footprint_population",
    "footprint_outline_deg", "FootprintLoad", "footprint_load",
    "Clients", "place_clients", "region_mask", "population_in_region",
    "read_region", "read_clients", "write_clients",
    # orbits (issue 5)
    "Constellation", "Shell", "walker_elements", "parse_walker_spec", "TleRecord", "read_tle_file", "parse_epoch",
    "Ephemeris", "propagate", "teme_positions_km", "itrs_positions_km", "iter_itrs_chunks",
    "BLOCK_STEPS", "teme_block_km", "itrs_block_km",
    "geodetic_from_itrs", "subsatellite_points",
    "IslLinks", "IslNetwork", "Routes", "RoutingTable", "RoutingSnapshots", "RouteWalk",
    "RoutingStack", "route_links", "disjoint_route", "grid_links", "isl_test_vectors",
    "write_isl_test_vectors",
    "GroundPoints", "elevations_deg", "find_passes", "PASS_DTYPE",
    "HandoverSchedule", "handover_schedule", "session_schedule", "step_times_ns",
    "reallocation_steps", "reallocation_step_ns",
    # live service (issue 17)
    "EPHEMERIS_FORMAT", "EphemerisFile", "write_ephemeris", "read_ephemeris",
    # named multi-shell constellations (issue 19)
    "NAMED_CONSTELLATIONS", "NamedConstellation", "FiledShell", "named_constellation",
]
