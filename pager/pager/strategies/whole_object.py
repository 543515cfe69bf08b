"""Whole-object strategies: every page of the session moves to the new serving
satellite at each handover, so every access is local.

- ``Proactive``: the paper's proactive transfer, one hop along the trail per page.
- ``ContainerMigration``: the whole service container is checkpointed and restored
  on the next satellite at every handover (CRIU): proactive's page table, plus a
  downtime from ``MigrationModel`` during which accesses wait.

docs/strategies.md gives each one's cost model.
"""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from pager.strategy import PAGING, EventKind, NetworkUse, select_all

__all__ = ["Proactive", "ContainerMigration", "MigrationModel", "MIGRATION_DATA_FILE"]

_NO_PARAMS = np.zeros(0, dtype=np.int64)


@dataclass(frozen=True)
class Proactive:
    """The whole session object moves at each handover (the paper's).

    To the new serving satellite, one hop along the trail for each page."""

    name: ClassVar[str] = "proactive"
    move_on_fault: ClassVar[bool] = True
    create_on_ground: ClassVar[bool] = False
    handover_kind: ClassVar[EventKind] = EventKind.HANDOVER
    lead_ns: ClassVar[int] = 0
    select: ClassVar[Any] = select_all
    network: ClassVar[NetworkUse] = PAGING

    def params(self) -> np.ndarray:
        return _NO_PARAMS


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

    def handover_downtime_ms(self, state_bytes: np.ndarray) -> np.ndarray:
        """Downtime (ms) of each handover that migrates ``state_bytes`` of state."""
        return self.model.downtime_ms(state_bytes)
