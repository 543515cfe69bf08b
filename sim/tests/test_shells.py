"""Several shells: no ISL joins two shells (docs/orbit-model.md), so a transfer between
satellites of different shells has no path; it is counted, reported and warned about."""

import logging

import numpy as np

import pager
from satpage.scenario import load_scenario, shipped_scenario, with_overrides
from satpage.simulate import chunk_trace, prepare, replay_strategy, run_scenario

TWO_SHELLS = "walker:60/6/1:550:53+walker:60/6/1:560:70"


def test_transfers_between_shells_are_the_unreachable_ones_and_are_warned_about(caplog):
    sc = with_overrides(load_scenario(shipped_scenario("default")), {
        "constellation.spec": TWO_SHELLS, "sessions.count": 40, "run.chunk_sessions": 20,
        "time.duration_s": 3600.0, "network.load_bins": 4,
        "strategies.compare": ["on-demand", "proactive"]})
    with caplog.at_level(logging.WARNING, logger="satpage.simulate"):
        res = run_scenario(sc)
    w = prepare(sc)
    shell = np.repeat([0, 1], 60)
    moving = {int(pager.EventKind.FAULT), int(pager.EventKind.HANDOVER)}
    for name in ("on-demand", "proactive"):
        want = 0
        for i in range(w.n_chunks):
            ct = chunk_trace(w, i)
            ev = replay_strategy(ct.trace, pager.make_strategy(name)).events
            vsat = ct.trace.visit_satellite
            keep = np.isin(ev["kind"], list(moving)) & (ev["from_visit"] >= 0)
            src, dst = vsat[ev["from_visit"][keep]], vsat[ev["to_visit"][keep]]
            want += int((shell[src] != shell[dst]).sum())
        got = res.summaries()[name]["unreachable_transfers"]
        assert got == want > 0
        assert f"{name}: {got} of " in caplog.text
