"""The access trace: what every backend (engine, local cluster, deployed cluster) replays.

A session is served by a sequence of satellites (its trail); one stay with one
serving satellite is a *visit*. The arrays are flat over all visits of all
sessions (CSR layout), so sessions with different numbers of visits and accesses
need no padding, and a large run is processed as a sequence of Traces, one per
chunk of sessions (a Trace for 10^6 paper sessions would not fit in memory).

Shape contract (n = sessions, v = visits in all, a = accesses in all):

- ``visit_offsets``    int64 (n + 1,)  visits of session s: ``visit_offsets[s]:visit_offsets[s+1]``
- ``visit_satellite``  int32 (v,)      serving satellite of each visit; in the paper's
  trail model the visit number 0..H stands in for the satellite. Two visits in a row
  of one session are at two satellites (one stay is one visit); a session may come
  back to a satellite later (an orbit on), and the pages it left there are local again
- ``visit_start_ns``   int64 (v,)      scenario time at which the visit starts (the handover)
- ``access_offsets``   int64 (v + 1,)  accesses of visit k: ``access_offsets[k]:access_offsets[k+1]``
- ``access_page``      int32 (a,)      page index in [0, n_pages) of each access
- ``access_time_ns``   int64 (a,)      scenario time of each access, non-decreasing in a visit
- ``access_write``     bool (a,) or None  whether each access writes the page (None: unknown,
  taken as every access writing; only a staged push-ahead reads it, docs/live.md)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Trace"]


@dataclass(frozen=True)
class Trace:
    """Page accesses of many sessions over the satellites that serve them in turn."""

    n_pages: int
    visit_offsets: np.ndarray
    visit_satellite: np.ndarray
    visit_start_ns: np.ndarray
    access_offsets: np.ndarray
    access_page: np.ndarray
    access_time_ns: np.ndarray
    access_write: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.n_pages <= 0:
            raise ValueError(f"n_pages must be positive, got {self.n_pages}")
        vo, ao = self.visit_offsets, self.access_offsets
        if vo.ndim != 1 or vo.size < 1 or vo[0] != 0 or np.any(np.diff(vo) < 0):
            raise ValueError("visit_offsets must start at 0 and be non-decreasing")
        n_visits = int(vo[-1])
        for name in ("visit_satellite", "visit_start_ns"):
            if getattr(self, name).shape != (n_visits,):
                raise ValueError(
                    f"{name} has shape {getattr(self, name).shape}, want ({n_visits},)"
                )
        sat = self.visit_satellite
        stay = np.flatnonzero(sat[1:] == sat[:-1]) + 1  # visits at their predecessor's satellite
        stay = stay[~np.isin(stay, vo)]  # a session's first visit has no predecessor
        if stay.size:
            g = int(stay[0])
            s = int(np.searchsorted(vo, g, side="right")) - 1
            raise ValueError(f"session {s}: visits {g - int(vo[s]) - 1} and {g - int(vo[s])} are both at "
                             f"satellite {int(sat[g])}; one stay with a satellite is one visit")
        if ao.shape != (n_visits + 1,) or ao[0] != 0 or np.any(np.diff(ao) < 0):
            raise ValueError(f"access_offsets must have shape ({n_visits + 1},), start at 0 "
                             "and be non-decreasing")
        n_acc = int(ao[-1])
        for name in ("access_page", "access_time_ns"):
            if getattr(self, name).shape != (n_acc,):
                raise ValueError(f"{name} has shape {getattr(self, name).shape}, want ({n_acc},)")
        if self.access_write is not None and self.access_write.shape != (n_acc,):
            raise ValueError(f"access_write has shape {self.access_write.shape}, want ({n_acc},)")
        if n_acc and (self.access_page.min() < 0 or self.access_page.max() >= self.n_pages):
            bad = self.access_page[(self.access_page < 0) | (self.access_page >= self.n_pages)][0]
            raise ValueError(f"access_page holds {bad}, outside [0, {self.n_pages})")

    @property
    def n_sessions(self) -> int:
        return self.visit_offsets.size - 1

    @property
    def n_visits(self) -> int:
        return int(self.visit_offsets[-1])

    @property
    def n_accesses(self) -> int:
        return int(self.access_offsets[-1])

    def visit_session(self) -> np.ndarray:
        """int64 (v,): the session of each visit."""
        return np.repeat(np.arange(self.n_sessions), np.diff(self.visit_offsets))

    def access_visit(self) -> np.ndarray:
        """int64 (a,): the visit of each access."""
        return np.repeat(np.arange(self.n_visits), np.diff(self.access_offsets))
