"""Replication strategies: the state is copied to the next serving satellite as it
changes, so a handover moves nothing.

- ``ReplicateNext``: Komet's proactive replication (Pfandzelter and Bermbach,
  SoCC 2024); ``replicate_next_log`` writes its event log from the engine's.

docs/strategies.md gives its cost model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numba import njit

from pager import _kernels as K
from pager.strategy import EVENT_DTYPE, EventKind, NetworkUse, select_all
from pager.trace import Trace

__all__ = ["ReplicateNext", "replicate_next_log"]

_NO_PARAMS = np.zeros(0, dtype=np.int64)


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

    def network_log(self, trace: Trace, events: np.ndarray) -> np.ndarray:
        """What the network carries: the engine's log with the replica copies
        (``replicate_next_log``)."""
        return replicate_next_log(trace, events)


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
