"""The scenario's satellites and a cache of their Earth-fixed positions.

`SatelliteSet` wraps orbit_model's `Constellation` (SGP4 through its batched
propagation) and its +Grid links; `PositionCache` keeps the positions at the
handover steps (for path lengths and gateway ranges in satpage.costs): the whole
span in memory for small runs, the blocks that chunks ask for in large ones. No
geometry is computed here: routing, visibility and schedules are orbit_model's.

Shape contract: positions are float64 ``(n_sats, n_times, 3)`` in km, Earth-fixed
(ITRS/ECEF), for integer-ns times from the scenario epoch.
"""

from __future__ import annotations

import datetime as dt
import logging

import numpy as np

from orbit_model import Constellation, itrs_positions_km
from orbit_model.kernels import BLOCK_STEPS, grid_links, itrs_block_km

__all__ = ["SatelliteSet", "PositionCache"]

log = logging.getLogger(__name__)


class SatelliteSet:
    """The satellites of a scenario: count, plane layout, +Grid links, Earth-fixed positions.

    ``links`` int32 (m, 2) and ``link_cross_plane`` bool (m,) are the +Grid ISLs
    (orbit_model.kernels.grid_links: docs/conventions.md, "+Grid", including TLE catalogues
    grouped into planes); ``constellation`` is the orbit_model object."""

    def __init__(self, spec: str, epoch: dt.datetime) -> None:
        self.spec = spec
        self.epoch = epoch
        c = Constellation.from_spec(spec, epoch=epoch)
        self.constellation = c
        self.backend = "orbit_model-sgp4"
        self.n_sats = c.n_satellites
        self.plane = np.asarray(c.plane, dtype=np.int64)
        self.slot = np.asarray(c.slot, dtype=np.int64)
        self.shell = np.asarray(c.shell, dtype=np.int64)
        self.altitude_km = float(np.median([sh.altitude_km for sh in c.shells]))
        links = grid_links(c)
        self.links = np.asarray(links.endpoints, dtype=np.int32)
        self.link_cross_plane = np.asarray(links.cross_plane, dtype=bool)

    def positions_km(self, t_ns: np.ndarray) -> np.ndarray:
        """float64 (n_sats, n_times, 3), Earth-fixed km; NaN rows where SGP4 fails."""
        t_ns = np.asarray(t_ns, dtype=np.int64)
        return np.asarray(itrs_positions_km(self.constellation, t_ns), dtype=np.float64)


class PositionCache:
    """Earth-fixed positions at the handover steps ``j * step_ns``, ``j = 0..n_steps-1``.

    Small runs (the default scenario) hold the whole span in memory. Larger ones (a
    Starlink-sized catalogue over a day is 26 M satellite-steps) build it block by block
    on orbit_model's fixed grid (``BLOCK_STEPS``) as chunks ask for windows: a block is
    the TEME block that the chunk's handover sweep has just propagated, rotated to
    Earth-fixed (``itrs_block_km``, no second SGP4) and kept as float32 (0.5 m at
    7000 km) for the last ``blocks_kept`` blocks. Start-ordered chunks reuse them, and
    every process builds only the blocks of its own chunks: nothing is propagated for
    the whole span before the first chunk runs."""

    def __init__(self, sats: SatelliteSet, step_ns: int, n_steps: int,
                 max_cached_values: int = 8_000_000, blocks_kept: int = 4) -> None:
        self.sats = sats
        self.step_ns = int(step_ns)
        self.n_steps = int(n_steps)
        self.blocks_kept = max(1, int(blocks_kept))
        self._all = None
        self._blocks: dict[int, np.ndarray] = {}
        if sats.n_sats * self.n_steps <= max_cached_values:
            self._all = sats.positions_km(np.arange(self.n_steps, dtype=np.int64) * self.step_ns)

    def window(self, j0: int, j1: int) -> np.ndarray:
        """(n_sats, j1 - j0 + 1, 3) float64 at steps j0..j1 inclusive."""
        if j1 < self.n_steps:
            if self._all is not None:
                return np.asarray(self._all[:, j0:j1 + 1], dtype=np.float64)
            b0, b1 = j0 // BLOCK_STEPS, j1 // BLOCK_STEPS
            out = np.empty((self.sats.n_sats, j1 - j0 + 1, 3))
            for b in range(b0, b1 + 1):
                lo, hi = max(j0, b * BLOCK_STEPS), min(j1 + 1, (b + 1) * BLOCK_STEPS)
                out[:, lo - j0:hi - j0] = self._block(b)[:, lo - b * BLOCK_STEPS:hi - b * BLOCK_STEPS]
            return out
        return self.sats.positions_km(np.arange(j0, j1 + 1, dtype=np.int64) * self.step_ns)

    def _block(self, b: int) -> np.ndarray:
        """float32 (n_sats, BLOCK_STEPS or fewer at the end, 3): steps of block ``b``."""
        got = self._blocks.pop(b, None)
        if got is None:
            j = b * BLOCK_STEPS
            t_ns = np.arange(j, min(self.n_steps, j + BLOCK_STEPS), dtype=np.int64) * self.step_ns
            got = itrs_block_km(self.sats.constellation, t_ns).astype(np.float32)
            while len(self._blocks) >= self.blocks_kept:
                self._blocks.pop(next(iter(self._blocks)))
        self._blocks[b] = got      # most recently used last
        return got
