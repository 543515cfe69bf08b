"""Transfer strategies: one Protocol, one class per strategy.

A strategy tells the shared engine three things (docs/paging-model.md):

1. what an access to a page held elsewhere does: ``move_on_fault`` True moves the
   page to the serving satellite (paging, one movement); False serves it remotely
   and leaves it where it is (a remote access, e.g. a ground store);
2. where a page is created on its first access: on the serving satellite, or on
   the ground (``create_on_ground``);
3. which pages move to the new serving satellite when a visit starts: the
   handover rule ``select``, a Numba function compiled with ``SELECT_SIGNATURE``
   (decorate it with ``handover_rule``), fed the strategy's integer ``params()``.
   Its moves are logged as ``handover_kind`` (HANDOVER at the visit start, or
   PUSH ``lead_ns`` before it: pages pushed ahead of the handover).

A new strategy is a new class with these members; the engine, its compiled
kernels and the event log are shared. Example (hot-k: on-demand plus the K most
used pages moved at each handover)::

    @pager.handover_rule
    def _most_used(owner, uses, last_use, new_pos, params, out):
        order = np.argsort(-uses.astype(np.int64), kind="mergesort")
        n = 0
        for p in order[: params[0]]:
            if uses[p] > 0:
                out[n] = p
                n += 1
        return n

    @dataclass(frozen=True)
    class HotK:
        k: int
        name: ClassVar[str] = "hot-k"
        move_on_fault: ClassVar[bool] = True
        create_on_ground: ClassVar[bool] = False
        handover_kind: ClassVar[EventKind] = EventKind.HANDOVER
        lead_ns: ClassVar[int] = 0
        select: ClassVar = _most_used
        def params(self) -> np.ndarray:
            return np.array([self.k], dtype=np.int64)
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np
from numba import njit

from pager import _kernels as K

__all__ = [
    "EVENT_DTYPE",
    "GROUND",
    "NOWHERE",
    "SELECT_SIGNATURE",
    "EventKind",
    "OnDemand",
    "Proactive",
    "Strategy",
    "handover_rule",
    "select_all",
    "select_none",
]

NOWHERE = K.NOWHERE
"""Owner code of a page never created; ``from_visit`` of a CREATE event."""
GROUND = K.GROUND
"""Owner code of a page kept on the ground; ``from_visit``/``to_visit`` of an event that
crosses the ground link."""
SELECT_SIGNATURE = K.SELECT_SIGNATURE


class EventKind(enum.IntEnum):
    """Kind of a page event in the engine's event log."""

    FAULT = K.KIND_FAULT  # moved on access from a past serving satellite (or the ground)
    HANDOVER = K.KIND_HANDOVER  # moved by the strategy at the start of a visit
    PUSH = K.KIND_PUSH  # moved by the strategy ahead of the handover (lead_ns before it)
    REMOTE = K.KIND_REMOTE  # served from where it is, not moved (no-move strategies)
    CREATE = K.KIND_CREATE  # created locally (logged only with log_creations=True)


EVENT_DTYPE = K.EVENT_RECORD
# Fields: session (int64, index in the Trace); page (int32); from_visit (int32, global
# visit index in the Trace of the holder, GROUND, or NOWHERE for a CREATE); to_visit
# (int32, global visit index of the serving visit); time_ns (int64: the access time
# for FAULT / REMOTE / CREATE, the visit start for HANDOVER, the visit start minus
# lead_ns for PUSH); kind (int8, EventKind).
"""One page event. Visits of a session are contiguous in the Trace, so the trail
distance of a movement is ``to_visit - from_visit``; the constellation simulation
maps both visits to satellites (``trace.visit_satellite``) and prices the ISL path
at ``time_ns``."""


def handover_rule(func):
    """Compile a handover rule for the engine: ``func(owner, uses, last_use, new_pos,
    params, out) -> n`` writes the pages to move into ``out[:n]`` (see SELECT_SIGNATURE;
    pages never created or already local are skipped by the engine)."""
    return njit(SELECT_SIGNATURE, cache=True)(func)


@runtime_checkable
class Strategy(Protocol):
    """What the engine needs from a transfer strategy (see the module docstring)."""

    name: str
    move_on_fault: bool
    create_on_ground: bool
    handover_kind: EventKind
    lead_ns: int
    select: Any  # a handover_rule-compiled function

    def params(self) -> np.ndarray:
        """int64 (k,): the parameters passed to ``select``."""
        ...


@handover_rule
def select_none(owner, uses, last_use, new_pos, params, out):
    """Move nothing at handover."""
    return 0


@handover_rule
def select_all(owner, uses, last_use, new_pos, params, out):
    """Every page that exists (the whole session object)."""
    n = 0
    for p in range(owner.size):
        if owner[p] >= 0:
            out[n] = p
            n += 1
    return n


_NO_PARAMS = np.zeros(0, dtype=np.int64)


@dataclass(frozen=True)
class OnDemand:
    """The paper's on-demand paging: the new satellite inherits the page table, not
    the frames; a page moves when it is accessed (one movement per fault)."""

    name: ClassVar[str] = "on-demand"
    move_on_fault: ClassVar[bool] = True
    create_on_ground: ClassVar[bool] = False
    handover_kind: ClassVar[EventKind] = EventKind.HANDOVER
    lead_ns: ClassVar[int] = 0
    select: ClassVar[Any] = select_none

    def params(self) -> np.ndarray:
        return _NO_PARAMS


@dataclass(frozen=True)
class Proactive:
    """The paper's proactive baseline: the whole session object moves to the new
    serving satellite at every handover (one hop along the trail for each page)."""

    name: ClassVar[str] = "proactive"
    move_on_fault: ClassVar[bool] = True
    create_on_ground: ClassVar[bool] = False
    handover_kind: ClassVar[EventKind] = EventKind.HANDOVER
    lead_ns: ClassVar[int] = 0
    select: ClassVar[Any] = select_all

    def params(self) -> np.ndarray:
        return _NO_PARAMS
