"""Satellite failures applied to a replay: which pages a failure schedule loses, and
the replication traffic that a replication factor R costs (docs/faults.md).

The engine's page table says which trail position (hence which satellite) owns each
page at each moment (the event log of ``pager.replay(..., events=True,
log_creations=True)``). This module takes that ownership history, a
``FailureSchedule`` (satellite, fail time, repair time) and the in-plane rings of
the constellation (``ReplicaRing``) and applies the placement rule shared with the
Go service (services/internal/replica/placement.go):

- a page stored at owner s at time t is held by the first R satellites that are
  up at t in the sequence s, s-1, s-2, ... (slots behind s in its own plane; a dead
  slot is skipped, a dead owner's role goes to the first live one behind it);
  R - 1 copies go to the replicas, each over the in-plane ring distance
  min(j, S - j) hops;
- every write of the page while it stays there goes to each replica as well (a
  write that creates the page travels in the creation's copy, as in the service);
- a failure wipes the satellite's memory; a holder that fails is replaced after
  ``recovery_ns`` (detection + copy) by the next live satellite behind the
  farthest holder, copied from the nearest surviving holder (re-replication);
- a page is *lost* when all its holders are down (failed, not yet replaced) at
  once. A repaired satellite comes back empty and holds only what is stored on it
  afterwards.

The failures do not change the replay: a lost page is counted, and the model goes
on as if it had been created again where it was (its later movements and costs are
those without failures). ``pages_lost`` counts each (session, page) once.

Everything here is vectorised or compiled (Numba); the plain per-event reference
is in sim/tests/test_faults.py.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from pager import _kernels as K
from pager.trace import Trace

__all__ = ["NEVER_NS", "FailureSchedule", "ReplicaRing", "FaultModel", "FaultOutcome",
           "apply_failures", "write_mask"]

#: repair time of a permanent failure
NEVER_NS = np.iinfo(np.int64).max

_NS_PER_DAY = 86_400 * 10**9


@dataclass(frozen=True)
class FailureSchedule:
    """Satellite failures: satellite ``satellite[i]`` is down (its memory gone) from
    ``fail_ns[i]`` until ``repair_ns[i]`` (``NEVER_NS``: for good), scenario time.
    A satellite's failures do not overlap."""

    satellite: np.ndarray  # int32 (f,)
    fail_ns: np.ndarray  # int64 (f,)
    repair_ns: np.ndarray  # int64 (f,)

    def __post_init__(self) -> None:
        s, f, r = (np.asarray(a) for a in (self.satellite, self.fail_ns, self.repair_ns))
        if not (s.shape == f.shape == r.shape) or s.ndim != 1:
            raise ValueError(f"failure arrays must be 1-D of one length, got {s.shape}, "
                             f"{f.shape}, {r.shape}")
        if s.size and s.min() < 0:
            raise ValueError(f"failure of satellite {int(s.min())}: satellites are >= 0")
        if s.size and f.min() < 0:
            raise ValueError(f"failure at {int(f.min())} ns: times are >= 0")
        bad = np.flatnonzero(r <= f)
        if bad.size:
            i = bad[0]
            raise ValueError(f"satellite {int(s[i])} fails at {int(f[i])} ns and is repaired "
                             f"at {int(r[i])} ns: repair must come after the failure")
        order = np.lexsort((f, s))
        so, fo, ro = s[order], f[order], r[order]
        same = so[1:] == so[:-1]
        clash = np.flatnonzero(same & (fo[1:] < ro[:-1]))
        if clash.size:
            i = clash[0]
            raise ValueError(f"satellite {int(so[i])} fails again at {int(fo[i + 1])} ns "
                             f"before its repair at {int(ro[i])} ns")

    @classmethod
    def none(cls) -> FailureSchedule:
        return cls(np.zeros(0, np.int32), np.zeros(0, np.int64), np.zeros(0, np.int64))

    @property
    def n_failures(self) -> int:
        return int(np.asarray(self.satellite).size)

    @classmethod
    def draw(cls, n_sats: int, duration_ns: int, rng: np.random.Generator, *,
             count: int = 0, rate_per_sat_day: float = 0.0,
             repair_after_ns: int = 0) -> FailureSchedule:
        """Seeded random failures over [0, duration_ns).

        - ``count`` > 0: that many distinct satellites, uniformly chosen, each failing
          once at a uniform time;
        - ``rate_per_sat_day`` > 0: each satellite fails as a Poisson process of that
          rate while it is up (after a repair it can fail again).

        ``repair_after_ns`` 0 means permanent failures; otherwise a satellite comes back
        (empty) that long after it failed."""
        if count and rate_per_sat_day:
            raise ValueError(f"give a failure count ({count}) or a rate "
                             f"({rate_per_sat_day}), not both")
        if count < 0 or count > n_sats:
            raise ValueError(f"failure count {count} is outside [0, {n_sats}] satellites")
        if rate_per_sat_day < 0:
            raise ValueError(f"failure rate {rate_per_sat_day} per satellite-day is negative")
        if repair_after_ns < 0:
            raise ValueError(f"repair_after {repair_after_ns} ns is negative")
        if count:
            sat = rng.choice(n_sats, size=count, replace=False).astype(np.int32)
            fail = rng.integers(0, max(duration_ns, 1), size=count, dtype=np.int64)
        elif rate_per_sat_day > 0:
            mean_gap = _NS_PER_DAY / rate_per_sat_day
            sats, fails = [], []
            t = np.zeros(n_sats)
            alive = np.ones(n_sats, bool)
            # one vectorised draw per round of failures (a few rounds: a satellite
            # fails again only after a repair)
            while alive.any():
                t = t + rng.exponential(mean_gap, size=n_sats)
                alive &= t < duration_ns
                idx = np.flatnonzero(alive)
                sats.append(idx)
                fails.append(t[idx].astype(np.int64))
                if not repair_after_ns:
                    break
                t = t + repair_after_ns
            sat = np.concatenate(sats).astype(np.int32) if sats else np.zeros(0, np.int32)
            fail = np.concatenate(fails) if fails else np.zeros(0, np.int64)
        else:
            sat, fail = np.zeros(0, np.int32), np.zeros(0, np.int64)
        repair = (fail + repair_after_ns if repair_after_ns
                  else np.full(fail.size, NEVER_NS, np.int64))
        order = np.lexsort((sat, fail))
        return cls(sat[order], fail[order], repair[order].astype(np.int64))

    def by_satellite(self, n_sats: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """CSR by satellite: offsets (n_sats + 1,), fail and repair times in time order."""
        s = np.asarray(self.satellite, np.int64)
        if s.size and s.max() >= n_sats:
            raise ValueError(f"failure of satellite {int(s.max())}, but there are {n_sats}")
        order = np.lexsort((self.fail_ns, s))
        off = np.zeros(n_sats + 1, np.int64)
        np.cumsum(np.bincount(s, minlength=n_sats), out=off[1:])
        return (off, np.asarray(self.fail_ns, np.int64)[order],
                np.asarray(self.repair_ns, np.int64)[order])


@dataclass(frozen=True)
class ReplicaRing:
    """The in-plane rings the placement rule walks: ``behind[s]`` is the satellite one
    slot behind s in its plane (slot k - 1 mod S), ``slot[s]`` its position and
    ``size[s]`` its plane's S. A satellite outside any plane is a ring of one (it
    gets no replicas)."""

    behind: np.ndarray  # int64 (n,)
    slot: np.ndarray  # int64 (n,)
    size: np.ndarray  # int64 (n,)

    @classmethod
    def from_planes(cls, plane_key: np.ndarray, slot: np.ndarray) -> ReplicaRing:
        """Rings from a plane key per satellite (e.g. shell * 10**6 + plane; -1 = none)
        and the slot within the plane. Slots of a plane are ordered by ``slot``; the
        ring position is the rank."""
        key = np.asarray(plane_key, np.int64)
        sl = np.asarray(slot, np.int64)
        n = key.size
        behind = np.arange(n, dtype=np.int64)
        pos = np.zeros(n, np.int64)
        size = np.ones(n, np.int64)
        placed = np.flatnonzero((key >= 0) & (sl >= 0))
        order = placed[np.lexsort((sl[placed], key[placed]))]
        k = key[order]
        starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
        lengths = np.diff(np.r_[starts, k.size])
        grp_start = np.repeat(starts, lengths)
        rank = np.arange(order.size) - grp_start
        glen = np.repeat(lengths, lengths)
        pos[order] = rank
        size[order] = glen
        behind[order] = order[grp_start + (rank - 1) % glen]
        return cls(behind, pos, size)

    @property
    def n_sats(self) -> int:
        return int(self.behind.size)

    def ring_hops(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """In-plane ISL distance min(d, S - d) between satellites of one ring."""
        d = (self.slot[a] - self.slot[b]) % self.size[a]
        return np.minimum(d, self.size[a] - d)


@dataclass(frozen=True)
class FaultOutcome:
    """What a failure schedule did to one replay, per session (n_sessions,) int64:

    - ``pages_lost``: pages (of the session's object) lost at least once;
    - ``table_lost``: 1 when the session's page table was lost (every holder of the
      serving satellite's table down at once), else 0;
    - ``replica_copies``/``replica_hops``: copies sent to replicas when a page was
      stored at a new owner or written, and their in-plane ISL hops;
    - ``rereplica_copies``/``rereplica_hops``: copies sent to replace a failed holder.
    """

    pages_lost: np.ndarray
    table_lost: np.ndarray
    replica_copies: np.ndarray
    replica_hops: np.ndarray
    rereplica_copies: np.ndarray
    rereplica_hops: np.ndarray

    @property
    def sessions_hit(self) -> int:
        """Sessions that lost at least one page or their page table."""
        return int(np.sum((self.pages_lost > 0) | (self.table_lost > 0)))


def write_mask(trace: Trace, write_share: float) -> np.ndarray:
    """bool (a,): which accesses are writes. The workload does not tell reads from
    writes, so a share ``w`` of each session's accesses, evenly spread, counts as
    writes: the j-th access of a session (0-based) is one when floor((j+1)w) >
    floor(jw). Deterministic (no random stream), so every backend agrees."""
    if not 0.0 <= write_share <= 1.0:
        raise ValueError(f"write_share {write_share} is outside [0, 1]")
    a = trace.n_accesses
    if write_share == 1.0:
        return np.ones(a, bool)
    if write_share == 0.0:
        return np.zeros(a, bool)
    vo = np.asarray(trace.visit_offsets, np.int64)
    ao = np.asarray(trace.access_offsets, np.int64)
    first = ao[vo[:-1]]  # first access of each session
    per = ao[vo[1:]] - first
    j = np.arange(a, dtype=np.int64) - np.repeat(first, per)
    return np.floor((j + 1) * write_share) > np.floor(j * write_share)


# -- compiled core --------------------------------------------------------------------------

@njit(cache=True)
def _down(c, t, foff, ffail, frep):
    """Satellite c is down at t: some failure with fail <= t < repair."""
    for i in range(foff[c], foff[c + 1]):
        if ffail[i] <= t < frep[i]:
            return True
    return False


@njit(cache=True)
def _next_fail(c, t, foff, ffail):
    """The first failure time of satellite c at or after t (NEVER if none)."""
    for i in range(foff[c], foff[c + 1]):
        if ffail[i] >= t:
            return ffail[i]
    return NEVER_NS


@njit(cache=True)
def _hops(a, b, slot, size):
    d = (slot[a] - slot[b]) % size[a]
    return min(d, size[a] - d)


@njit(cache=True)
def _compact(hs, alive, ring, n):
    """Drop dead holders (they carry nothing) when the list is full; the new count."""
    if n < hs.size:
        return n
    m = 0
    for j in range(n):
        if alive[j]:
            hs[m] = hs[j]
            ring[m] = ring[j]
            alive[m] = True
            m += 1
    for j in range(m, hs.size):
        alive[j] = False
        ring[j] = False
    return m


@njit(cache=True)
def _write_copies(hs, alive, ring, n, slot, size):
    """(copies, hops) of one write: from the acting owner (first alive ring holder) to
    every other alive ring holder."""
    src = -1
    copies = 0
    hops = 0
    for j in range(n):
        if alive[j] and ring[j]:
            if src < 0:
                src = j
            else:
                copies += 1
                hops += _hops(hs[src], hs[j], slot, size)
    return copies, hops


@njit(cache=True)
def _interval(sat, extra, t0, t1, r, recovery_ns, behind, slot, size, foff, ffail, frep,
              wtime, wlo, whi, out, hs, alive, ring, pend):
    """One holding interval [t0, t1) of a page stored at ``sat`` (``extra`` >= 0: a
    strategy's own extra holder, replicate-next's next server). Writes at
    ``wtime[wlo:whi]`` (in [t0, t1), time order). Adds to ``out``: [lost, copies, hops,
    recopies, rehops]. Scratch (r + 2,): ``hs`` holder satellites (ring holders first),
    ``alive``, ``ring`` (a ring holder, re-replicated; the extra is not), ``pend``
    replacement times. Events at one instant: writes first, then failures, then
    replacements (so holders failing together are lost together)."""
    cap = hs.size
    alive[:] = False
    ring[:] = False
    pend[:] = NEVER_NS
    n = 0
    c = sat
    tail = sat
    steps = 0
    s_max = size[sat]
    while n < r and steps < s_max:
        if not _down(c, t0, foff, ffail, frep):
            hs[n] = c
            alive[n] = True
            ring[n] = True
            n += 1
        tail = c
        c = behind[c]
        steps += 1
    if extra >= 0 and not _down(extra, t0, foff, ffail, frep):
        dup = False
        for j in range(n):
            if hs[j] == extra:
                dup = True
        if not dup:
            hs[n] = extra
            alive[n] = True
            n += 1
    if n == 0:
        out[0] += 1
        return
    # the store: the acting owner copies to the other ring holders
    k, h = _write_copies(hs, alive, ring, n, slot, size)
    out[1] += k
    out[2] += h
    w = wlo
    t = t0
    while True:
        tf = NEVER_NS
        jf = -1
        for j in range(n):
            if alive[j]:
                x = _next_fail(hs[j], t, foff, ffail)
                if x < tf:
                    tf = x
                    jf = j
        pend_t = NEVER_NS
        jp = -1
        for j in range(cap):
            if pend[j] < pend_t:
                pend_t = pend[j]
                jp = j
        te = min(tf, pend_t)
        # the writes before the next event (at it too: writes go first), as one batch
        if te >= t1:
            w_end = whi
        else:
            w_end = w + np.searchsorted(wtime[w:whi], te, side="right")
        if w_end > w:
            k, h = _write_copies(hs, alive, ring, n, slot, size)
            out[1] += k * (w_end - w)
            out[2] += h * (w_end - w)
            w = w_end
        if te >= t1:
            return
        t = te
        if pend_t < tf:
            # a replacement: the next live satellite behind the tail that holds nothing
            pend[jp] = NEVER_NS
            c = behind[tail]
            steps = 0
            chosen = -1
            while steps < s_max:
                taken = False
                for j in range(n):
                    if alive[j] and hs[j] == c:
                        taken = True
                if not taken and not _down(c, t, foff, ffail, frep):
                    chosen = c
                    break
                c = behind[c]
                steps += 1
            best = 1 << 62
            for j in range(n):
                if alive[j] and ring[j]:
                    best = min(best, _hops(hs[j], chosen if chosen >= 0 else hs[j], slot, size))
            if chosen >= 0 and best < (1 << 62):
                n = _compact(hs, alive, ring, n)
                hs[n] = chosen
                alive[n] = True
                ring[n] = True
                n += 1
                tail = chosen
                out[3] += 1
                out[4] += best
            continue
        # a failure of holder jf: its memory is gone
        alive[jf] = False
        left = 0
        for j in range(n):
            if alive[j]:
                left += 1
        if left == 0:
            out[0] += 1
            return
        if ring[jf] and r >= 2:
            for j in range(cap):
                if pend[j] == NEVER_NS:
                    pend[j] = tf + recovery_ns
                    break


@njit(cache=True, parallel=True)
def _apply_kernel(isat, iextra, it0, it1, r, recovery_ns, behind, slot, size, foff, ffail,
                  frep, wtime, wlo, whi, out):
    m = isat.size
    blocks = 64
    for b in prange(blocks):
        cap = r + 2
        hs = np.empty(cap, np.int64)
        alive = np.zeros(cap, np.bool_)
        ring = np.zeros(cap, np.bool_)
        pend = np.empty(cap, np.int64)
        for i in range(b * m // blocks, (b + 1) * m // blocks):
            _interval(isat[i], iextra[i], it0[i], it1[i], r, recovery_ns, behind, slot, size,
                      foff, ffail, frep, wtime, wlo[i], whi[i], out[i], hs, alive, ring, pend)


@njit(cache=True)
def _intervals_kernel(grp, eto, etime, vsat, sess_end, n_pages, order,
                      isat, ivisit, it0, it1, igrp):
    """Holding intervals from ownership events in ``order`` (by session, page, log
    order): an event starts an interval at its satellite unless that satellite already
    holds the page (a return to the same satellite moves nothing); the interval ends
    at the next interval's start or at the session end. Start times never go back
    (a push is logged before the old visit's last accesses). Returns the count."""
    m = 0
    prev_grp = -1
    for q in range(order.size):
        e = order[q]
        g = grp[e]
        s = vsat[eto[e]]
        t = etime[e]
        if g == prev_grp:
            if t < it0[m - 1]:
                t = it0[m - 1]
            if s == isat[m - 1]:
                ivisit[m - 1] = eto[e]
                continue
            it1[m - 1] = t
        isat[m] = s
        ivisit[m] = eto[e]
        it0[m] = t
        it1[m] = sess_end[g // n_pages]
        igrp[m] = g
        m += 1
        prev_grp = g
    return m


@njit(cache=True)
def _write_ranges(igrp, it0, wgrp, wtime, wlo, whi):
    """For intervals by (group, start) and writes by (group, time): the writes of each
    interval's group in [start, next start)."""
    w = 0
    nw = wgrp.size
    for i in range(igrp.size):
        g = igrp[i]
        while w < nw and (wgrp[w] < g or (wgrp[w] == g and wtime[w] < it0[i])):
            w += 1
        wlo[i] = w
        last = i + 1 >= igrp.size or igrp[i + 1] != g
        hi = w
        while hi < nw and wgrp[hi] == g and (last or wtime[hi] < it0[i + 1]):
            hi += 1
        whi[i] = hi
        w = hi


@njit(cache=True)
def _group_order(keys, n_groups, sel):
    """Stable counting sort of the rows ``sel`` by ``keys`` (dense in [0, n_groups))."""
    count = np.zeros(n_groups + 1, np.int64)
    for q in range(sel.size):
        count[keys[sel[q]] + 1] += 1
    for g in range(n_groups):
        count[g + 1] += count[g]
    out = np.empty(sel.size, np.int64)
    for q in range(sel.size):
        k = keys[sel[q]]
        out[count[k]] = sel[q]
        count[k] += 1
    return out


_OWNERSHIP = np.array([K.KIND_CREATE, K.KIND_FAULT, K.KIND_HANDOVER, K.KIND_PUSH], np.int8)


class FaultModel:
    """A failure schedule and a replication factor over one Trace (a chunk): what
    every strategy shares (the writes grouped by page, the page tables' fate) is
    computed once; ``apply(events)`` gives each strategy's ``FaultOutcome``.

    ``replicas``: R (1 = the owner only). ``session_end_ns`` (n_sessions,): when each
    session's pages are released. ``writes`` bool (a,): which accesses are writes
    (``write_mask``; None: none). ``recovery_ns``: from a holder's failure until its
    replacement holds a copy. Visit satellites must be indices into ``ring``."""

    def __init__(self, trace: Trace, schedule: FailureSchedule, ring: ReplicaRing,
                 replicas: int, session_end_ns: np.ndarray, *, recovery_ns: int = 0,
                 writes: np.ndarray | None = None) -> None:
        if replicas < 1:
            raise ValueError(f"replicas must be at least 1, got {replicas}")
        if recovery_ns < 0:
            raise ValueError(f"recovery time {recovery_ns} ns is negative")
        self.trace = trace
        self.ring = ring
        self.replicas = int(replicas)
        self.recovery_ns = int(recovery_ns)
        n = trace.n_sessions
        vsat = np.asarray(trace.visit_satellite, np.int64)
        if vsat.size and (vsat.min() < 0 or vsat.max() >= ring.n_sats):
            raise ValueError(f"visit satellites span [{vsat.min()}, {vsat.max()}], outside "
                             f"the {ring.n_sats} satellites of the ring")
        self.vsat = vsat
        self.fail_csr = schedule.by_satellite(ring.n_sats)
        self.sess_end = np.asarray(session_end_ns, np.int64)
        if self.sess_end.shape != (n,):
            raise ValueError(f"session_end_ns has shape {self.sess_end.shape}, want ({n},)")
        vo = np.asarray(trace.visit_offsets, np.int64)
        nv = np.diff(vo)
        self.vo = vo
        self.vsess = np.repeat(np.arange(n, dtype=np.int64), nv)
        self.n_groups = n * int(trace.n_pages)
        # writes by (session, page), in time order within a page (a session's accesses
        # are in time order in the Trace, and the sort is stable)
        if writes is not None and np.any(writes):
            if writes.shape != (trace.n_accesses,):
                raise ValueError(f"writes has shape {writes.shape}, "
                                 f"want ({trace.n_accesses},)")
            a_sess = self.vsess[trace.access_visit()]
            grp = a_sess * int(trace.n_pages) + np.asarray(trace.access_page, np.int64)
            wo = _group_order(grp, self.n_groups, np.flatnonzero(writes).astype(np.int64))
            self.wgrp = grp[wo]
            self.wtime = np.asarray(trace.access_time_ns, np.int64)[wo]
            # pages whose first access (the one that creates them) is a write: that
            # write travels in the creation's copy (sorted group ids)
            ug, first = np.unique(grp, return_index=True)
            self.created_by_write = ug[writes[first]]
        else:
            self.wgrp = np.zeros(0, np.int64)
            self.wtime = np.zeros(0, np.int64)
            self.created_by_write = np.zeros(0, np.int64)
        # the page table: held by each visit's satellite from its start to the next
        # visit's start (the last: to the session end); the same for every strategy
        t0 = np.asarray(trace.visit_start_ns, np.int64)
        last = np.zeros(vsat.size, bool)
        if vsat.size:
            last[vo[1:][nv > 0] - 1] = True
        nxt = np.r_[t0[1:], 0] if t0.size else t0
        t1 = np.maximum(np.where(last, self.sess_end[self.vsess], nxt), t0)
        tout = self._run(vsat, np.full(vsat.size, -1, np.int64), t0, t1,
                         np.zeros(vsat.size, np.int64), np.zeros(vsat.size, np.int64),
                         np.zeros(0, np.int64))
        self.table_lost = (np.bincount(self.vsess, weights=tout[:, 0], minlength=n) > 0
                           ).astype(np.int64)

    def _clean_tables(self) -> None:
        """What the fast path needs: each satellite's first R ring slots, the first failure
        and last repair of each satellite, and the copies and hops of one store when
        none of its holders is touched by a failure."""
        ring, r = self.ring, self.replicas
        n_sats = ring.n_sats
        slots = np.empty((n_sats, r), np.int64)
        c = np.arange(n_sats, dtype=np.int64)
        for j in range(r):
            slots[:, j] = c
            c = ring.behind[c]
        self._slots = slots
        foff, ffail, frep = self.fail_csr
        has = np.diff(foff) > 0
        first = np.full(n_sats, NEVER_NS, np.int64)
        last = np.full(n_sats, -1, np.int64)
        first[has] = ffail[foff[:-1][has]]
        np.maximum.at(last, np.repeat(np.arange(n_sats), np.diff(foff)), frep)
        self._first_fail, self._last_repair = first, last
        k = np.minimum(r, ring.size) - 1  # replicas a plane of S can give
        j = np.arange(1, max(r, 1))
        hop_j = np.minimum(j[None, :], ring.size[:, None] - j[None, :])
        self._store_copies = k
        self._store_hops = np.where(j[None, :] <= k[:, None], hop_j, 0).sum(axis=1)

    def _untouched(self, sat: np.ndarray, t0: np.ndarray, t1: np.ndarray) -> np.ndarray:
        """bool: ``sat`` is up over [t0, t1) and stays up (no failure of it overlaps)."""
        return (t1 <= self._first_fail[sat]) | (t0 >= self._last_repair[sat])

    def _run(self, isat, iextra, it0, it1, wlo, whi, wtime) -> np.ndarray:
        """[lost, copies, hops, recopies, rehops] of each interval. Intervals whose
        holders no failure touches take the closed form (copies = (1 + writes) x (R-1)
        at fixed ring hops); the rest go through the compiled event walk."""
        out = np.zeros((isat.size, 5), np.int64)
        if not isat.size:
            return out
        if not hasattr(self, "_slots"):
            self._clean_tables()
        clean = np.ones(isat.size, bool)
        for j in range(self.replicas):
            clean &= self._untouched(self._slots[isat, j], it0, it1)
        has_extra = iextra >= 0
        clean[has_extra] &= self._untouched(iextra[has_extra], it0[has_extra],
                                            it1[has_extra])
        mult = 1 + (whi - wlo)
        out[:, 1] = np.where(clean, mult * self._store_copies[isat], 0)
        out[:, 2] = np.where(clean, mult * self._store_hops[isat], 0)
        d = np.flatnonzero(~clean)
        if d.size:
            foff, ffail, frep = self.fail_csr
            sub = np.zeros((d.size, 5), np.int64)
            _apply_kernel(isat[d], iextra[d], it0[d], it1[d], np.int64(self.replicas),
                          np.int64(self.recovery_ns), self.ring.behind, self.ring.slot,
                          self.ring.size, foff, ffail, frep, wtime, wlo[d], whi[d], sub)
            out[d] = sub
        return out

    def apply(self, events: np.ndarray, next_server_holds: bool = False) -> FaultOutcome:
        """The schedule applied to the ownership history in ``events`` (EVENT_DTYPE, from
        ``pager.replay(trace, strategy, events=True, log_creations=True)``; a rewritten
        log such as ``replicate_next_log``'s is fine: REPLICA and REMOTE events own
        nothing). ``next_server_holds``: the strategy keeps a copy of every page on the
        next serving satellite (replicate-next), an extra holder that is not
        re-replicated."""
        tr = self.trace
        n = tr.n_sessions
        n_pages = int(tr.n_pages)
        ev = np.asarray(events)
        eto = ev["to_visit"].astype(np.int64)
        owns = np.zeros(256, bool)
        owns[_OWNERSHIP] = True
        sel = np.flatnonzero(owns[ev["kind"].view(np.uint8)] & (eto >= 0))
        grp = ev["session"].astype(np.int64) * n_pages + ev["page"]
        order = _group_order(grp, self.n_groups, sel)
        m_cap = order.size
        isat = np.empty(m_cap, np.int64)
        ivisit = np.empty(m_cap, np.int64)
        it0 = np.empty(m_cap, np.int64)
        it1 = np.empty(m_cap, np.int64)
        igrp = np.empty(m_cap, np.int64)
        m = _intervals_kernel(grp, eto, ev["time_ns"].astype(np.int64), self.vsat,
                              self.sess_end, np.int64(n_pages), order, isat, ivisit, it0,
                              it1, igrp)
        isat, ivisit, it0, it1, igrp = (a[:m] for a in (isat, ivisit, it0, it1, igrp))
        wlo = np.zeros(m, np.int64)
        whi = np.zeros(m, np.int64)
        wgrp, wtime = self.wgrp, self.wtime
        if self.created_by_write.size and m:
            # A write that creates its page is stored (and copied) with the creation, as
            # the service does (one AdoptFrames carrying the written frame): it is no
            # second copy. The group's first write is that access when its first
            # ownership event is a creation.
            g_sorted = grp[order]
            first_ev = order[np.r_[True, g_sorted[1:] != g_sorted[:-1]]]
            g_first = grp[first_ev]
            by_create = g_first[ev["kind"][first_ev] == K.KIND_CREATE]
            drop_g = by_create[np.isin(by_create, self.created_by_write, assume_unique=True)]
            keep = np.ones(wgrp.size, bool)
            keep[np.searchsorted(wgrp, drop_g)] = False
            wgrp, wtime = wgrp[keep], wtime[keep]
        if wgrp.size and m:
            _write_ranges(igrp, it0, wgrp, wtime, wlo, whi)
        iextra = np.full(m, -1, np.int64)
        if next_server_holds and m:
            last = ivisit == self.vo[1:][self.vsess[ivisit]] - 1
            iextra = np.where(last, -1, self.vsat[np.where(last, 0, ivisit + 1)])
        out = self._run(isat, iextra, it0, it1, wlo, whi, wtime)
        isess = igrp // n_pages  # non-decreasing: intervals are by (session, page)
        lost_grp = np.unique(igrp[out[:, 0] > 0])
        pages_lost = np.bincount(lost_grp // n_pages, minlength=n).astype(np.int64)
        bounds = np.searchsorted(isess, np.arange(n + 1))
        cum = np.zeros((m + 1, 5), np.int64)
        np.cumsum(out, axis=0, out=cum[1:])
        sums = cum[bounds[1:]] - cum[bounds[:-1]]

        def per_session(col: int) -> np.ndarray:
            return np.ascontiguousarray(sums[:, col])

        return FaultOutcome(pages_lost=pages_lost, table_lost=self.table_lost,
                            replica_copies=per_session(1), replica_hops=per_session(2),
                            rereplica_copies=per_session(3), rereplica_hops=per_session(4))


def apply_failures(trace: Trace, events: np.ndarray, schedule: FailureSchedule,
                   ring: ReplicaRing, replicas: int, session_end_ns: np.ndarray, *,
                   recovery_ns: int = 0, writes: np.ndarray | None = None,
                   next_server_holds: bool = False) -> FaultOutcome:
    """One strategy's ``FaultModel(...).apply(events, next_server_holds)``."""
    return FaultModel(trace, schedule, ring, replicas, session_end_ns,
                      recovery_ns=recovery_ns, writes=writes).apply(events, next_server_holds)
