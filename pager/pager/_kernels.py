"""Compiled (Numba) kernels behind ``pager.engine`` and ``pager.workload``.

Internal module: the public API is in ``pager``. Everything here works on
plain arrays so that one compiled kernel serves every strategy: a strategy's
handover rule comes in as a first-class function of the fixed signature
``SELECT_SIGNATURE`` (see ``pager.strategy``), so the kernels are compiled and
cached once, not once per strategy.

Random numbers: each session owns an independent xoroshiro128++ stream
(Blackman and Vigna, "Scrambled linear pseudorandom number generators", 2021)
seeded by SplitMix64 from ``(key, global session index)``. A session's accesses
therefore depend only on the key and its index: not on the chunk size, the
thread count or how many sessions run beside it.
"""

from __future__ import annotations

import functools

import numba
import numpy as np
from numba import njit, prange, types

# Owner codes in a session's page table (trail positions are >= 0).
NOWHERE = -1  # page never created
GROUND = -2  # page kept on the ground (e.g. a ground-store strategy)

# Event kinds (public through pager.strategy.EventKind).
KIND_FAULT = 0
KIND_HANDOVER = 1
KIND_PUSH = 2
KIND_REMOTE = 3
KIND_CREATE = 4
KIND_REPLICA = 5  # written by pager.strategies.replication.replicate_next_log, not the kernels

# Per-session counter columns (public names in pager.engine.COUNTER_FIELDS).
C_ACCESSES = 0
C_HITS = 1
C_CREATED = 2
C_CREATED_GROUND = 3
C_FAULT_MOVES = 4
C_HANDOVER_MOVES = 5
C_PUSH_MOVES = 6
C_REMOTE = 7
C_GROUND = 8
C_TRAIL_HOPS = 9
C_REMOTE_TRAIL_HOPS = 10
N_COUNTERS = 11

SELECT_SIGNATURE = types.int64(
    types.int16[::1],  # owner: trail position of each page's owner, NOWHERE or GROUND
    types.int32[::1],  # uses: accesses to each page so far in this session
    types.int16[::1],  # last_use: trail position of each page's last access, -1 if none
    types.int64,  # new_pos: trail position of the visit that starts
    types.int64[::1],  # params: the strategy's integer parameters
    types.int32[::1],  # out: write the selected pages here
)
"""Signature of a strategy's handover rule: returns how many pages it wrote to ``out``."""

_SELECT_T = types.FunctionType(SELECT_SIGNATURE)

EVENT_RECORD = np.dtype([
    ("session", np.int64),
    ("page", np.int32),
    ("from_visit", np.int32),
    ("to_visit", np.int32),
    ("time_ns", np.int64),
    ("kind", np.int8),
])
"""Layout of one event (public as pager.EVENT_DTYPE, documented there)."""
_EVENT_T = numba.from_dtype(EVENT_RECORD)

_U64 = np.uint64
_MASK32 = np.uint64(0xFFFFFFFF)
_GAMMA = np.uint64(0x9E3779B97F4A7C15)


@njit(cache=True)
def _splitmix(x):
    """SplitMix64 finaliser of ``x`` (already advanced by the caller)."""
    z = x
    z = (z ^ (z >> _U64(30))) * _U64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> _U64(27))) * _U64(0x94D049BB133111EB)
    return z ^ (z >> _U64(31))


@njit(cache=True)
def _rotl(x, k):
    return (x << _U64(k)) | (x >> _U64(64 - k))


@njit(cache=True)
def session_state(key, session):
    """The two xoroshiro128++ state words of a session (SplitMix64 seeding)."""
    x = key + _U64(2) * _U64(session) * _GAMMA
    s0 = _splitmix(x + _GAMMA)
    s1 = _splitmix(x + _GAMMA + _GAMMA)
    return s0, s1


@njit(cache=True)
def _next(s0, s1):
    """One xoroshiro128++ output and the next state."""
    result = _rotl(s0 + s1, 17) + s0
    s1 ^= s0
    s0 = _rotl(s0, 49) ^ s1 ^ (s1 << _U64(21))
    s1 = _rotl(s1, 28)
    return result, s0, s1


@njit(cache=True)
def _draw(u, n_pages, threshold, alias):
    """Page for one 64-bit random word: the column from the high 32 bits
    (multiply-shift), the alias coin from the low 32 bits."""
    col = ((u >> _U64(32)) * _U64(n_pages)) >> _U64(32)
    c = np.int64(col)
    other = np.int64(alias[c])
    # Both candidates loaded, then a select: no branch to mispredict on the coin.
    return c if (u & _MASK32) < threshold[c] else other


@njit(cache=True)
def build_alias(prob):
    """Vose's alias table for ``prob`` (float64, sums to 1): integer thresholds
    out of 2**32 and the alias of each column."""
    n = prob.size
    scaled = prob * n
    threshold = np.empty(n, np.uint64)
    alias = np.arange(n).astype(np.int32)
    small = np.empty(n, np.int64)
    large = np.empty(n, np.int64)
    ns = 0
    nl = 0
    for i in range(n):
        if scaled[i] < 1.0:
            small[ns] = i
            ns += 1
        else:
            large[nl] = i
            nl += 1
    while ns > 0 and nl > 0:
        ns -= 1
        s = small[ns]
        nl -= 1
        g = large[nl]
        threshold[s] = np.uint64(scaled[s] * 4294967296.0)
        alias[s] = g
        scaled[g] = (scaled[g] + scaled[s]) - 1.0
        if scaled[g] < 1.0:
            small[ns] = g
            ns += 1
        else:
            large[nl] = g
            nl += 1
    # Leftovers are 1 up to rounding: always accept the column itself.
    for i in range(nl):
        threshold[large[i]] = np.uint64(4294967296)
    for i in range(ns):
        threshold[small[i]] = np.uint64(4294967296)
    return threshold, alias


@njit(cache=True, parallel=True)
def paper_pages(key, first_session, n_sessions, n_visits, n_accesses, threshold, alias, out):
    """Fill ``out`` (n_sessions, n_visits * n_accesses) with the pages that
    ``paper_ondemand_kernel`` draws for sessions ``first_session...``."""
    n_pages = threshold.size
    for i in prange(n_sessions):
        s0, s1 = session_state(key, first_session + i)
        for j in range(n_visits * n_accesses):
            u, s0, s1 = _next(s0, s1)
            out[i, j] = _draw(u, n_pages, threshold, alias)


@njit(cache=True, parallel=True)
def session_pages(key, sessions, offsets, threshold, alias, out):
    """``out[offsets[i]:offsets[i + 1]]``: the first draws of session ``sessions[i]``'s
    stream (the same stream ``paper_pages`` reads for that session)."""
    n_pages = threshold.size
    for i in prange(sessions.size):
        s0, s1 = session_state(key, sessions[i])
        for j in range(offsets[i], offsets[i + 1]):
            u, s0, s1 = _next(s0, s1)
            out[j] = _draw(u, n_pages, threshold, alias)


@njit(cache=True)
def _put(ev, k, s, p, frm, to, t, kind):
    e = ev[k]
    e.session = s
    e.page = p
    e.from_visit = frm
    e.to_visit = to
    e.time_ns = t
    e.kind = kind


@njit(cache=True)
def _run_visit(pages, times, lo, hi, pos, sat, owner, uses, last_use, held, move_on_fault,
               create_on_ground, cnt, record, log_creations, ev, k, s, v0):
    """Apply accesses ``pages[lo:hi]`` at trail position ``pos``: the page-table
    semantics of docs/design.md section 1. ``sat``: the session's serving satellite
    per trail position. A page held by an earlier visit of the satellite serving now
    (a session back at a satellite, an orbit later) is a hit: the table names
    satellites, and nothing moves. This loop is the engine's hot path, so the
    counters live in local variables (registers). With ``record``, every
    movement / remote access (and creation, with ``log_creations``) is written
    to the event log ``ev`` from index ``k``, with global visit indices (the
    session's visits start at ``v0``); returns the next free index."""
    hits = 0
    created = 0
    created_ground = 0
    faults = 0
    remote = 0
    ground = 0
    hops = 0
    remote_hops = 0
    g = v0 + pos
    for a in range(lo, hi):
        p = pages[a]
        o = np.int64(owner[p])
        uses[p] += 1
        last_use[p] = pos
        if o == pos:
            hits += 1
        elif o == NOWHERE:
            if create_on_ground:
                owner[p] = GROUND
                created_ground += 1
                remote += 1
                ground += 1
                if record:
                    _put(ev, k, s, p, GROUND, g, times[a], KIND_REMOTE)
                    k += 1
            else:
                owner[p] = pos
                held[pos] += 1
                created += 1
                if record and log_creations:
                    _put(ev, k, s, p, NOWHERE, g, times[a], KIND_CREATE)
                    k += 1
        elif o >= 0 and sat[o] == sat[pos]:
            hits += 1
            if move_on_fault:  # the page is the new visit's where it is
                owner[p] = pos
                held[o] -= 1
                held[pos] += 1
        elif move_on_fault:
            owner[p] = pos
            held[pos] += 1
            faults += 1
            if o >= 0:
                held[o] -= 1
                hops += pos - o
            else:
                ground += 1
            if record:
                _put(ev, k, s, p, v0 + o if o >= 0 else o, g, times[a], KIND_FAULT)
                k += 1
        else:
            remote += 1
            if o >= 0:
                remote_hops += pos - o
            else:
                ground += 1
            if record:
                _put(ev, k, s, p, v0 + o if o >= 0 else o, g, times[a], KIND_REMOTE)
                k += 1
    cnt[C_ACCESSES] += hi - lo
    cnt[C_HITS] += hits
    cnt[C_CREATED] += created
    cnt[C_CREATED_GROUND] += created_ground
    cnt[C_FAULT_MOVES] += faults
    cnt[C_REMOTE] += remote
    cnt[C_GROUND] += ground
    cnt[C_TRAIL_HOPS] += hops
    cnt[C_REMOTE_TRAIL_HOPS] += remote_hops
    return k


@njit(cache=True)
def _handover(pos, sat, owner, uses, last_use, held, select, params, out, cnt, push,
              record, ev, k, s, v0, t):
    """Move the pages the strategy's rule selects to the visit at ``pos`` (pages
    never created or already local are skipped; a page held by an earlier visit of
    the same satellite becomes the new visit's without moving); with ``record``, log
    each move at time ``t``. Returns the next free event index."""
    n = select(owner, uses, last_use, pos, params, out)
    moved = 0
    hops = 0
    ground = 0
    kind = KIND_PUSH if push else KIND_HANDOVER
    for i in range(n):
        p = out[i]
        o = np.int64(owner[p])
        if o == pos or o == NOWHERE:
            continue
        owner[p] = pos
        if o >= 0 and sat[o] == sat[pos]:
            held[o] -= 1
            held[pos] += 1
            continue
        moved += 1
        if o >= 0:
            held[o] -= 1
            hops += pos - o
        else:
            ground += 1
        if record:
            _put(ev, k, s, p, v0 + o if o >= 0 else o, v0 + pos, t, kind)
            k += 1
    held[pos] += moved
    cnt[C_TRAIL_HOPS] += hops
    cnt[C_GROUND] += ground
    if push:
        cnt[C_PUSH_MOVES] += moved
    else:
        cnt[C_HANDOVER_MOVES] += moved
    return k


@njit(cache=True)
def _copy_ahead(to_pos, sat, owner, uses, last_use, select, params, out, cnt, copied_from, record, ev, k,
                s, v0, t):
    """The live service's push with a lead, first half: at ``t`` the pages the rule
    selects for the visit at ``to_pos`` are copied there (one PUSH movement each,
    logged at ``t``) while their owner keeps them, so accesses until the handover
    stay where they are. Returns the next free event index."""
    n = select(owner, uses, last_use, to_pos, params, out)
    moved = 0
    hops = 0
    for i in range(n):
        p = out[i]
        o = np.int64(owner[p])
        if o < 0 or o == to_pos or sat[o] == sat[to_pos]:  # never created, on the ground, or there already
            continue
        copied_from[p] = o
        moved += 1
        hops += to_pos - o
        if record:
            _put(ev, k, s, p, v0 + o, v0 + to_pos, t, KIND_PUSH)
            k += 1
    cnt[C_TRAIL_HOPS] += hops
    cnt[C_PUSH_MOVES] += moved
    return k


@njit(cache=True)
def _claim(pos, sat, owner, uses, last_use, held, select, params, out, cnt, copied_from, dirty, record,
           ev, k, s, v0, t):
    """Second half, at the handover ``t``: the pages the rule selects now become the
    new visit's. A copy still valid (taken from the page's owner now, not written
    since) is claimed where it is: no movement. The others (written after their
    copy, or first used after it) are moved: one PUSH movement each, logged at
    ``t``. Every copy is forgotten. Returns the next free event index."""
    n = select(owner, uses, last_use, pos, params, out)
    moved = 0
    hops = 0
    ground = 0
    for i in range(n):
        p = out[i]
        o = np.int64(owner[p])
        if o == pos or o == NOWHERE:
            continue
        owner[p] = pos
        held[pos] += 1
        if o >= 0:
            held[o] -= 1
        if o >= 0 and (sat[o] == sat[pos] or (copied_from[p] == o and not dirty[p])):
            continue
        moved += 1
        if o >= 0:
            hops += pos - o
        else:
            ground += 1
        if record:
            _put(ev, k, s, p, v0 + o if o >= 0 else o, v0 + pos, t, KIND_PUSH)
            k += 1
    copied_from[:] = NOWHERE
    dirty[:] = False
    cnt[C_TRAIL_HOPS] += hops
    cnt[C_GROUND] += ground
    cnt[C_PUSH_MOVES] += moved
    return k


@njit(cache=True, parallel=True)
def paper_ondemand_kernel(key, first_session, n_sessions, n_visits, n_accesses, threshold, alias,
                          moves, hops, rows):
    """The paper path specialised to its two strategies (``pager.run_paper``): the
    paper workload drawn on the fly (``paper_pages``' stream) and replayed under
    on-demand only, with none of the bookkeeping that only handover rules read
    (uses, last use). Writes per-session
    on-demand ``moves`` and trail ``hops`` (n_sessions,) and ``rows`` (n_sessions,
    n_visits, n_visits), Table I. Proactive needs no replay of its own: it keeps
    every page on the serving satellite, so an access is a hit or the same creation
    as under on-demand, and handover k moves the ``rows[k - 1].sum()`` pages in
    existence one hop (the caller derives it; the parity tests hold the result to
    the general Trace engine and to the scalar reference, exactly)."""
    n_pages = threshold.size
    for i in prange(n_sessions):
        owner = np.full(n_pages, NOWHERE, np.int16)
        # held[1 + j]: pages held by visit j; held[0] absorbs the never-created pages,
        # so the loop below needs no branch on the access's outcome (a Zipf stream of
        # hits, creations and faults is what a branch predictor cannot learn).
        held = np.zeros(n_visits + 1, np.int64)
        s0, s1 = session_state(key, first_session + i)
        n_moves = 0
        n_hops = 0
        for pos in range(n_visits):
            moved_in = 0
            for _ in range(n_accesses):
                u, s0, s1 = _next(s0, s1)
                p = _draw(u, n_pages, threshold, alias)
                o = np.int64(owner[p])
                owner[p] = pos
                moved = np.int64(o != pos)
                fault = moved & np.int64(o != NOWHERE)  # the page leaves visit o for this one
                moved_in += moved
                held[o + 1] -= moved
                n_moves += fault
                n_hops += fault * (pos - o)
            held[pos + 1] += moved_in
            for j in range(pos + 1):
                rows[i, pos, j] = held[j + 1]
        moves[i] = n_moves
        hops[i] = n_hops


def trace_kernel(n_pages, visit_offsets, visit_satellite, visit_start_ns, access_offsets, access_page,
                 access_time_ns, move_on_fault, create_on_ground, push, lead_ns, select, params,
                 counters, held_at_end, pages_at_visit_end, snapshot_offsets, snapshot_held,
                 snapshots, event_offsets, log_creations, events, record, staged, access_write):
    """Replay a Trace session by session (prange). Counters and per-visit
    outputs always; the snapshot triangle when ``snapshots``; the event log into
    ``events`` (EVENT_DTYPE) from ``event_offsets[s]`` when ``record``. With
    ``staged`` (a push strategy with a lead) the push is the live service's staged
    copy (``_copy_ahead``, ``_claim``); ``access_write`` flags the writes (empty:
    every access writes)."""
    n_sessions = visit_offsets.size - 1
    all_write = access_write.size == 0
    for s in prange(n_sessions):
        v0 = visit_offsets[s]
        nv = visit_offsets[s + 1] - v0
        sat = visit_satellite[v0:v0 + nv]
        owner = np.full(n_pages, NOWHERE, np.int16)
        uses = np.zeros(n_pages, np.int32)
        last_use = np.full(n_pages, -1, np.int16)
        out = np.empty(n_pages, np.int32)
        held = np.zeros(max(nv, 1), np.int64)
        cnt = np.zeros(N_COUNTERS, np.int64)
        # staged copies (``staged`` only): the owner each copy was taken from (NOWHERE:
        # none), and whether the page changed at its owner after the copy
        copied_from = np.full(n_pages if staged else 0, NOWHERE, np.int16)
        dirty = np.zeros(n_pages if staged else 0, np.bool_)
        k = event_offsets[s] if record else 0
        for pos in range(nv):
            g = v0 + pos
            lo, hi = access_offsets[g], access_offsets[g + 1]
            if pos > 0 and staged:
                k = _claim(pos, sat, owner, uses, last_use, held, select, params, out, cnt, copied_from,
                           dirty, record, events, k, s, v0, visit_start_ns[g])
            elif pos > 0:
                t = visit_start_ns[g] - lead_ns if push else visit_start_ns[g]
                k = _handover(pos, sat, owner, uses, last_use, held, select, params, out, cnt, push,
                              record, events, k, s, v0, t)
            if staged and pos + 1 < nv:
                # accesses before the copy, the copy, then the window up to the handover
                tc = max(visit_start_ns[g + 1] - lead_ns, visit_start_ns[g])
                mid = lo + np.searchsorted(access_time_ns[lo:hi], tc, side="left")
                k = _run_visit(access_page, access_time_ns, lo, mid, pos, sat, owner, uses, last_use, held,
                               move_on_fault, create_on_ground, cnt, record, log_creations, events, k, s, v0)
                k = _copy_ahead(pos + 1, sat, owner, uses, last_use, select, params, out, cnt, copied_from,
                                record, events, k, s, v0, tc)
                for a in range(mid, hi):
                    p = access_page[a]
                    if copied_from[p] != NOWHERE and (all_write or access_write[a]):
                        dirty[p] = True
                lo = mid
            k = _run_visit(access_page, access_time_ns, lo, hi,
                           pos, sat, owner, uses, last_use, held, move_on_fault, create_on_ground,
                           cnt, record, log_creations, events, k, s, v0)
            pages_at_visit_end[g] = cnt[C_CREATED] + cnt[C_CREATED_GROUND]
            if snapshots:
                b = snapshot_offsets[g]
                for j in range(pos + 1):
                    snapshot_held[b + j] = held[j]
        for pos in range(nv):
            held_at_end[v0 + pos] = held[pos]
        for c in range(N_COUNTERS):
            counters[s, c] = cnt[c]


@functools.cache
def typed_trace_kernel():
    """``trace_kernel`` compiled for a first-class ``select``."""
    i64, i32 = types.int64[::1], types.int32[::1]
    return njit(
        types.void(types.int64, i64, i32, i64, i64, i32, i64, types.boolean, types.boolean,
                   types.boolean, types.int64, _SELECT_T, i64, types.int64[:, ::1], i32, i32,
                   i64, i32, types.boolean, i64, types.boolean, _EVENT_T[::1], types.boolean,
                   types.boolean, types.boolean[::1]),
        cache=True, parallel=True,
    )(trace_kernel)
