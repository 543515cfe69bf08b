"""Strategies beyond the paper's two, for the constellation comparison (`satpage compare`).

Each is a class implementing ``pager.strategy.Strategy``; the engine, its event
log and the cost accounting are shared. docs/strategies.md gives each one's
cost model.

- ``HotK``: on-demand, plus the K most used pages (so far in the session) moved
  to the new serving satellite at every handover.
- ``GroundStore``: the paper's option A: the session object stays on the ground;
  every access is served remotely across the ground link (no page ever moves
  into a satellite's frames).
- ``PushAhead``: uses what a SIN offers (Fongen Sec. V-D): the next serving
  satellite is known in advance, so the pages the current satellite used in its
  last ``recent_visits`` visits are pushed to it ``lead_ns`` before the
  handover, over links that are idle then; anything else stays on-demand.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from pager.strategy import (
    PAGING,
    EventKind,
    NetworkUse,
    handover_rule,
    select_none,
)

__all__ = ["HotK", "GroundStore", "PushAhead"]


@handover_rule
def _most_used(owner, uses, last_use, new_pos, params, out):
    """The ``params[0]`` pages with the most uses so far (ties: lower page first)."""
    order = np.argsort(-uses.astype(np.int64), kind="mergesort")
    n = 0
    k = min(params[0], order.size)
    for i in range(k):
        p = order[i]
        if uses[p] == 0:
            break
        out[n] = p
        n += 1
    return n


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
class HotK:
    """On-demand, plus the k most used pages moved at each handover."""

    k: int = 32
    name: ClassVar[str] = "hot-k"
    move_on_fault: ClassVar[bool] = True
    create_on_ground: ClassVar[bool] = False
    handover_kind: ClassVar[EventKind] = EventKind.HANDOVER
    lead_ns: ClassVar[int] = 0
    select: ClassVar[Any] = _most_used
    network: ClassVar[NetworkUse] = PAGING

    def __post_init__(self) -> None:
        if self.k < 0:
            raise ValueError(f"hot-k: k must not be negative, got {self.k}")

    def params(self) -> np.ndarray:
        return np.array([self.k], dtype=np.int64)


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
