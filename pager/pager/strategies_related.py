"""Strategies of the newer literature and of the related work (issue 20), for
`satpage compare`.

Each is a class on ``pager.strategy.Strategy``. The engine replays their page
tables like any other strategy; what sets them apart is how the network carries
their transfers (``NetworkUse``), which the constellation simulation prices
(docs/strategies.md gives each cost model):

- ``ContainerMigration``: the whole service container is checkpointed and restored
  on the next satellite at every handover (CRIU): the page table of proactive,
  plus a downtime from ``MigrationModel`` during which accesses wait.
- ``ReplicateNext``: Komet's proactive replication (Pfandzelter and Bermbach,
  SoCC 2024): the state is replicated to the next serving satellite continuously,
  so a handover moves nothing; ``replicate_next_log`` writes its event log.
- ``Multipath``: on-demand, each fault fetched over two link-disjoint ISL paths at
  once (multipath DCCP, Amend et al., LCN 2019).
- ``Custody``: on-demand, relays on a page's path keep a copy in a bounded custody
  cache; a later fault is served by the nearest holder (INRPP, Rene et al.).
- ``IdleLink``: push-ahead whose pushes wait until their path's links are below a
  load threshold, or go at the handover at the latest (MAMI path signalling).
"""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from numba import njit

from pager import _kernels as K
from pager.strategies_extra import PushAhead
from pager.strategy import EVENT_DTYPE, EventKind, NetworkUse, select_all, select_none
from pager.trace import Trace

__all__ = ["ContainerMigration", "ReplicateNext", "Multipath", "Custody", "IdleLink",
           "MigrationModel", "replicate_next_log", "MIGRATION_DATA_FILE"]

_NO_PARAMS = np.zeros(0, dtype=np.int64)

#: Calibration points of the default MigrationModel (package data, pager/data/).
MIGRATION_DATA_FILE = "criu-migration-celestial.csv"


def _data_dir() -> Path:
    """``$SATPAGE_DATA_DIR`` if set, else pager's package data (``pager/data/``, in a
    wheel and in a checkout; provenance in the repository's data/README.md)."""
    env = os.environ.get("SATPAGE_DATA_DIR")
    return Path(env) if env else Path(os.fspath(resources.files("pager") / "data"))


@dataclass(frozen=True)
class MigrationModel:
    """Container migration downtime as a linear function of the state size,
    ``downtime_s = intercept_s + slope_s_per_mib * state_mib`` (least squares over
    measured points; docs/strategies.md shows the fit and its residuals)."""

    intercept_s: float
    slope_s_per_mib: float
    source: str = ""

    @classmethod
    def fit(cls, state_bytes: np.ndarray, downtime_s: np.ndarray, source: str = ""
            ) -> MigrationModel:
        """Ordinary least squares through the points (at least two sizes)."""
        x = np.asarray(state_bytes, float) / 2**20
        y = np.asarray(downtime_s, float)
        if x.size < 2 or np.unique(x).size < 2:
            raise ValueError(f"a migration fit needs two distinct sizes, got {x.tolist()}")
        slope, intercept = np.polyfit(x, y, 1)
        return cls(float(intercept), float(slope), source)

    @classmethod
    def from_csv(cls, path: str | Path) -> MigrationModel:
        """Fit the points of a calibration file (columns ``state_bytes`` and
        ``downtime_mean_s``; ``#`` lines are provenance)."""
        path = Path(path)
        with path.open() as fh:
            rows = list(csv.DictReader(line for line in fh if not line.startswith("#")))
        if not rows:
            raise ValueError(f"{path}: no calibration points")
        return cls.fit(np.array([float(r["state_bytes"]) for r in rows]),
                       np.array([float(r["downtime_mean_s"]) for r in rows]), str(path.name))

    @classmethod
    def default(cls) -> MigrationModel:
        """The fit to CRIU migrations on the Celestial LEO emulator (pager/data/)."""
        return cls.from_csv(_data_dir() / MIGRATION_DATA_FILE)

    def downtime_ms(self, state_bytes: np.ndarray | float) -> np.ndarray:
        """Downtime (ms) of migrating a container holding ``state_bytes`` of session
        state (scalar or array)."""
        b = np.asarray(state_bytes, float)
        if np.any(b < 0):
            raise ValueError(f"state_bytes must not be negative, got min {b.min()}")
        return (self.intercept_s + self.slope_s_per_mib * b / 2**20) * 1e3


@dataclass(frozen=True)
class ContainerMigration:
    """Container migrates at each handover; the service waits.

    A CRIU checkpoint, the service down meanwhile.
    All pages that exist move; the downtime is ``model.downtime_ms(state)``."""

    model: MigrationModel = field(default_factory=MigrationModel.default)
    name: ClassVar[str] = "container-migration"
    move_on_fault: ClassVar[bool] = True
    create_on_ground: ClassVar[bool] = False
    handover_kind: ClassVar[EventKind] = EventKind.HANDOVER
    lead_ns: ClassVar[int] = 0
    select: ClassVar[Any] = select_all
    network: ClassVar[NetworkUse] = NetworkUse(blocking_migration=True)

    def params(self) -> np.ndarray:
        return _NO_PARAMS


@dataclass(frozen=True)
class ReplicateNext:
    """Accesses copied to the next server; handovers move nothing.

    Komet's replication.
    Every page on the serving satellite and a replica on the next one: the page
    table is proactive's (every page local at every access), the traffic is
    ``replicate_next_log``'s (a seed copy of the object when a visit starts, then
    each access's page to the next server), and a handover moves nothing."""

    name: ClassVar[str] = "replicate-next"
    move_on_fault: ClassVar[bool] = True
    create_on_ground: ClassVar[bool] = False
    handover_kind: ClassVar[EventKind] = EventKind.HANDOVER
    lead_ns: ClassVar[int] = 0
    select: ClassVar[Any] = select_all
    network: ClassVar[NetworkUse] = NetworkUse(replicate_next=True)

    def params(self) -> np.ndarray:
        return _NO_PARAMS


@dataclass(frozen=True)
class Multipath:
    """On-demand, each fault fetched over two link-disjoint ISL paths."""

    name: ClassVar[str] = "multipath"
    move_on_fault: ClassVar[bool] = True
    create_on_ground: ClassVar[bool] = False
    handover_kind: ClassVar[EventKind] = EventKind.HANDOVER
    lead_ns: ClassVar[int] = 0
    select: ClassVar[Any] = select_none
    network: ClassVar[NetworkUse] = NetworkUse(fault_paths=2)

    def params(self) -> np.ndarray:
        return _NO_PARAMS


@dataclass(frozen=True)
class Custody:
    """On-demand; relays keep copies and serve later faults when nearer.

    ``cache_pages`` copies per satellite and session, oldest evicted first."""

    cache_pages: int = 64
    name: ClassVar[str] = "custody"
    move_on_fault: ClassVar[bool] = True
    create_on_ground: ClassVar[bool] = False
    handover_kind: ClassVar[EventKind] = EventKind.HANDOVER
    lead_ns: ClassVar[int] = 0
    select: ClassVar[Any] = select_none

    def __post_init__(self) -> None:
        if self.cache_pages < 1:
            raise ValueError(f"custody: cache_pages must be at least 1, got {self.cache_pages}")

    @property
    def network(self) -> NetworkUse:  # type: ignore[override]
        return NetworkUse(custody_pages=self.cache_pages)

    def params(self) -> np.ndarray:
        return _NO_PARAMS


@dataclass(frozen=True)
class IdleLink(PushAhead):
    """Push-ahead whose pushes wait for idle links or the handover.

    Pages used in the last ``recent_visits`` visits; a push starts ``lead_ns`` before
    the handover at the earliest and waits for its path's links to fall below
    ``threshold`` utilisation."""

    threshold: float = 0.5
    name: ClassVar[str] = "idle-link"

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0.0 < self.threshold <= 1.0:
            raise ValueError(f"idle-link: threshold must be in (0, 1], got {self.threshold}")

    @property
    def network(self) -> NetworkUse:  # type: ignore[override]
        return NetworkUse(idle_threshold=self.threshold)


def replicate_next_log(trace: Trace, events: np.ndarray) -> np.ndarray:
    """The event log of replicate-next from the engine's log of its page table
    (``pager.replay(trace, ReplicateNext(), events=True, log_creations=...)``).

    For each visit v that has a successor in its session:

    - when v starts, the pages that exist then are copied to v's successor (one
      REPLICA event each, at the visit start: seeding the replica);
    - every access during v sends its page to the successor as well (one REPLICA
      event at the access time: each write goes to both, and the model does not
      tell reads from writes, so every access counts as a write: an upper bound).

    The engine's HANDOVER events (the page table moving to v at its start) stay in
    the log as the switch of ownership to the replica: they move nothing over the
    ISLs (the costs price them at zero), but say which satellite holds the primary
    copy. CREATE events are kept. Returns EVENT_DTYPE by session, then time (stable;
    at one time: creations, handovers, seeds, writes).
    """
    vo = np.asarray(trace.visit_offsets, np.int64)
    ao = np.asarray(trace.access_offsets, np.int64)
    ev = np.ascontiguousarray(events)
    n_visits = trace.n_visits
    last = np.zeros(n_visits, dtype=bool)
    if n_visits:
        last[vo[1:][np.diff(vo) > 0] - 1] = True
    ho_visit = ev["to_visit"][ev["kind"] == K.KIND_HANDOVER]
    n_seeds = int(np.count_nonzero(~last[ho_visit]))
    n_writes = int(np.diff(ao)[~last].sum())
    out = np.empty(ev.size + n_seeds + n_writes, dtype=EVENT_DTYPE)
    n, used = _replicate_next(ev, vo, np.asarray(trace.visit_start_ns, np.int64), ao,
                              np.asarray(trace.access_page, np.int32),
                              np.asarray(trace.access_time_ns, np.int64), out)
    if used != ev.size or n != out.size:
        raise ValueError(f"not the engine's log of replicate-next for this trace: "
                         f"{used} of {ev.size} events matched its visits and accesses")
    return out


@njit(cache=True, nogil=True)
def _put(out, n, session, page, frm, to, t, kind):
    r = out[n]
    r.session = session
    r.page = page
    r.from_visit = frm
    r.to_visit = to
    r.time_ns = t
    r.kind = kind


@njit(cache=True, nogil=True)
def _replicate_next(ev, vo, vstart, ao, apage, atime, out):
    """Session by session, visit by visit: the engine's handovers into the visit, the
    seed copies to its successor, then per access its creation (if the engine logged
    one) and its write to the successor. Returns (events written, engine events used)."""
    n = 0
    j = 0
    for s in range(vo.size - 1):
        for v in range(vo[s], vo[s + 1]):
            has_next = v + 1 < vo[s + 1]
            h0 = j
            while j < ev.size and ev[j].kind == K.KIND_HANDOVER and ev[j].to_visit == v:
                r = ev[j]
                _put(out, n, r.session, r.page, r.from_visit, r.to_visit, r.time_ns, r.kind)
                n += 1
                j += 1
            if has_next:
                for i in range(h0, j):
                    _put(out, n, s, ev[i].page, v, v + 1, vstart[v], K.KIND_REPLICA)
                    n += 1
            for a in range(ao[v], ao[v + 1]):
                p = apage[a]
                t = atime[a]
                if j < ev.size and ev[j].kind == K.KIND_CREATE and ev[j].to_visit == v \
                        and ev[j].page == p and ev[j].time_ns == t:
                    r = ev[j]
                    _put(out, n, r.session, r.page, r.from_visit, r.to_visit, r.time_ns,
                         r.kind)
                    n += 1
                    j += 1
                if has_next:
                    _put(out, n, s, p, v, v + 1, t, K.KIND_REPLICA)
                    n += 1
    return n, j
