
import networkx as nx
import numpy as np
import pytest

import pager
from satpage.scenario import load_scenario, shipped_scenario, with_overrides
from satpage.simulate import chunk_trace, prepare, replay_strategy, run_scenario

FAULT = int(pager.EventKind.FAULT)


def replay(trace, name):
    return replay_strategy(trace, pager.make_strategy(name))

SMALL = {"sessions.count": 60, "run.chunk_sessions": 20, "time.duration_s": 7200.0,
         "sessions.lifetime_mean_s": 900.0, "network.load_bins": 12}


def small(**extra):
    return with_overrides(load_scenario(shipped_scenario("default")), {**SMALL, **extra})


@pytest.fixture(scope="module")
def small_run():
    return run_scenario(small())


@pytest.mark.integration
def test_the_same_seed_gives_the_same_numbers_in_one_or_two_processes(small_run):
    two = run_scenario(small(), processes=2)
    assert two.summaries() == small_run.summaries()
    for name, acc in small_run.costs.items():
        np.testing.assert_array_equal(acc.link_load, two.costs[name].link_load)
        np.testing.assert_array_equal(acc.held_delta, two.costs[name].held_delta)


def test_another_seed_gives_other_numbers(small_run):
    other = run_scenario(small(seed=99))
    assert other.summaries()["on-demand"]["page_moves"] != \
        small_run.summaries()["on-demand"]["page_moves"]


def test_on_demand_costs_fewer_page_hops_than_proactive(small_run):
    s = small_run.summaries()
    assert s["on-demand"]["page_hops"] < s["proactive"]["page_hops"]
    assert s["proactive"]["faults"] == 0 and s["proactive"]["pages_left_behind"] == 0


def test_page_hops_are_isl_shortest_paths_between_the_two_satellites():
    """Recompute on-demand page-hops of one chunk with networkx on the +Grid links."""
    sc = small()
    w = prepare(sc)
    ct = chunk_trace(w, 0)
    ev = replay(ct.trace, "on-demand").events
    f = ev[ev["kind"] == FAULT]
    sat = ct.trace.visit_satellite
    a, b = sat[f["from_visit"]], sat[f["to_visit"]]
    g = nx.Graph()
    g.add_edges_from(map(tuple, w.sats.links))
    lengths = dict(nx.all_pairs_shortest_path_length(g))
    want_hops = sum(lengths[int(x)][int(y)] for x, y in zip(a, b, strict=True) if x != y)
    want_moves = int(np.sum(a != b))
    from satpage.costs import CostAccumulator
    acc = CostAccumulator(w.sats.n_sats, w.topology.n_link_ids, 12, sc.duration_ns, 4096)
    acc.add(replay(ct.trace, "on-demand"), ct, w.router, sc.step_ns, 0.1)
    assert acc.counts["page_moves"] == want_moves
    assert acc.counts["page_hops"] == want_hops
    # each hop of each move crosses one ISL
    assert int(acc.link_load.sum()) == want_hops


def test_page_hops_with_a_latitude_cut_off_are_orbit_models_hops_at_each_snapshot():
    """compare's routing is orbit_model's: the on-demand page-hops of a chunk equal
    IslNetwork.hops (its own BFS) at the start of each routing snapshot."""
    from orbit_model import IslNetwork

    sc = small(**{"constellation.isl_latitude_cutoff_deg": 60.0})
    w = prepare(sc)
    ct = chunk_trace(w, 0)
    rl = replay(ct.trace, "on-demand")
    f = rl.events[rl.events["kind"] == FAULT]
    sat = ct.trace.visit_satellite
    a, b = sat[f["from_visit"]], sat[f["to_visit"]]
    step = w.routing.step_ns
    net = IslNetwork(w.sats.constellation, latitude_cutoff_deg=60.0, resolution_ns=step)
    hops = net.hops(a, b, f["time_ns"] // step * step)
    assert (hops >= 0).all()
    from satpage.costs import CostAccumulator
    acc = CostAccumulator(w.sats.n_sats, w.topology.n_link_ids, 12, sc.duration_ns, 4096)
    acc.add(rl, ct, w.routing, sc.step_ns, 0.1)
    assert acc.counts["page_hops"] == int(hops[a != b].sum())
    assert len(np.unique(f["time_ns"] // step)) > 5         # many snapshots


def test_pages_are_conserved_and_released_when_sessions_end(small_run):
    for name, acc in small_run.costs.items():
        held = acc.held_series()
        assert held.min() >= 0, name
        assert held[:, -1].sum() == 0, name      # every session has ended by the last bin
    s = small_run.summaries()
    creates = small_run.costs["on-demand"].counts["creates"]
    assert s["on-demand"]["pages_at_session_end"] == creates


def test_the_default_workload_is_about_1000_accesses_per_serving_satellite(small_run):
    s = small_run.summaries()["on-demand"]
    assert 850 < s["accesses_per_visit"] < 1150


def test_fault_latency_is_at_least_the_round_trip_of_light_over_the_hops(small_run):
    s = small_run.summaries()["on-demand"]
    # one in-plane hop at 500 km is >= 2860 km: >= 19 ms there and back
    assert s["fault_latency_ms"] > 2 * 2860 / 299792.458 * 1e3
    assert s["fault_latency_p50_ms"] <= s["fault_latency_p99_ms"] <= s["fault_latency_max_ms"]


def test_the_paper_mimic_scenario_gives_run_papers_counts_exactly():
    """One client, six satellites one hop apart, 1000 x 1000 Zipf: compare's movements
    and page-hops on the constellation are pager.run_paper's for the same seed, to the
    page (the same session streams, the ISL hops equal the trail distance)."""
    n = 400
    sc = with_overrides(load_scenario(shipped_scenario("paper-mimic")),
                        {"strategies.compare": ["proactive", "on-demand"], "sessions.count": n})
    s = run_scenario(sc, processes=1).summaries()
    want = pager.run_paper(pager.PaperParams(), n, np.random.default_rng(sc.seed))
    assert s["on-demand"]["page_moves"] == want.ondemand_moves.total
    assert s["on-demand"]["page_hops"] == want.ondemand_hops.total
    assert s["proactive"]["page_moves"] == want.proactive_moves.total
    assert s["proactive"]["page_hops"] == want.proactive_hops.total
    exact = pager.exact_paper(pager.PaperParams())   # and the paper's expectation, roughly
    assert abs(s["on-demand"]["page_moves"] / n - exact.ondemand_moves) < 0.05 * exact.ondemand_moves
    # proactive moves every page one hop: page-hops equal movements, as in the paper
    assert s["proactive"]["page_hops"] == s["proactive"]["page_moves"]
