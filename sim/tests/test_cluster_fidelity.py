"""A local cluster emulates its links by default: `satpage cluster fidelity` probes
multi-hop paths through the gateway, and each fault takes the path's distance / c
from orbit_model's positions there and back (the machine may add to it), over the
hops orbit_model routes."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from satpage.cluster.driver import _free_port_base
from satpage.cluster.local import load_state

pytestmark = pytest.mark.integration

SATPAGE = str(Path(sys.executable).with_name("satpage"))
SMALL = "walker-star:24/4/1:500:87"


def _satpage(*args):
    out = subprocess.run([SATPAGE, *args], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, f"satpage {' '.join(args)} exited {out.returncode}: {out.stderr[-2000:]}"
    return out


def test_fidelity_measures_each_path_at_its_distance_over_c(tmp_path, cluster_binaries):
    _satpage("cluster", "up", "--constellation", SMALL, "--state-dir", str(tmp_path),
             "--port-base", str(_free_port_base(SMALL)), "--store", "memory")
    try:
        st = load_state(tmp_path)
        assert st.links["ephemeris"].endswith("link-ephemeris.bin")
        out = json.loads(_satpage("cluster", "fidelity", "--state-dir", str(tmp_path), "--paths", "8",
                                  "--json").stdout)
    finally:
        subprocess.run([SATPAGE, "cluster", "down", "--state-dir", str(tmp_path)], capture_output=True,
                       timeout=120)
    assert out["paths"] == 8 and out["constellation"] == SMALL
    assert out["substrate_ms_p50"] is not None and out["substrate_ms_p50"] > 0
    for p in out["paths_detail"]:
        assert len(p["satellites"]) >= 3  # multi-hop
        # tens of ms of light time; the machine may add to it, and it may come early
        # by what the timers' smoothed lateness and the substrate take off the last waits
        assert p["intended_ms"] > 10
        assert p["measured_ms"] >= p["intended_ms"] - 2.0, p
