"""`satpage cluster chaos --failure-schedule FILE`: the satellite failures a `satpage
compare` run drew, replayed on a real 30-satellite cluster (satnode + redis-server
SIGKILLed at the schedule's scenario times, restarted empty). With R = 1 the pages,
sessions and page tables the cluster loses are the engine's figures written in the
file, to the page; with R = 2 the same kills lose nothing, as the engine says."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from satpage.cluster.local import find_binary

pytestmark = pytest.mark.integration

SATPAGE = str(Path(sys.executable).with_name("satpage"))
SMALL = ["--set", "constellation.spec=walker-star:30/2/1:500:87", "--set", "workload.pages=200",
         "--set", "workload.accesses_per_visit=80"]
KEYS = ("pages_lost", "sessions_hit", "page_tables_lost")


def _need_binaries():
    try:
        find_binary("satnode")
        find_binary("gateway")
    except OSError:
        pytest.skip("bin/satnode and bin/gateway are missing: run `make build`")
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed (scripts/setup.sh installs it)")


def _run(*args):
    out = subprocess.run([SATPAGE, *args], capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def schedule(tmp_path_factory):
    """Four paper-mimic sessions on a trail in plane 0, eight permanent failures (seed
    2023: four of them on the trails, two of the serving satellite)."""
    _need_binaries()
    path = tmp_path_factory.mktemp("failreplay") / "failures.json"
    _run("compare", "paper-mimic", "--sessions", "4", *SMALL, "--set", "faults.count=8",
         "--strategies", "on-demand,proactive", "--failure-schedule", str(path), "--json")
    return path


def test_with_one_replica_the_cluster_loses_the_engines_pages(schedule, tmp_path):
    doc = json.loads(schedule.read_text())
    assert doc["replicas"] == 1 and len(doc["failures"]) == 8
    r = _run("cluster", "chaos", "--failure-schedule", str(schedule), "--replicas", "1",
             "--state-dir", str(tmp_path / "r1"), "--json")
    assert r["replicas"] == 1
    for name in ("on-demand", "proactive"):
        got = r["strategies"][name]
        for key in KEYS:
            assert got[key] == doc["engine"][name][key], (name, key, got[key], doc["engine"][name][key])
        assert got["pages_lost"] > 0 and got["page_tables_lost"] > 0, name
        # what the reads found gone is what the killed satellites held (their memory)
        assert got["pages_lost"] == got["frames_at_killed_satellites"], name
        # every satellite of the schedule was killed, in order
        assert [k["satellite"] for k in r["kills"][name]] == [f["satellite"] for f in doc["failures"]]
    # the trail exposes on-demand at past servers too: a session hit without its table lost
    od = r["strategies"]["on-demand"]
    assert od["sessions_hit"] > od["page_tables_lost"]


def test_with_two_replicas_the_same_kills_lose_nothing(schedule, tmp_path):
    r = _run("cluster", "chaos", "--failure-schedule", str(schedule), "--replicas", "2",
             "--state-dir", str(tmp_path / "r2"), "--json")
    assert r["replicas"] == 2
    for name in ("on-demand", "proactive"):
        got = r["strategies"][name]
        assert {k: r["engine"][name][k] for k in KEYS} == dict.fromkeys(KEYS, 0), name
        assert {k: got[k] for k in KEYS} == dict.fromkeys(KEYS, 0), name
        # the copies to replicas were made (and counted by the relays) all along
        assert got["replication_copies"] > 0 and r["engine"][name]["replication_copies"] > 0
        # the kills did take the holders of pages (and of page tables): the replicas kept them
        assert got["frames_at_killed_satellites"] > 0, name
    assert r["equal"] == {"on-demand": True, "proactive": True}


def test_a_bad_schedule_file_is_refused_naming_it(tmp_path):
    """No cluster is started for a file that cannot be replayed (exit 2, `error:`)."""
    missing = tmp_path / "nope.json"
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"format": "satpage-failures/1", "failures": [
        {"satellite": 1, "fail_ns": 5, "repair_ns": None}]}))
    for path, why in [(missing, "nope.json"), (old, "no scenario config")]:
        out = subprocess.run([SATPAGE, "cluster", "chaos", "--failure-schedule", str(path)],
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 2, out.stderr
        assert "error:" in out.stderr and why in " ".join(out.stderr.split())
