import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, ClassVar

import numba
import numpy as np
import pytest

import pager
from pager import EventKind

ROOT = Path(__file__).resolve().parents[2]
#: the paper's numbers as the package ships them (pager/data/, read by satpage paper)
TABLE1 = resources.files("pager") / "data" / "fongen-2023-table1.json"


# --- strategies written as new classes, the way other components add theirs ---------

@pager.handover_rule
def _most_used(owner, uses, last_use, new_pos, params, out):
    order = np.argsort(-uses.astype(np.int64), kind="mergesort")
    n = 0
    for p in order[: params[0]]:
        if uses[p] > 0:
            out[n] = p
            n += 1
    return n


@pager.handover_rule
def _used_visits_back(owner, uses, last_use, new_pos, params, out):
    """The pages last used ``params[0]`` visits before the one that starts."""
    n = 0
    for p in range(owner.size):
        if last_use[p] == new_pos - params[0]:
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
    select: ClassVar[Any] = _most_used

    def params(self):
        return np.array([self.k], dtype=np.int64)


@dataclass(frozen=True)
class PushWorkingSet:
    lead_ns: int = 500
    back: int = 1
    name: ClassVar[str] = "push"
    move_on_fault: ClassVar[bool] = True
    create_on_ground: ClassVar[bool] = False
    handover_kind: ClassVar[EventKind] = EventKind.PUSH
    select: ClassVar[Any] = _used_visits_back

    def params(self):
        return np.array([self.back], dtype=np.int64)


@dataclass(frozen=True)
class PushTwoBack(PushWorkingSet):
    """Selects pages left two visits back: at a session's return to that satellite
    (A, B, A) they are there already, and the handover moves nothing."""

    back: int = 2
    name: ClassVar[str] = "push-two-back"


@dataclass(frozen=True)
class GroundStore:
    name: ClassVar[str] = "ground-store"
    move_on_fault: ClassVar[bool] = False
    create_on_ground: ClassVar[bool] = True
    handover_kind: ClassVar[EventKind] = EventKind.HANDOVER
    lead_ns: ClassVar[int] = 0
    select: ClassVar[Any] = pager.select_none

    def params(self):
        return np.zeros(0, dtype=np.int64)


@dataclass(frozen=True)
class RemoteOnly:
    name: ClassVar[str] = "remote"
    move_on_fault: ClassVar[bool] = False
    create_on_ground: ClassVar[bool] = False
    handover_kind: ClassVar[EventKind] = EventKind.HANDOVER
    lead_ns: ClassVar[int] = 0
    select: ClassVar[Any] = pager.select_none

    def params(self):
        return np.zeros(0, dtype=np.int64)


def _scalar_rule(strategy):
    """The same handover rules in plain Python, for the scalar reference."""
    if isinstance(strategy, pager.Proactive):
        return lambda owner, uses, last, pos: [p for p, o in enumerate(owner) if o >= 0]
    if isinstance(strategy, HotK):
        def most_used(owner, uses, last, pos):
            order = sorted(range(len(uses)), key=lambda p: (-uses[p], p))[: strategy.k]
            return [p for p in order if uses[p] > 0]
        return most_used
    if isinstance(strategy, PushWorkingSet):
        return lambda owner, uses, last, pos: [p for p in range(len(owner)) if last[p] == pos - strategy.back]
    return None


STRATEGIES = [pager.OnDemand(), pager.Proactive(), HotK(k=4), PushWorkingSet(), PushTwoBack(),
              GroundStore(), RemoteOnly()]


def random_trace(rng, n_sessions=40, n_pages=25):
    vo, sats, starts, ao, pages, times = [0], [], [], [0], [], []
    for _ in range(n_sessions):
        nv = int(rng.integers(0, 7))  # sessions with no visit too
        t = int(rng.integers(0, 10_000))
        for k in range(nv):
            # few satellites, so that sessions come back to one (as an orbit on, at high
            # latitude); never the same one twice in a row (one stay is one visit)
            sats.append(int(rng.integers(0, 6)) if k == 0 else (sats[-1] + int(rng.integers(1, 6))) % 6)
            starts.append(t)
            na = int(rng.integers(0, 40))  # and visits with no access
            q = pager.zipf_probabilities(n_pages, 0.9)
            pages.extend(rng.choice(n_pages, size=na, p=q).tolist())
            times.extend((t + 1 + np.arange(na) * 7).tolist())
            t += 1000
            ao.append(ao[-1] + na)
        vo.append(vo[-1] + nv)
    return pager.Trace(
        n_pages=n_pages,
        visit_offsets=np.array(vo, dtype=np.int64),
        visit_satellite=np.array(sats, dtype=np.int32),
        visit_start_ns=np.array(starts, dtype=np.int64),
        access_offsets=np.array(ao, dtype=np.int64),
        access_page=np.array(pages, dtype=np.int32),
        access_time_ns=np.array(times, dtype=np.int64),
    )


@pytest.fixture(scope="module")
def trace():
    return random_trace(np.random.default_rng(2024))


@pytest.mark.parametrize("strategy", STRATEGIES, ids=lambda s: s.name)
def test_the_engine_matches_the_scalar_reference_on_every_output(trace, strategy, ref):
    got = pager.replay(trace, strategy, events=True, log_creations=True, snapshots=True)
    sessions = ref.trace_sessions(trace)
    sats = ref.trace_satellites(trace)
    vo = trace.visit_offsets
    want_events = []
    for s, visits in enumerate(sessions):
        res = ref.replay_session(
            trace.n_pages, visits, sats=sats[s], move_on_fault=strategy.move_on_fault,
            create_on_ground=strategy.create_on_ground, select=_scalar_rule(strategy),
            push=strategy.handover_kind == EventKind.PUSH, lead_ns=strategy.lead_ns,
            log_creations=True)
        assert {k: int(got.counters[k][s]) for k in ref.COUNTERS} == res.counters, s
        v0, v1 = vo[s], vo[s + 1]
        assert got.held_at_end[v0:v1].tolist() == res.held_at_end
        assert got.pages_at_visit_end[v0:v1].tolist() == res.pages_at_visit_end
        for pos, snap in enumerate(res.snapshots):
            b = got.snapshot_offsets[v0 + pos]
            assert got.snapshot_held[b:b + pos + 1].tolist() == snap
        for p, frm, to, t, kind in res.events:
            want_events.append((s, p, v0 + frm if frm >= 0 else frm, v0 + to, t, kind))
    assert [tuple(int(x) for x in e) for e in got.events] == want_events


@pytest.mark.parametrize("strategy", STRATEGIES, ids=lambda s: s.name)
def test_the_event_log_accounts_for_every_movement_and_its_trail_hops(trace, strategy):
    got = pager.replay(trace, strategy, events=True)
    ev = got.events
    c = got.counters
    moves = np.isin(ev["kind"], [EventKind.FAULT, EventKind.HANDOVER, EventKind.PUSH])
    assert moves.sum() == got.page_moves.sum()
    assert (ev["kind"] == EventKind.REMOTE).sum() == c["remote_accesses"].sum()
    assert (ev["kind"] == EventKind.CREATE).sum() == 0  # only with log_creations
    onboard = moves & (ev["from_visit"] >= 0)
    assert (ev["to_visit"][onboard] - ev["from_visit"][onboard]).sum() == c["trail_hops"].sum()
    # Both ends of a movement are visits of the event's own session.
    session_of = trace.visit_session()
    assert np.all(session_of[ev["to_visit"]] == ev["session"])
    assert np.all(session_of[ev["from_visit"][onboard]] == ev["session"][onboard])
    # Handover moves happen at the start of the receiving visit, pushes lead_ns before.
    ho = ev["kind"] == EventKind.HANDOVER
    np.testing.assert_array_equal(ev["time_ns"][ho], trace.visit_start_ns[ev["to_visit"][ho]])
    push = ev["kind"] == EventKind.PUSH
    np.testing.assert_array_equal(ev["time_ns"][push],
                                  trace.visit_start_ns[ev["to_visit"][push]] - strategy.lead_ns)


def test_counters_do_not_depend_on_the_event_log(trace):
    for strategy in STRATEGIES:
        plain = pager.replay(trace, strategy)
        logged = pager.replay(trace, strategy, events=True, snapshots=True)
        np.testing.assert_array_equal(plain.counters, logged.counters)
        np.testing.assert_array_equal(plain.held_at_end, logged.held_at_end)


def test_a_page_has_exactly_one_owner_so_holdings_add_up_to_the_pages_created(trace):
    for strategy in (pager.OnDemand(), pager.Proactive(), HotK(k=3), PushWorkingSet()):
        got = pager.replay(trace, strategy)
        per_session = np.add.reduceat(got.held_at_end, trace.visit_offsets[:-1]) \
            if trace.n_visits else np.zeros(0)
        has_visits = np.diff(trace.visit_offsets) > 0
        np.testing.assert_array_equal(per_session[has_visits],
                                      got.counters["created"][has_visits])


def test_the_paper_fast_path_equals_the_trace_engine_and_the_scalar_loop(ref):
    params = pager.PaperParams(n_pages=60, accesses=25, handovers=4, zipf_s=1.0)
    runs = 30
    fast = pager.run_paper(params, runs, np.random.default_rng(9), chunk_sessions=7)
    traced = pager.paper_counts(pager.paper_trace(params, runs, np.random.default_rng(9)))
    key = int(pager.paper_key(np.random.default_rng(9)))
    sampler = params.sampler()
    scalar = [ref.paper_session(key, s, 60, 25, 4, sampler.threshold, sampler.alias)
              for s in range(runs)]
    rows = np.array([r[0] for r in scalar])
    want = pager.PaperCounts.from_runs(
        rows=rows, totals=rows.sum(axis=2), last_row=rows[:, -1, :],
        ondemand_moves=np.array([r[1] for r in scalar]),
        ondemand_hops=np.array([r[2] for r in scalar]),
        proactive_moves=np.array([r[3] for r in scalar]),
        proactive_hops=np.array([r[4] for r in scalar]))
    for name in pager.PAPER_QUANTITIES + ("rows",):
        for got in (fast, traced):
            np.testing.assert_array_equal(getattr(got, name).total, getattr(want, name).total)
            np.testing.assert_array_equal(getattr(got, name).total_sq,
                                          getattr(want, name).total_sq)


def test_results_do_not_depend_on_the_thread_count_or_the_chunk_size():
    params = pager.PaperParams(n_pages=200, accesses=100, handovers=5, zipf_s=1.2)
    base = pager.run_paper(params, 500, np.random.default_rng(1), chunk_sessions=500)
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        single = pager.run_paper(params, 500, np.random.default_rng(1), chunk_sessions=33)
    finally:
        numba.set_num_threads(before)
    for name in pager.PAPER_QUANTITIES + ("rows",):
        np.testing.assert_array_equal(getattr(base, name).total, getattr(single, name).total)


def test_proactive_moves_the_pages_in_existence_at_every_handover():
    # The paper's accounting: 2910 = 336 + 499 + 608 + 704 + 763 (Table I totals).
    params = pager.PaperParams(n_pages=100, accesses=50, handovers=3)
    trace = pager.paper_trace(params, 20, np.random.default_rng(4))
    od = pager.replay(trace, pager.OnDemand())
    pr = pager.replay(trace, pager.Proactive())
    before_handover = od.pages_at_visit_end.reshape(20, 4)[:, :-1].sum(axis=1)
    np.testing.assert_array_equal(pr.counters["handover_moves"], before_handover)
    np.testing.assert_array_equal(pr.counters["trail_hops"], before_handover)
    assert pr.counters["fault_moves"].sum() == 0


def test_the_papers_table_gives_its_1162_movements_and_1697_page_hops():
    raw = json.loads(TABLE1.read_text())
    table = raw["rows_before_each_handover"]
    rows = np.zeros((6, 6))
    for k, row in enumerate(table):
        rows[k, : k + 1] = row["per_satellite"]
        assert sum(row["per_satellite"]) == row["total"]
    moves, hops = pager.table_movements(rows)
    assert moves.sum() == raw["ondemand_page_movements"] == 1162
    assert hops.sum() == 1697  # docs/design.md section 1
    assert sum(r["total"] for r in table[:-1]) == raw["proactive_page_movements"]


@pytest.mark.needs_shared
def test_the_shipped_paper_numbers_are_the_reference_copy():
    shared = ROOT.parent / "shared" / "data" / "fongen-2023-table1.json"
    if not shared.exists():
        pytest.skip(f"{shared} is absent (../shared/data not mounted)")
    assert json.loads(shared.read_text()) == json.loads(
        TABLE1.read_text())


def test_something_that_is_not_a_strategy_is_rejected(trace):
    with pytest.raises(ValueError, match="not a pager Strategy"):
        pager.replay(trace, object())
