"""Replaying a `pager.Trace` under a strategy into a movement event log.

The event log is what the cost accounting (satpage.costs) reads. Its layout
follows pager's movement log (structured array), with visits as global visit
indices of the trace:

- ``session``    int64  session of the trace (0..n_sessions-1)
- ``page``       int32
- ``from_visit`` int64  visit whose satellite held the page (-1: none / the ground)
- ``to_visit``   int64  visit whose satellite holds it afterwards (-1: released)
- ``time_ns``    int64
- ``kind``       int8   one of EVENT_KINDS

`replay` uses pager's engine and strategy classes when they are installed
(``pager.replay`` / ``pager.STRATEGIES``) and satpage's compiled replay below
otherwise; both implement DESIGN.md section 1 and the strategies of
docs/strategies.md, and a test holds them to the same counts.
"""

from __future__ import annotations

import logging

import numba
import numpy as np

from pager import Trace

__all__ = ["EVENT_DTYPE", "EVENT_KINDS", "CREATE", "FAULT", "HANDOVER", "PUSH", "GROUND",
           "END", "replay", "StrategyParams", "replay_builtin"]

log = logging.getLogger(__name__)

EVENT_DTYPE = np.dtype([("session", "i8"), ("page", "i4"), ("from_visit", "i8"),
                        ("to_visit", "i8"), ("time_ns", "i8"), ("kind", "i1")])
CREATE, FAULT, HANDOVER, PUSH, GROUND, END = 0, 1, 2, 3, 4, 5
EVENT_KINDS = {CREATE: "create", FAULT: "fault", HANDOVER: "handover", PUSH: "push",
               GROUND: "ground", END: "end"}

_CODES = {"proactive": 0, "on-demand": 1, "hot-k": 2, "ground-store": 3, "push-ahead": 4}


class StrategyParams:
    """Parameters some strategies take (from the scenario's [strategies] table)."""

    def __init__(self, hot_k: int = 32, push_min_uses: int = 1) -> None:
        self.hot_k = int(hot_k)
        self.push_min_uses = int(push_min_uses)


@numba.njit(cache=True, nogil=True, inline="always")
def _emit(ev, e, s, p, from_visit, to_visit, time_ns, kind):
    ev[e, 0] = s
    ev[e, 1] = p
    ev[e, 2] = from_visit
    ev[e, 3] = to_visit
    ev[e, 4] = time_ns
    ev[e, 5] = kind
    return e + 1


@numba.njit(cache=True, nogil=True)
def _replay_kernel(code, n_pages, hot_k, push_min, visit_offsets, visit_start, access_offsets,
                   access_page, access_time, session_end, ev):
    n_sessions = visit_offsets.size - 1
    owner = np.full(n_pages, -1, np.int64)
    used_total = np.zeros(n_pages, np.int64)
    used_visit = np.zeros(n_pages, np.int64)
    key = np.zeros(n_pages, np.int64)
    e = 0
    for s in range(n_sessions):
        owner[:] = -1
        used_total[:] = 0
        used_visit[:] = 0
        v0 = visit_offsets[s]
        v1 = visit_offsets[s + 1]
        for v in range(v0, v1):
            t0 = visit_start[v]
            if v > v0 and code != 3:
                if code == 0:                        # proactive: the whole object
                    for p in range(n_pages):
                        if owner[p] >= 0 and owner[p] != v:
                            e = _emit(ev, e, s, p, owner[p], v, t0, 2)
                            owner[p] = v
                elif code == 2 and hot_k > 0:        # hot-k: the K most used so far
                    for p in range(n_pages):
                        # most used first, then the lower page index
                        key[p] = -(used_total[p] * n_pages + (n_pages - 1 - p))
                    order = np.argsort(key)
                    for r in range(min(hot_k, n_pages)):
                        p = order[r]
                        if used_total[p] == 0:
                            break
                        if owner[p] >= 0 and owner[p] != v:
                            e = _emit(ev, e, s, p, owner[p], v, t0, 2)
                            owner[p] = v
                elif code == 4:                      # push-ahead: this visit's working set
                    for p in range(n_pages):
                        if owner[p] == v - 1 and used_visit[p] >= push_min:
                            e = _emit(ev, e, s, p, v - 1, v, t0, 3)
                            owner[p] = v
            used_visit[:] = 0
            for a in range(access_offsets[v], access_offsets[v + 1]):
                p = access_page[a]
                if code == 3:                        # ground-store: every access to the ground
                    e = _emit(ev, e, s, p, -1, v, access_time[a], 4)
                elif owner[p] < 0:
                    e = _emit(ev, e, s, p, -1, v, access_time[a], 0)
                    owner[p] = v
                elif owner[p] != v:
                    e = _emit(ev, e, s, p, owner[p], v, access_time[a], 1)
                    owner[p] = v
                used_total[p] += 1
                used_visit[p] += 1
        if code != 3:
            for p in range(n_pages):
                if owner[p] >= 0:
                    e = _emit(ev, e, s, p, owner[p], -1, session_end[s], 5)
    return e


def replay_builtin(trace: Trace, strategy: str, params: StrategyParams,
                   session_end_ns: np.ndarray) -> np.ndarray:
    """satpage's compiled replay: the event log of ``strategy`` on ``trace``."""
    if strategy not in _CODES:
        raise ValueError(f"unknown strategy {strategy!r} (known: {', '.join(_CODES)})")
    n_pages = trace.n_pages
    cap = trace.n_accesses + trace.n_visits * n_pages + trace.n_sessions * n_pages + 1
    ev = np.empty((cap, 6), np.int64)
    e = _replay_kernel(_CODES[strategy], n_pages, params.hot_k, params.push_min_uses,
                       trace.visit_offsets, trace.visit_start_ns, trace.access_offsets,
                       trace.access_page, trace.access_time_ns,
                       np.asarray(session_end_ns, np.int64), ev)
    out = np.empty(e, dtype=EVENT_DTYPE)
    for j, name in enumerate(EVENT_DTYPE.names):
        out[name] = ev[:e, j]
    return out


def replay(trace: Trace, strategy: str, params: StrategyParams,
           session_end_ns: np.ndarray) -> np.ndarray:
    """The event log of ``strategy`` replayed over ``trace`` (EVENT_DTYPE)."""
    return replay_builtin(trace, strategy, params, session_end_ns)
