"""On-demand strategies: a page moves to the serving satellite when it is accessed
there; a handover moves the page table (and, for hot-k, a few pages).

- ``OnDemand``: the paper's on-demand paging; one movement per fault.
- ``HotK``: on-demand, plus the k most used pages (so far in the session) moved to
  the new serving satellite at every handover.
- ``Multipath``: on-demand, each fault fetched over two link-disjoint ISL paths at
  once (multipath DCCP, Amend et al., LCN 2019).
- ``Custody``: on-demand, relays on a page's path keep a copy in a bounded custody
  cache; a later fault is served by the nearest holder (INRPP, Rene et al.).

docs/strategies.md gives each one's cost model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from pager.strategy import PAGING, EventKind, NetworkUse, handover_rule, select_none

__all__ = ["OnDemand", "HotK", "Multipath", "Custody"]

_NO_PARAMS = np.zeros(0, dtype=np.int64)


@dataclass(frozen=True)
class OnDemand:
    """A page moves when accessed; a handover moves only the page table.

    The paper's on-demand paging: the new satellite inherits the page table, not the
    frames; one movement per fault."""

    name: ClassVar[str] = "on-demand"
    move_on_fault: ClassVar[bool] = True
    create_on_ground: ClassVar[bool] = False
    handover_kind: ClassVar[EventKind] = EventKind.HANDOVER
    lead_ns: ClassVar[int] = 0
    select: ClassVar[Any] = select_none
    network: ClassVar[NetworkUse] = PAGING

    def params(self) -> np.ndarray:
        return _NO_PARAMS


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
