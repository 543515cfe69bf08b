"""orbit_model's raw kernels: the array building blocks behind the facade, for callers
that run their own compiled loops over its tables (sim's event pricing) or its time
blocks (the position cache).

Shapes and units are in each docstring. Everything else is imported from
``orbit_model`` itself.
"""

from orbit_model.constellation import walker_elements
from orbit_model.footprint import footprint_central_angle_rad
from orbit_model.isl import RoutingStack, disjoint_route, grid_links, route_links
from orbit_model.propagate import (
    BLOCK_STEPS,
    geodetic_from_itrs,
    iter_itrs_chunks,
    itrs_block_km,
    teme_block_km,
)

__all__ = [
    # the fixed time grid's blocks of positions (the handover sweep's chunks)
    "BLOCK_STEPS", "teme_block_km", "itrs_block_km", "iter_itrs_chunks", "geodetic_from_itrs",
    # routing tables walked inside a caller's compiled loop
    "RoutingStack", "route_links", "disjoint_route", "grid_links",
    # geometry primitives
    "walker_elements", "footprint_central_angle_rad",
]
