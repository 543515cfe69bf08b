"""Replaying a `pager.Trace` under a strategy: the movement event log and what each
visit's satellite still holds when its session ends.

The log is pager's (``pager.EVENT_DTYPE``; kinds ``pager.EventKind``):
``session``, ``page``, ``from_visit`` (global visit index, or GROUND = -2, or
NOWHERE = -1 for a creation), ``to_visit``, ``time_ns``, ``kind`` (FAULT 0,
HANDOVER 1, PUSH 2, REMOTE 3, CREATE 4). satpage.costs prices it.

`replay` runs pager's engine (``pager.replay``) with the strategy classes of
``pager`` and ``pager.strategies_extra``. ``replay_builtin`` is satpage's own
compiled implementation of the same five strategies, written independently
from the same rules (DESIGN.md section 1, docs/strategies.md); the tests hold
the two to identical event logs (an independent parity reference).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numba
import numpy as np

import pager
from pager import Trace

__all__ = ["ReplayLog", "replay", "replay_builtin", "make_strategy", "EVENT_DTYPE",
           "FAULT", "HANDOVER", "PUSH", "REMOTE", "CREATE", "GROUND", "NOWHERE",
           "ENGINE"]

log = logging.getLogger(__name__)

FAULT, HANDOVER, PUSH, REMOTE, CREATE = 0, 1, 2, 3, 4
NOWHERE, GROUND = -1, -2
EVENT_DTYPE = np.dtype([("session", np.int64), ("page", np.int32), ("from_visit", np.int32),
                        ("to_visit", np.int32), ("time_ns", np.int64), ("kind", np.int8)])

#: the engine `replay` uses; reports record it.
ENGINE = "pager"


@dataclass(frozen=True, eq=False)
class ReplayLog:
    """``events`` EVENT_DTYPE (e,), by session then time; ``held_at_end`` int32 (v,):
    pages held by each visit's satellite when the session ends."""

    strategy: str
    events: np.ndarray
    held_at_end: np.ndarray


def make_strategy(name: str, hot_k: int = 32, push_recent_visits: int = 1,
                  push_lead_ns: int = 10_000_000_000):
    """The pager Strategy object for a strategy name of satpage.scenario.STRATEGY_NAMES."""
    from pager.strategies_extra import GroundStore, HotK, PushAhead

    if name == "proactive":
        return pager.Proactive()
    if name == "on-demand":
        return pager.OnDemand()
    if name == "hot-k":
        return HotK(k=hot_k)
    if name == "ground-store":
        return GroundStore()
    if name == "push-ahead":
        return PushAhead(recent_visits=push_recent_visits, lead_ns=push_lead_ns)
    raise ValueError(f"unknown strategy {name!r}")


def replay(trace: Trace, name: str, hot_k: int = 32, push_recent_visits: int = 1,
           push_lead_ns: int = 10_000_000_000) -> ReplayLog:
    """Replay ``trace`` under the named strategy with pager's engine."""
    strategy = make_strategy(name, hot_k, push_recent_visits, push_lead_ns)
    r = pager.replay(trace, strategy, events=True, log_creations=True)
    return ReplayLog(name, r.events, r.held_at_end)


# -- satpage's own implementation (parity reference for the tests) ----------------------------

_CODES = {"proactive": 0, "on-demand": 1, "hot-k": 2, "ground-store": 3, "push-ahead": 4}


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
def _move(ev, e, s, p, owner, held, v, t, kind):
    o = owner[p]
    held[o] -= 1
    held[v] += 1
    owner[p] = v
    return _emit(ev, e, s, p, o, v, t, kind)


@numba.njit(cache=True, nogil=True)
def _replay_kernel(code, n_pages, hot_k, recent, lead_ns, visit_offsets, visit_start,
                   access_offsets, access_page, access_time, ev, held):
    n_sessions = visit_offsets.size - 1
    owner = np.full(n_pages, -1, np.int64)          # global visit index, -1 nowhere, -2 ground
    uses = np.zeros(n_pages, np.int64)
    last = np.full(n_pages, -1, np.int64)           # visit of the last use
    e = 0
    for s in range(n_sessions):
        owner[:] = -1
        uses[:] = 0
        last[:] = -1
        v0 = visit_offsets[s]
        for v in range(v0, visit_offsets[s + 1]):
            t0 = visit_start[v]
            if v > v0:
                if code == 0:                        # proactive: every page that exists
                    for p in range(n_pages):
                        if owner[p] >= 0 and owner[p] != v:
                            e = _move(ev, e, s, p, owner, held, v, t0, 1)
                elif code == 2:                      # hot-k: the K most used so far
                    order = np.argsort(-uses, kind="mergesort")
                    for r in range(min(hot_k, n_pages)):
                        p = order[r]
                        if uses[p] == 0:
                            break
                        if owner[p] >= 0 and owner[p] != v:
                            e = _move(ev, e, s, p, owner, held, v, t0, 1)
                elif code == 4:                      # push-ahead: the recent working set
                    for p in range(n_pages):
                        if last[p] >= v - recent and last[p] < v and owner[p] >= 0 \
                                and owner[p] != v:
                            e = _move(ev, e, s, p, owner, held, v, t0 - lead_ns, 2)
            for a in range(access_offsets[v], access_offsets[v + 1]):
                p = access_page[a]
                t = access_time[a]
                uses[p] += 1
                last[p] = v
                if code == 3:                        # ground-store: served from the ground
                    owner[p] = -2
                    e = _emit(ev, e, s, p, -2, v, t, 3)
                elif owner[p] == -1:
                    owner[p] = v
                    held[v] += 1
                    e = _emit(ev, e, s, p, -1, v, t, 4)
                elif owner[p] != v:
                    e = _move(ev, e, s, p, owner, held, v, t, 0)
    return e


def replay_builtin(trace: Trace, name: str, hot_k: int = 32, push_recent_visits: int = 1,
                   push_lead_ns: int = 10_000_000_000) -> ReplayLog:
    """satpage's compiled replay of the same strategies (same log as `replay`)."""
    if name not in _CODES:
        raise ValueError(f"unknown strategy {name!r} (known: {', '.join(_CODES)})")
    n_pages = trace.n_pages
    cap = trace.n_accesses + trace.n_visits * n_pages + 1
    ev = np.empty((cap, 6), np.int64)
    held = np.zeros(max(trace.n_visits, 1), np.int64)
    e = _replay_kernel(_CODES[name], n_pages, int(hot_k), int(push_recent_visits),
                       int(push_lead_ns), trace.visit_offsets, trace.visit_start_ns,
                       trace.access_offsets, trace.access_page, trace.access_time_ns, ev, held)
    out = np.empty(e, dtype=EVENT_DTYPE)
    for j, col in enumerate(EVENT_DTYPE.names):
        out[col] = ev[:e, j]
    return ReplayLog(name, out, held[:trace.n_visits].astype(np.int32))
