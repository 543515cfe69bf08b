"""`satpage compare --backend cluster`: the deployed service gives the engine's counts."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration


def _need_cluster() -> None:
    from satpage.cluster.local import find_binary
    try:
        find_binary("satnode")
        find_binary("gateway")
    except (OSError, FileNotFoundError):
        pytest.skip("bin/satnode and bin/gateway are missing: run `make build`")
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed (scripts/setup.sh installs it)")


@pytest.mark.xdist_group("default-cluster")
def test_the_cluster_replays_the_paper_mimic_with_the_engines_counts(default_cluster):
    """Through the session's 150-satellite cluster, recorded in $SATPAGE_CLUSTER_DIR
    (paper-mimic's constellation; its R and link epoch do not change these counts)."""
    exe = str(Path(sys.executable).with_name("satpage"))
    env = {**os.environ, "SATPAGE_CLUSTER_DIR": default_cluster.state_dir}
    r = subprocess.run([exe, "compare", "paper-mimic", "--sessions", "2", "--backend",
                        "cluster", "--json"], capture_output=True, text=True, timeout=600, env=env)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert set(out["strategies"]) == {"proactive", "on-demand"}
    for name, counts in out["strategies"].items():
        for key in ("page_moves", "page_hops", "pages_left_behind"):
            assert counts[key] == out["engine"][name][key], (name, key)


def test_with_a_latitude_cutoff_the_cluster_routes_on_the_engines_snapshots():
    _need_cluster()
    exe = str(Path(sys.executable).with_name("satpage"))
    base = ["compare", "default", "--sessions", "3", "--strategies", "proactive,on-demand", "--json"]
    cut = ["--set", "constellation.isl_latitude_cutoff_deg=10"]
    r = subprocess.run([exe, *base, *cut, "--backend", "cluster"], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    for name, counts in out["strategies"].items():
        for key in ("page_moves", "page_hops", "pages_left_behind"):
            assert counts[key] == out["engine"][name][key], (name, key)
    # the cut-off changed the routes: the same sessions without it take fewer hops
    free = subprocess.run([exe, *base], capture_output=True, text=True, timeout=600)
    assert free.returncode == 0, free.stderr
    for name, counts in json.loads(free.stdout)["strategies"].items():
        assert counts["page_hops"] < out["strategies"][name]["page_hops"], name


def test_with_two_replicas_the_relays_count_the_engines_replication_traffic():
    """R = 2 on a 30-satellite cluster, a quarter of the accesses writes: the copies the
    satnodes send to their replicas, their page-hops (counted hop by hop by the relays)
    and byte-hops equal the engine's pricing of the same replay (pager.FaultModel,
    docs/faults.md), to the page."""
    _need_cluster()
    exe = str(Path(sys.executable).with_name("satpage"))
    r = subprocess.run([exe, "compare", "paper-mimic", "--sessions", "2", "--set",
                        "constellation.spec=walker-star:30/2/1:500:87", "--set", "workload.pages=200",
                        "--set", "workload.accesses_per_visit=80", "--set", "faults.replicas=2",
                        "--set", "faults.write_share=0.25",
                        "--backend", "cluster", "--json"], capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout)
    assert out["replicas"] == 2
    for name, counts in out["strategies"].items():
        eng = out["engine"][name]
        for key in ("page_moves", "page_hops", "replication_copies", "replication_page_hops",
                    "replication_bytes"):
            assert counts[key] == eng[key], (name, key, counts[key], eng[key])
        # every page stored at a new owner (created or moved) is copied once, one hop
        # behind, and so is every write but those that create their page
        stores = counts["pages_created"] + counts["page_moves"]
        assert stores < counts["replication_copies"] < stores + counts["accesses"] // 4 + 1
        assert counts["replication_page_hops"] == counts["replication_copies"]
        # (whole snapshots, e.g. to a replica that answered late at start, are counted
        # apart in replica_snapshots and never as page copies)
