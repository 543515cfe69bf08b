"""satpage.comparator: the one verdict on a backend's figures beside the engine's, and
satpage.backend's engine against the simulation's own totals."""

from __future__ import annotations

import math

import pytest

from satpage.backend import EngineBackend, LatencySummary, ReplayResult
from satpage.comparator import EXACT, TOLERANCES, Tolerance, compare_figures, flatten


def test_counts_are_equal_or_different_and_the_rows_say_which():
    engine = {"page_moves": 10, "page_hops": 31, "pages_lost": 0}
    cluster = {"page_moves": 10, "page_hops": 30, "pages_lost": 0, "replica_snapshots": 4}
    got = compare_figures(engine, cluster)
    assert [r.key for r in got.rows] == ["page_moves", "page_hops", "pages_lost"]
    assert not got.equal and got.different == ["page_hops"]
    assert got["page_hops"].engine == 31 and got["page_hops"].other == 30
    assert compare_figures(engine, cluster, ["page_moves", "pages_lost"]).equal


def test_a_key_asked_for_and_missing_on_either_side_fails_and_nothing_compared_is_not_equal():
    got = compare_figures({"a": 1}, {"b": 1}, ["a", "b"])
    assert got.different == ["a", "b"] and got["a"].other is None
    assert not compare_figures({"a": 1}, {"b": 1}).equal  # no figure in common


def test_latencies_compare_within_their_named_tolerances():
    engine = ReplayResult(counts={"page_moves": 5},
                          latency={"fault_latency_ms": LatencySummary.from_ms([10.0, 12.0, 14.0])})
    other = ReplayResult(counts={"page_moves": 5},
                         latency={"fault_latency_ms": LatencySummary.from_ms([10.5, 12.4, 14.9])})
    keys = ["page_moves", "fault_latency_ms.mean", "fault_latency_ms.p50", "fault_latency_ms.p99"]
    loose = {"fault_latency_ms.mean": Tolerance(abs=1.0), "fault_latency_ms.p50": Tolerance(rel=0.05),
             "fault_latency_ms.p99": Tolerance(abs=0.5, rel=0.05)}
    assert compare_figures(engine.figures(), other.figures(), keys, tolerances=loose).equal
    tight = {**loose, "fault_latency_ms.p50": Tolerance(rel=0.01)}  # 0.4 ms off 12 ms is 3.3 %
    assert compare_figures(engine.figures(), other.figures(), keys, tolerances=tight).different == \
        ["fault_latency_ms.p50"]
    assert compare_figures(engine.figures(), other.figures(), ["fault_latency_ms.n"]).equal


def test_lists_compare_element_by_element_and_nested_figures_by_dotted_names():
    assert EXACT.allows([1, 2, 3], [1, 2, 3]) and not EXACT.allows([1, 2, 3], [1, 2])
    assert Tolerance(abs=1).allows([1.0, 2.0], [1.5, 2.9]) and not EXACT.allows([1], 1)
    assert flatten({"a": {"b": 1, "c": {"d": 2}}, "e": 3}) == {"a.b": 1, "a.c.d": 2, "e": 3}
    with pytest.raises(ValueError, match="abs -1"):
        Tolerance(abs=-1)


def test_an_empty_latency_summary_has_no_figures_but_its_count():
    s = LatencySummary.from_ms([])
    assert s.n == 0 and math.isnan(s.p50_ms) and s.as_dict() == {"n": 0}
    assert LatencySummary.from_ms([1.0, 2.0, 3.0, 4.0]).as_dict() == {"n": 4, "mean": 2.5, "p50": 2.5,
                                                                        "p99": 3.97}


def test_the_engine_backend_gives_the_simulations_own_totals_chunk_by_chunk():
    """The authority: ``run_scenario``'s totals of the same scenario (its costs report)."""
    from satpage.commands.compare import resolve_scenario
    from satpage.simulate import chunk_trace, prepare, run_scenario

    sc = resolve_scenario(None, ["run.chunk_sessions=40"], seed=11, sessions=90,
                          strategies="on-demand,proactive")
    world = prepare(sc)
    assert world.n_chunks > 1
    res = run_scenario(sc, world=world)
    eb = EngineBackend(world)
    for name in ("on-demand", "proactive"):
        total: dict[str, int] = {}
        for i in range(world.n_chunks):
            got = eb.replay(chunk_trace(world, i), name)
            assert got.losses == {"pages_lost": 0, "sessions_hit": 0, "page_tables_lost": 0}
            for k, v in got.counts.items():
                total[k] = total.get(k, 0) + v
        want = res.costs[name].counts
        assert total == {"sessions": want["sessions"], "accesses": want["accesses"],
                         "pages_created": want["creates"], "page_moves": want["page_moves"],
                         "page_hops": want["page_hops"], "pages_left_behind": want["pages_left_behind"],
                         "pages_deleted": want["pages_at_session_end"]}
        assert total["page_moves"] > 0 and total["sessions"] == 90


def test_by_default_counts_are_exact_and_the_fault_latencies_hold_their_named_tolerances():
    """TOLERANCES: mean and p50 within 10 % of the engine's, p99 within 15 %."""
    engine = {"page_moves": 10, "fault_latency_ms": 20.0, "fault_latency_p50_ms": 18.0,
              "fault_latency_p99_ms": 60.0}
    within = {"page_moves": 10, "fault_latency_ms": 21.9, "fault_latency_p50_ms": 16.3,
              "fault_latency_p99_ms": 68.9}
    assert compare_figures(engine, within).equal
    outside = {**within, "page_moves": 11, "fault_latency_p99_ms": 69.1}
    assert compare_figures(engine, outside).different == ["page_moves", "fault_latency_p99_ms"]
    assert TOLERANCES["fault_latency_p99_ms"] == Tolerance(rel=0.15)
    assert compare_figures(engine, within, tolerances={}).different == list(engine)[1:]


def test_compares_latency_agreement_is_the_comparators_verdict_in_its_json_rows():
    from satpage.commands.compare import latency_agreement

    engine = {"fault_latency_ms": 20.0, "fault_latency_p50_ms": 18.0, "fault_latency_p99_ms": 0.0}
    wire = {"fault_latency_ms": 23.0, "fault_latency_p50_ms": 18.9, "fault_latency_p99_ms": 0.0}
    got = latency_agreement(engine, wire)
    assert got["equal"] is False
    assert got["rows"] == [
        {"key": "fault_latency_ms", "engine": 20.0, "cluster": 23.0, "difference": 0.15,
         "tolerance_rel": 0.1, "ok": False},
        {"key": "fault_latency_p50_ms", "engine": 18.0, "cluster": 18.9, "difference": 0.05,
         "tolerance_rel": 0.1, "ok": True},
        {"key": "fault_latency_p99_ms", "engine": 0.0, "cluster": 0.0, "difference": None,
         "tolerance_rel": 0.15, "ok": True}]


def test_chaos_prints_the_comparators_differences_from_the_failure_free_counts(monkeypatch, tmp_path):
    """`cluster chaos --failure-schedule` without --json: the counts the comparator finds
    different, cluster vs engine (the replay itself is a fake: this is the report's text)."""
    from typer.testing import CliRunner

    from satpage.cli import app
    from satpage.cluster import failreplay

    counts = dict.fromkeys(failreplay.COUNT_KEYS, 7)
    losses = {"pages_lost": 0, "sessions_hit": 0, "page_tables_lost": 0}
    report = {"replicas": 2, "strategies": {"on-demand": {**counts, **losses, "page_hops": 9}},
              "engine": {"on-demand": {**counts, **losses}}, "counts_equal": {"on-demand": False}}
    monkeypatch.setattr(failreplay, "run_schedule_replay", lambda *a, **k: report)
    path = tmp_path / "failures.json"
    path.write_text("{}")
    r = CliRunner().invoke(app, ["cluster", "chaos", "--failure-schedule", str(path), "--expect-no-loss"])
    assert r.exit_code == 1, r.output
    assert "counts not the engine's failure-free run: page_hops 9 vs 7" in " ".join(r.stdout.split())
