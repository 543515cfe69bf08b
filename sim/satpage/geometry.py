"""The scenario's satellites and a cache of their Earth-fixed positions.

`SatelliteSet` wraps orbit_model's `Constellation` (SGP4 through its batched
propagation) and its +Grid links; `PositionCache` keeps the positions at the
handover steps (for path lengths and gateway ranges in satpage.costs) in memory
or in a file the worker processes share. No geometry is computed here: routing,
visibility and schedules are orbit_model's.

Shape contract: positions are float64 ``(n_sats, n_times, 3)`` in km, Earth-fixed
(ITRS/ECEF), for integer-ns times from the scenario epoch.
"""

from __future__ import annotations

import datetime as dt
import logging

import numpy as np

from orbit_model import Constellation, grid_links, itrs_positions_km

__all__ = ["SatelliteSet", "PositionCache"]

log = logging.getLogger(__name__)


class SatelliteSet:
    """The satellites of a scenario: count, plane layout, +Grid links, Earth-fixed positions.

    ``links`` int32 (m, 2) and ``link_cross_plane`` bool (m,) are the +Grid ISLs
    (orbit_model.grid_links: docs/conventions.md, "+Grid", including TLE catalogues
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

    Small runs (the default scenario) hold the whole span in memory. Larger ones
    (a Starlink-sized catalogue over a day is 26 M satellite-steps) write it once, in
    time blocks, to a float32 file in ``store_dir`` (0.5 m resolution at 7000 km)
    that every worker process maps read-only; windows are slices of it."""

    def __init__(self, sats: SatelliteSet, step_ns: int, n_steps: int,
                 max_cached_values: int = 8_000_000, store_dir: str | None = None,
                 block_steps: int = 360) -> None:
        self.sats = sats
        self.step_ns = int(step_ns)
        self.n_steps = int(n_steps)
        self._all = None
        self.path = None
        if sats.n_sats * self.n_steps <= max_cached_values:
            self._all = sats.positions_km(np.arange(self.n_steps, dtype=np.int64) * self.step_ns)
        elif store_dir is not None:
            # the name says which positions these are: a store shared by sweep points or by
            # Dask workers must never hand one constellation's file to another of its size
            import hashlib
            import pathlib
            what = f"{sats.spec}|{sats.epoch.isoformat()}|{self.step_ns}".encode()
            self.path = pathlib.Path(store_dir) / (
                f"positions-{self.n_steps}x{sats.n_sats}-{hashlib.sha256(what).hexdigest()[:16]}.f32")
            shape = (sats.n_sats, self.n_steps, 3)
            if not self.path.exists():
                tmp = self.path.with_suffix(".tmp")
                mm = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.float32, shape=shape)
                for j in range(0, self.n_steps, block_steps):
                    k = min(self.n_steps, j + block_steps)
                    mm[:, j:k] = sats.positions_km(np.arange(j, k, dtype=np.int64) * self.step_ns)
                mm.flush()
                del mm
                tmp.rename(self.path)
            self._all = np.load(self.path, mmap_mode="r")

    def window(self, j0: int, j1: int) -> np.ndarray:
        """(n_sats, j1 - j0 + 1, 3) float64 at steps j0..j1 inclusive."""
        if self._all is not None and j1 < self.n_steps:
            return np.asarray(self._all[:, j0:j1 + 1], dtype=np.float64)
        return self.sats.positions_km(np.arange(j0, j1 + 1, dtype=np.int64) * self.step_ns)
