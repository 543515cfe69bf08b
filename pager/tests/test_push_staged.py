"""The staged push-ahead (``PushAhead(staged=True)``: copy ``lead_ns`` ahead, claim at
the handover, docs/live.md) against a plain loop written from that description, and
by hand on a trace small enough to count on paper."""

from __future__ import annotations

import numpy as np
import pytest

import pager
from pager.strategies import PushAhead

NOWHERE = -1


class _PlainSession:
    """One session's page table, in dicts."""

    def __init__(self, recent: int, sats: list[int]):
        self.recent = recent
        self.sats = sats  # serving satellite per visit: the table names satellites
        self.owner: dict[int, int] = {}
        self.last: dict[int, int] = {}
        self.copied: dict[int, int] = {}
        self.dirty: set[int] = set()
        self.moves: list[tuple] = []
        self.c = {"push": 0, "hops": 0, "fault": 0, "hits": 0, "created": 0}

    def selected(self, new_pos: int) -> list[int]:
        return sorted(p for p, lv in self.last.items() if new_pos - self.recent <= lv < new_pos)

    def held_by(self, p: int, pos: int) -> bool:
        """Whether the satellite of visit pos holds page p (an earlier visit of it too)."""
        return p in self.owner and self.sats[self.owner[p]] == self.sats[pos]

    def access(self, p: int, pos: int, t: int) -> None:
        self.last[p] = pos
        if self.held_by(p, pos):
            self.owner[p] = pos
            self.c["hits"] += 1
        elif p not in self.owner:
            self.owner[p] = pos
            self.c["created"] += 1
        else:
            self.moves.append((p, self.owner[p], pos, t))
            self.c["fault"] += 1
            self.c["hops"] += pos - self.owner[p]
            self.owner[p] = pos

    def copy_ahead(self, to_pos: int, t: int) -> None:
        for q in self.selected(to_pos):
            if self.held_by(q, to_pos):
                continue
            self.copied[q] = self.owner[q]
            self.moves.append((q, self.owner[q], to_pos, t))
            self.c["push"] += 1
            self.c["hops"] += to_pos - self.owner[q]

    def claim(self, pos: int, t: int) -> None:
        for p in self.selected(pos):
            o = self.owner[p]
            if o == pos:
                continue
            here = self.held_by(p, pos)
            self.owner[p] = pos
            if here or (self.copied.get(p) == o and p not in self.dirty):
                continue
            self.moves.append((p, o, pos, t))
            self.c["push"] += 1
            self.c["hops"] += pos - o
        self.copied, self.dirty = {}, set()


def plain_staged(trace: pager.Trace, recent: int, lead_ns: int) -> list[tuple]:
    """Per session: the movements (page, from visit, to visit, time) and the counters
    (push moves, trail hops, fault moves, hits, created), one Python loop per access."""
    write = trace.access_write if trace.access_write is not None else np.ones(trace.n_accesses, bool)
    out = []
    for s in range(trace.n_sessions):
        v0, v1 = int(trace.visit_offsets[s]), int(trace.visit_offsets[s + 1])
        ss = _PlainSession(recent, trace.visit_satellite[v0:v1].tolist())
        for pos in range(v1 - v0):
            g = v0 + pos
            start = int(trace.visit_start_ns[g])
            if pos > 0:
                ss.claim(pos, start)
            tc = max(int(trace.visit_start_ns[g + 1]) - lead_ns, start) if g + 1 < v1 else None
            done = False
            for a in range(int(trace.access_offsets[g]), int(trace.access_offsets[g + 1])):
                t = int(trace.access_time_ns[a])
                p = int(trace.access_page[a])
                if tc is not None and not done and t >= tc:
                    done = True
                    ss.copy_ahead(pos + 1, tc)
                if done and p in ss.copied and write[a]:
                    ss.dirty.add(p)
                ss.access(p, pos, t)
            if tc is not None and not done:
                ss.copy_ahead(pos + 1, tc)
        out.append((sorted(ss.moves), ss.c))
    return out


def random_trace(rng, n_sessions=60, n_pages=20, write_fraction=0.3):
    vo, sats, starts, ao, pages, times, writes = [0], [], [], [0], [], [], []
    for _ in range(n_sessions):
        nv = int(rng.integers(0, 7))
        t = int(rng.integers(0, 10_000))
        for k in range(nv):
            # few satellites, so that sessions come back to one; never twice in a row
            sats.append(int(rng.integers(0, 6)) if k == 0 else (sats[-1] + int(rng.integers(1, 6))) % 6)
            starts.append(t)
            length = int(rng.integers(1, 3000))  # some visits shorter than the lead
            na = int(rng.integers(0, 40))
            q = pager.zipf_probabilities(n_pages, 0.9)
            pages.extend(rng.choice(n_pages, size=na, p=q).tolist())
            times.extend(np.sort(rng.integers(t, t + length, size=na)).tolist())
            writes.extend((rng.random(na) < write_fraction).tolist())
            t += length
            ao.append(ao[-1] + na)
        vo.append(vo[-1] + nv)
    return pager.Trace(n_pages=n_pages, visit_offsets=np.array(vo, np.int64),
                       visit_satellite=np.array(sats, np.int32), visit_start_ns=np.array(starts, np.int64),
                       access_offsets=np.array(ao, np.int64), access_page=np.array(pages, np.int32),
                       access_time_ns=np.array(times, np.int64), access_write=np.array(writes, bool))


@pytest.mark.parametrize("recent, lead_ns", [(1, 500), (1, 5000), (2, 800), (1, 1)])
@pytest.mark.parametrize("writes", [True, False])
def test_the_staged_push_equals_a_plain_loop_movement_for_movement(recent, lead_ns, writes):
    tr = random_trace(np.random.default_rng([7, recent, lead_ns]))
    if not writes:  # no write flags: every access counts as a write
        tr = pager.Trace(**{**tr.__dict__, "access_write": None})
    r = pager.replay(tr, PushAhead(recent_visits=recent, lead_ns=lead_ns, staged=True), events=True)
    ev = r.events
    vo = tr.visit_offsets
    for s, (moves, c) in enumerate(plain_staged(tr, recent, lead_ns)):
        mine = ev[ev["session"] == s]
        got = sorted((int(e["page"]), int(e["from_visit"] - vo[s]), int(e["to_visit"] - vo[s]), int(e["time_ns"]))
                     for e in mine)
        assert got == moves, s
        row = r.counters[s]
        assert (int(row["push_moves"]), int(row["trail_hops"]), int(row["fault_moves"]), int(row["hits"]),
                int(row["created"])) == (c["push"], c["hops"], c["fault"], c["hits"], c["created"]), s


def test_a_page_written_after_its_copy_moves_again_and_a_page_read_is_claimed_in_place():
    # one session, two visits; the handover at 100, lead 30: the copy at 70
    tr = pager.Trace(n_pages=4, visit_offsets=np.array([0, 2]), visit_satellite=np.array([5, 6], np.int32),
                     visit_start_ns=np.array([0, 100]), access_offsets=np.array([0, 5, 5]),
                     access_page=np.array([0, 1, 0, 1, 2], np.int32),
                     access_time_ns=np.array([10, 20, 75, 80, 90]),
                     access_write=np.array([True, True, False, True, True]))
    r = pager.replay(tr, PushAhead(lead_ns=30, staged=True), events=True)
    ev = [(int(e["page"]), int(e["time_ns"])) for e in r.events]
    # pages 0 and 1 copied at 70; page 1 written at 80 goes again at 100; page 2 (first
    # used at 90) goes at 100; page 0, only read since its copy, is claimed: no movement
    assert sorted(ev) == [(0, 70), (1, 70), (1, 100), (2, 100)]
    assert int(r.counters[0]["push_moves"]) == 4
    # the unstaged model moves each of the three pages once, whatever the lead
    plain = pager.replay(tr, PushAhead(lead_ns=30), events=True)
    assert int(plain.counters[0]["push_moves"]) == 3
    assert r.held_at_end.tolist() == plain.held_at_end.tolist() == [0, 3]


def test_a_lead_of_zero_is_the_push_at_the_handover_staged_or_not():
    tr = random_trace(np.random.default_rng(11))
    a = pager.replay(tr, PushAhead(lead_ns=0, staged=True), events=True)
    b = pager.replay(tr, PushAhead(lead_ns=0), events=True)
    assert np.array_equal(a.counters, b.counters) and np.array_equal(a.events, b.events)


def test_access_write_must_have_one_flag_per_access():
    tr = random_trace(np.random.default_rng(3), n_sessions=3)
    with pytest.raises(ValueError, match="access_write has shape"):
        pager.Trace(**{**tr.__dict__, "access_write": np.zeros(tr.n_accesses + 1, bool)})
