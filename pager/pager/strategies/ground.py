"""Ground strategies: the session object stays on the ground and every access is
served remotely across the ground link; no page moves into a satellite's frames.

- ``GroundStore``: the paper's option A.

docs/strategies.md gives its cost model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from pager.strategy import PAGING, EventKind, NetworkUse, select_none

__all__ = ["GroundStore"]

@dataclass(frozen=True)
class GroundStore:
    """Session object kept on the ground; every access crosses to it."""

    name: ClassVar[str] = "ground-store"
    move_on_fault: ClassVar[bool] = False
    create_on_ground: ClassVar[bool] = True
    handover_kind: ClassVar[EventKind] = EventKind.HANDOVER
    lead_ns: ClassVar[int] = 0
    select: ClassVar[Any] = select_none
    network: ClassVar[NetworkUse] = PAGING

    def params(self) -> np.ndarray:
        return np.zeros(0, dtype=np.int64)
