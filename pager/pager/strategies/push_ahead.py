"""Push-ahead strategies: the next serving satellite is known in advance (what a SIN
offers, Fongen Sec. V-D), so the pages the current satellite used lately are pushed to
it before the handover; anything else stays on-demand.

- ``PushAhead``: the pages used in the last ``recent_visits`` visits pushed
  ``lead_ns`` before the handover, over links that are idle then.
- ``IdleLink``: push-ahead whose pushes wait until their path's links are below a
  load threshold, or go at the handover at the latest (MAMI path signalling).

docs/strategies.md gives each one's cost model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from pager.strategy import PAGING, EventKind, NetworkUse, handover_rule

__all__ = ["PushAhead", "IdleLink"]

@handover_rule
def _recently_used(owner, uses, last_use, new_pos, params, out):
    """Pages last used during the previous ``params[0]`` visits (the working set the
    current satellite holds when the handover comes)."""
    n = 0
    oldest = new_pos - params[0]
    for p in range(owner.size):
        if last_use[p] >= oldest and last_use[p] < new_pos:
            out[n] = p
            n += 1
    return n


@dataclass(frozen=True)
class PushAhead:
    """Recently used pages pushed to the next server before handover.

    The pages used in the last ``recent_visits`` visits go to the predicted next server
    ``lead_ns`` before the handover; on-demand for the rest.

    ``staged`` False (the default, the comparison's model): the pages move once, logged
    ``lead_ns`` before the handover but chosen after every access of the ending visit,
    so the counts do not depend on the lead. ``staged`` True (what the live service
    does, docs/live.md): at ``visit start - lead_ns`` the pages selected so far are
    copied to the next server (one PUSH movement each, their owner keeps them); at the
    handover a copy not written since is claimed in place (no movement), and a page
    written after its copy, or first used after it, moves then (one PUSH movement at
    the handover). Writes come from ``Trace.access_write`` (none: every access writes)."""

    recent_visits: int = 1
    lead_ns: int = 10_000_000_000
    staged: bool = False
    name: ClassVar[str] = "push-ahead"
    move_on_fault: ClassVar[bool] = True
    create_on_ground: ClassVar[bool] = False
    handover_kind: ClassVar[EventKind] = EventKind.PUSH
    select: ClassVar[Any] = _recently_used
    network: ClassVar[NetworkUse] = PAGING

    def __post_init__(self) -> None:
        if self.recent_visits < 1:
            raise ValueError(f"{self.name}: recent_visits must be at least 1, "
                             f"got {self.recent_visits}")
        if self.lead_ns < 0:
            raise ValueError(f"{self.name}: lead_ns must not be negative, got {self.lead_ns}")

    def params(self) -> np.ndarray:
        return np.array([self.recent_visits], dtype=np.int64)


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
