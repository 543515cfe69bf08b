"""The replay compare runs (pager's engine with pager.make_strategy) against a plain
Python replay written here from the paging rules (docs/paging-model.md,
docs/strategies.md): the independent authority for the event log that
satpage.costs prices. Dicts and loops only, no engine code."""

import numpy as np
import pytest

import pager
from pager import GROUND, NOWHERE, EventKind, Trace
from satpage.simulate import replay_strategy

FAULT, HANDOVER, PUSH, REMOTE, CREATE = (int(EventKind.FAULT), int(EventKind.HANDOVER),
                                         int(EventKind.PUSH), int(EventKind.REMOTE),
                                         int(EventKind.CREATE))


def replay(tr, name, hot_k=32, push_recent_visits=1, push_lead_ns=10**10):
    settings = {"hot-k": {"k": hot_k},
                "push-ahead": {"recent_visits": push_recent_visits, "lead_ns": push_lead_ns}}
    st = pager.make_strategy(name, settings.get(name))
    return replay_strategy(tr, st)


def reference_replay(tr, name, hot_k, recent, lead_ns):
    """(events as a list of (session, page, from_visit, to_visit, time_ns, kind),
    held_at_end per visit) from one dict page table per session. The table names
    satellites: a page left by an earlier visit of the satellite serving now is there."""
    events = []
    held = [0] * tr.n_visits
    sat = tr.visit_satellite.tolist()
    for s in range(tr.n_sessions):
        owner, uses, last = {}, {}, {}
        v0, v1 = int(tr.visit_offsets[s]), int(tr.visit_offsets[s + 1])

        def move(p, v, t, kind, s=s, owner=owner):
            held[owner[p]] -= 1
            held[v] += 1
            if sat[owner[p]] != sat[v]:
                events.append((s, p, owner[p], v, t, kind))
            owner[p] = v

        for v in range(v0, v1):
            t0 = int(tr.visit_start_ns[v])
            if v > v0:
                if name == "proactive":
                    chosen, kind, t = sorted(owner), HANDOVER, t0
                elif name == "hot-k":
                    used = sorted((p for p in uses if uses[p] > 0), key=lambda p: (-uses[p], p))
                    chosen, kind, t = used[:hot_k], HANDOVER, t0
                elif name == "push-ahead":
                    chosen = sorted(p for p in last if v - recent <= last[p] < v)
                    kind, t = PUSH, t0 - lead_ns
                else:
                    chosen = []
                for p in chosen:
                    if p in owner and owner[p] != v:
                        move(p, v, t, kind)
            for a in range(int(tr.access_offsets[v]), int(tr.access_offsets[v + 1])):
                p, t = int(tr.access_page[a]), int(tr.access_time_ns[a])
                uses[p] = uses.get(p, 0) + 1
                last[p] = v
                if name == "ground-store":
                    events.append((s, p, GROUND, v, t, REMOTE))
                elif p not in owner:
                    owner[p] = v
                    held[v] += 1
                    events.append((s, p, NOWHERE, v, t, CREATE))
                elif owner[p] != v:
                    move(p, v, t, FAULT)  # a hit when the satellite holds it from before
    return events, held


def random_trace(seed=0, n_sessions=40, n_pages=60, zipf_s=1.0):
    rng = np.random.default_rng(seed)
    nv = rng.integers(1, 7, n_sessions)
    vo = np.concatenate([[0], np.cumsum(nv)])
    v = int(vo[-1])
    sat = (np.cumsum(rng.integers(1, 20, v)) % 20).astype(np.int32)  # never twice in a row
    start = np.concatenate([s * 10**13 + np.arange(k) * 10**11 for s, k in enumerate(nv)])
    na = rng.integers(0, 80, v)
    ao = np.concatenate([[0], np.cumsum(na)])
    q = np.arange(1, n_pages + 1, dtype=float) ** -zipf_s
    page = rng.choice(n_pages, size=int(ao[-1]), p=q / q.sum()).astype(np.int32)
    visit_of = np.repeat(np.arange(v), na)
    t = start[visit_of] + np.sort(rng.integers(0, 10**11, ao[-1]))
    t = np.concatenate([np.sort(t[ao[i]:ao[i + 1]]) for i in range(v)]) if v else t
    return Trace(n_pages, vo, sat, start.astype(np.int64), ao, page, t.astype(np.int64))


@pytest.mark.parametrize("name", pager.STRATEGY_NAMES[:5])   # the paging five; the rest: pager/tests
@pytest.mark.parametrize("seed", [0, 1])
def test_compares_replay_writes_the_event_log_of_a_plain_python_page_table(name, seed):
    tr = random_trace(seed)
    got = replay(tr, name, hot_k=5, push_recent_visits=1, push_lead_ns=10**9)
    events, held = reference_replay(tr, name, 5, 1, 10**9)
    want = np.array(events, dtype=got.events.dtype) if events else got.events[:0]
    assert got.events.size == want.size
    for col in got.events.dtype.names:
        np.testing.assert_array_equal(got.events[col], want[col], err_msg=col)
    np.testing.assert_array_equal(got.held_at_end, held)


def scalar_counts(tr, name, k=5):
    """A plain Python page table per session (docs/paging-model.md), counts only; it
    names the satellite that holds each page."""
    moves = {"fault": 0, "handover": 0, "remote": 0}
    sat = tr.visit_satellite.tolist()
    for s in range(tr.n_sessions):
        owner, uses = {}, {}
        for v in range(tr.visit_offsets[s], tr.visit_offsets[s + 1]):
            if v > tr.visit_offsets[s]:
                if name == "proactive":
                    chosen = list(owner)
                elif name == "hot-k":
                    chosen = sorted(uses, key=lambda p: (-uses[p], p))[:k]
                else:
                    chosen = []
                for p in chosen:
                    if owner.get(p, v) != v:
                        moves["handover"] += sat[owner[p]] != sat[v]
                        owner[p] = v
            for a in range(tr.access_offsets[v], tr.access_offsets[v + 1]):
                p = int(tr.access_page[a])
                uses[p] = uses.get(p, 0) + 1
                if name == "ground-store":
                    moves["remote"] += 1
                elif p not in owner:
                    owner[p] = v
                elif owner[p] != v:
                    moves["fault"] += sat[owner[p]] != sat[v]
                    owner[p] = v
    return moves


@pytest.mark.parametrize("name", ["proactive", "on-demand", "hot-k", "ground-store"])
def test_the_event_log_counts_match_a_plain_page_table(name):
    tr = random_trace(3)
    ev = replay(tr, name, hot_k=5).events
    want = scalar_counts(tr, name)
    assert int((ev["kind"] == FAULT).sum()) == want["fault"]
    assert int((ev["kind"] == HANDOVER).sum()) == want["handover"]
    assert int((ev["kind"] == REMOTE).sum()) == want["remote"]


def test_creations_are_logged_once_per_page_and_session():
    tr = random_trace(4)
    ev = replay(tr, "on-demand").events
    cr = ev[ev["kind"] == CREATE]
    pairs = {(int(s), int(p)) for s, p in zip(cr["session"], cr["page"], strict=True)}
    sess = np.repeat(np.arange(tr.n_sessions), np.diff(tr.visit_offsets))
    acc_sess = sess[np.repeat(np.arange(tr.n_visits), np.diff(tr.access_offsets))]
    assert len(pairs) == cr.size == len(set(zip(acc_sess.tolist(),
                                                tr.access_page.tolist(), strict=True)))


def test_push_ahead_moves_the_working_set_lead_ns_before_the_handover():
    tr = random_trace(5)
    ev = replay(tr, "push-ahead", push_lead_ns=10**9).events
    push = ev[ev["kind"] == PUSH]
    assert push.size > 0
    np.testing.assert_array_equal(push["time_ns"], tr.visit_start_ns[push["to_visit"]] - 10**9)
    np.testing.assert_array_equal(push["from_visit"], push["to_visit"] - 1)


def test_ground_store_serves_every_access_from_the_ground():
    tr = random_trace(6)
    ev = replay(tr, "ground-store").events
    assert ev.size == tr.n_accesses
    assert np.all(ev["from_visit"] == GROUND) and np.all(ev["kind"] == REMOTE)

