"""`satpage compare --backend cluster`: the deployed service gives the engine's counts."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from satpage.cli import app
from satpage.comparator import compare_figures

pytestmark = pytest.mark.integration


def _equal_counts(out: dict, keys) -> None:
    """The run's verdict (``counts_equal``) and the comparator's on the counts it printed."""
    for name, counts in out["strategies"].items():
        verdict = compare_figures(out["engine"][name], counts, keys)
        assert verdict.equal, (name, [(r.key, r.engine, r.other) for r in verdict.rows if not r.ok])
    assert out["counts_equal"] == dict.fromkeys(out["strategies"], True)


def _compare_json(cluster, *args) -> dict:
    """`satpage compare ... --backend cluster --json` through the recorded cluster, run in
    this process (a subprocess would import everything again: seconds of CPU)."""
    r = CliRunner().invoke(app, ["compare", *args, "--backend", "cluster", "--json"],
                           env={"SATPAGE_CLUSTER_DIR": cluster.state_dir})
    assert r.exit_code == 0, r.output[-3000:]
    return json.loads(r.stdout)


@pytest.mark.xdist_group("default-cluster")
def test_the_cluster_replays_the_paper_mimic_with_the_engines_counts(default_cluster):
    """Through the session's 150-satellite cluster, recorded in $SATPAGE_CLUSTER_DIR
    (paper-mimic's constellation; its R and link epoch do not change these counts)."""
    out = _compare_json(default_cluster, "paper-mimic", "--sessions", "2")
    # the three the service runs (push-ahead: the pages of the last visit, at the handover)
    assert set(out["strategies"]) == {"proactive", "on-demand", "push-ahead"}
    _equal_counts(out, ("page_moves", "page_hops", "pages_left_behind"))


def test_with_a_latitude_cutoff_the_cluster_routes_on_the_engines_snapshots(cluster_binaries):
    """The default constellation (its own 150-satellite cluster: the routes are not the
    session cluster's); 40 accesses a visit keep the replay short, and the cut-off
    still takes the routes of both strategies far from the +Grid's."""
    exe = str(Path(sys.executable).with_name("satpage"))
    base = ["compare", "default", "--sessions", "3", "--strategies", "proactive,on-demand",
            "--set", "workload.access_rate_per_s=0", "--set", "workload.accesses_per_visit=40", "--json"]
    cut = ["--set", "constellation.isl_latitude_cutoff_deg=10"]
    r = subprocess.run([exe, *base, *cut, "--backend", "cluster"], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    _equal_counts(out, ("page_moves", "page_hops", "pages_left_behind"))
    # the cut-off changed the routes: the same sessions without it take fewer hops
    free = CliRunner().invoke(app, base)
    assert free.exit_code == 0, free.output[-3000:]
    for name, counts in json.loads(free.stdout)["strategies"].items():
        assert counts["page_hops"] < out["strategies"][name]["page_hops"], name


@pytest.mark.xdist_group("default-cluster")
def test_with_two_replicas_the_relays_count_the_engines_replication_traffic(default_cluster):
    """R = 2 (the session's cluster's), a quarter of the accesses writes: the copies the
    satnodes send to their replicas, their page-hops (counted hop by hop by the relays)
    and byte-hops equal the engine's pricing of the same replay (pager.FaultModel,
    docs/faults.md), to the page."""
    assert default_cluster.replicas == 2
    out = _compare_json(default_cluster, "paper-mimic", "--sessions", "2", "--set", "workload.pages=200",
                        "--set", "workload.accesses_per_visit=80", "--set", "faults.replicas=2",
                        "--set", "faults.write_share=0.25")
    assert out["replicas"] == 2
    _equal_counts(out, ("page_moves", "page_hops", "replication_copies", "replication_page_hops",
                        "replication_bytes"))
    for counts in out["strategies"].values():
        # every page stored at a new owner (created or moved) is copied once, one hop
        # behind, and so is every write but those that create their page
        stores = counts["pages_created"] + counts["page_moves"]
        assert stores < counts["replication_copies"] < stores + counts["accesses"] // 4 + 1
        assert counts["replication_page_hops"] == counts["replication_copies"]
        # (whole snapshots, e.g. to a replica that answered late at start, are counted
        # apart in replica_snapshots and never as page copies)
