"""The transfer strategy Protocol, its event log and its network use.

The built-in strategies are classes in ``pager.strategies``, one module per family.

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
   PUSH ``lead_ns`` before it: pages pushed ahead of the handover);
4. optionally, how the network carries its transfers, ``network`` (a ``NetworkUse``: ``PAGING``
   for plain paging; multipath faults, custody caches, replication to the next
   server, blocking container migration, deferred pushes otherwise). The engine
   ignores it; the constellation simulation prices the event log with it, per event
   kind, and never asks which strategy it is;
5. optionally, what only the strategy knows about its network use, as methods that
   return arrays: ``network_log(trace, events)`` the log the network carries when it
   is not the engine's (replicate-next adds its replica copies; ``network_log``
   below calls it), and ``handover_downtime_ms(state_bytes)`` the downtime of each
   handover when ``network.blocking_migration`` (container-migration's fit).

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
        network: ClassVar = PAGING
        def params(self) -> np.ndarray:
            return np.array([self.k], dtype=np.int64)
"""

from __future__ import annotations

import enum
import inspect
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np
from numba import njit
from numba.core.errors import NumbaError

from pager import _kernels as K

__all__ = [
    "EVENT_DTYPE",
    "GROUND",
    "NOWHERE",
    "PAGING",
    "RULE_PARAMETERS",
    "SELECT_SIGNATURE",
    "EventKind",
    "NetworkUse",
    "Strategy",
    "handover_rule",
    "network_use",
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
    REPLICA = K.KIND_REPLICA  # a copy sent to another satellite; the owner keeps the page


@dataclass(frozen=True)
class NetworkUse:
    """How the network carries a strategy's transfers, beyond the page table the
    engine replays (docs/strategies.md prices each one; ``satpage compare`` applies
    them to the event log). The defaults are plain paging: one shortest-hop path per
    transfer, nothing cached on the way, nothing blocking.

    - ``fault_paths``: 1, or 2 to fetch a faulting page over two link-disjoint
      paths at once (latency of the faster, cost of both);
    - ``custody_pages``: relays on a page's path keep a copy in a custody cache of
      this many pages per satellite and session (0 = none); a later fault is served
      by the nearest holder;
    - ``replicate_next``: the state is replicated to the next serving satellite
      continuously (``replicate_next_log`` rewrites the log);
    - ``blocking_migration``: the whole container migrates at each handover and the
      service is down meanwhile (a ``MigrationModel`` gives the downtime);
    - ``idle_threshold``: handover pushes wait until every link of their path is
      below this utilisation (or go at the handover at the latest); 0 = no deferral.
    """

    fault_paths: int = 1
    custody_pages: int = 0
    replicate_next: bool = False
    blocking_migration: bool = False
    idle_threshold: float = 0.0

    def __post_init__(self) -> None:
        if self.fault_paths not in (1, 2):
            raise ValueError(f"fault_paths must be 1 or 2, got {self.fault_paths}")
        if self.custody_pages < 0:
            raise ValueError(f"custody_pages must not be negative, got {self.custody_pages}")
        if not 0.0 <= self.idle_threshold <= 1.0:
            raise ValueError(f"idle_threshold must be in [0, 1], got {self.idle_threshold}")


PAGING = NetworkUse()
"""The network use of plain paging strategies."""


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


#: The parameters of a handover rule, in order (SELECT_SIGNATURE gives their types).
RULE_PARAMETERS = ("owner", "uses", "last_use", "new_pos", "params", "out")


def handover_rule(func):
    """Compile a handover rule for the engine: ``func(owner, uses, last_use, new_pos,
    params, out) -> n`` writes the pages to move into ``out[:n]`` (see SELECT_SIGNATURE;
    pages never created or already local are skipped by the engine).

    TypeError, naming the function, when it does not take those six parameters or does
    not compile for their types (Numba's own message follows)."""
    params = list(inspect.signature(func).parameters.values())
    if len(params) != len(RULE_PARAMETERS) or any(
            p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params):
        raise TypeError(f"handover rule {func.__qualname__!r} takes "
                        f"({', '.join(p.name for p in params)}); a handover rule takes six "
                        f"positional parameters ({', '.join(RULE_PARAMETERS)}) and returns "
                        "how many pages it wrote to out")
    try:
        try:
            return njit(SELECT_SIGNATURE, cache=True)(func)
        except RuntimeError as exc:
            # a module that is no plain file (a plugin shipped to Dask workers as a zip):
            # Numba has nowhere to cache it, so compile it in every process
            if "cannot cache" not in str(exc):
                raise
            return njit(SELECT_SIGNATURE)(func)
    except NumbaError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise TypeError(f"handover rule {func.__qualname__!r} does not compile for "
                        f"pager.SELECT_SIGNATURE: {first}") from exc


@runtime_checkable
class Strategy(Protocol):
    """What the engine needs from a transfer strategy (see the module docstring)."""

    name: str
    move_on_fault: bool
    create_on_ground: bool
    handover_kind: EventKind
    lead_ns: int
    select: Any  # a handover_rule-compiled function
    # Optional: ``network`` (a NetworkUse) says how the ISLs carry the transfers;
    # a strategy without it is plain paging (``network_use`` reads it).
    # ``network_log(trace, events) -> events`` rewrites the engine's log into what the
    # network carries (``network_log`` reads it); ``handover_downtime_ms(state_bytes)
    # -> float64 array`` is required with ``network.blocking_migration``.

    def params(self) -> np.ndarray:
        """int64 (k,): the parameters passed to ``select``."""
        ...


def network_use(strategy: Strategy) -> NetworkUse:
    """The strategy's ``network`` member, PAGING when it has none."""
    use = getattr(strategy, "network", PAGING)
    if not isinstance(use, NetworkUse):
        raise ValueError(f"{strategy.name}: network must be a NetworkUse, got {use!r}")
    return use


def network_log(strategy: Strategy, trace: Any, events: np.ndarray) -> np.ndarray:
    """The event log the network carries for ``strategy``: its ``network_log(trace, events)``
    when it has one, else the engine's ``events`` as they are (EVENT_DTYPE)."""
    rewrite = getattr(strategy, "network_log", None)
    return events if rewrite is None else rewrite(trace, events)


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
