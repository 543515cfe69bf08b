import numpy as np
import pytest

from pager import Trace
from satpage.replay import (
    CREATE,
    FAULT,
    GROUND,
    HANDOVER,
    PUSH,
    REMOTE,
    replay,
    replay_builtin,
)
from satpage.scenario import STRATEGY_NAMES


def random_trace(seed=0, n_sessions=40, n_pages=60, zipf_s=1.0):
    rng = np.random.default_rng(seed)
    nv = rng.integers(1, 7, n_sessions)
    vo = np.concatenate([[0], np.cumsum(nv)])
    v = int(vo[-1])
    sat = rng.integers(0, 20, v).astype(np.int32)
    start = np.concatenate([s * 10**13 + np.arange(k) * 10**11 for s, k in enumerate(nv)])
    na = rng.integers(0, 80, v)
    ao = np.concatenate([[0], np.cumsum(na)])
    q = np.arange(1, n_pages + 1, dtype=float) ** -zipf_s
    page = rng.choice(n_pages, size=int(ao[-1]), p=q / q.sum()).astype(np.int32)
    visit_of = np.repeat(np.arange(v), na)
    t = start[visit_of] + np.sort(rng.integers(0, 10**11, ao[-1]))
    t = np.concatenate([np.sort(t[ao[i]:ao[i + 1]]) for i in range(v)]) if v else t
    return Trace(n_pages, vo, sat, start.astype(np.int64), ao, page, t.astype(np.int64))


@pytest.mark.parametrize("name", STRATEGY_NAMES)
@pytest.mark.parametrize("seed", [0, 1])
def test_pagers_engine_and_satpages_own_replay_write_the_same_event_log(name, seed):
    tr = random_trace(seed)
    a = replay(tr, name, hot_k=5, push_recent_visits=1, push_lead_ns=10**9)
    b = replay_builtin(tr, name, hot_k=5, push_recent_visits=1, push_lead_ns=10**9)
    assert a.events.size == b.events.size
    for col in a.events.dtype.names:
        np.testing.assert_array_equal(a.events[col], b.events[col], err_msg=col)
    np.testing.assert_array_equal(a.held_at_end, b.held_at_end)


def scalar_counts(tr, name, k=5):
    """A plain Python page table per session (DESIGN.md section 1)."""
    moves = {"fault": 0, "handover": 0, "remote": 0}
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
                        owner[p] = v
                        moves["handover"] += 1
            for a in range(tr.access_offsets[v], tr.access_offsets[v + 1]):
                p = int(tr.access_page[a])
                uses[p] = uses.get(p, 0) + 1
                if name == "ground-store":
                    moves["remote"] += 1
                elif p not in owner:
                    owner[p] = v
                elif owner[p] != v:
                    owner[p] = v
                    moves["fault"] += 1
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

