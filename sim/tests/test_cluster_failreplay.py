"""`satpage cluster chaos --failure-schedule FILE`: the satellite failures a `satpage
compare` run drew, replayed on a real 30-satellite cluster (satnode + redis-server
SIGKILLed at the schedule's scenario times, restarted empty). With R = 1 the pages,
sessions and page tables the cluster loses are the engine's figures written in the
file, to the page; with R = 2 the same kills lose nothing, as the engine says.

The clusters do not emulate their links: what is asserted are counts and losses,
which do not depend on the sky's delays, and the replays (sequential within a
session, in step between kills) spent most of their time waiting for them."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from satpage.cli import app
from satpage.comparator import compare_figures

pytestmark = pytest.mark.integration

SATPAGE = str(Path(sys.executable).with_name("satpage"))
SMALL = ["--set", "constellation.spec=walker-star:30/2/1:500:87", "--set", "workload.pages=200",
         "--set", "workload.accesses_per_visit=80"]
KEYS = ("pages_lost", "sessions_hit", "page_tables_lost")
COUNTS = ("sessions", "accesses", "pages_created", "page_moves", "page_hops", "pages_left_behind",
          "pages_deleted")


def _port_base():
    from satpage.cluster.local import free_port_base

    return free_port_base(30)


def _invoke(*args):
    """The CLI in this process, for what starts no cluster (a subprocess would import
    everything again: seconds of CPU each)."""
    return CliRunner().invoke(app, list(args))


def _run(*args, cwd=None):
    out = subprocess.run([SATPAGE, *args], capture_output=True, text=True, timeout=900, cwd=cwd)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout)


def _run_here(*args):
    """A replay through a running deployment (``--target``) in this process: it starts no
    cluster, only its kill command (a subprocess)."""
    r = _invoke(*args)
    assert r.exit_code == 0, r.output[-3000:]
    return json.loads(r.stdout)


@pytest.fixture(scope="module")
def schedule(tmp_path_factory, cluster_binaries):
    """Four paper-mimic sessions on a trail in plane 0, eight permanent failures (seed
    2023: four of them on the trails, two of the serving satellite)."""
    path = tmp_path_factory.mktemp("failreplay") / "failures.json"
    r = _invoke("compare", "paper-mimic", "--sessions", "4", *SMALL, "--set", "faults.count=8",
                "--strategies", "on-demand,proactive", "--failure-schedule", str(path), "--json")
    assert r.exit_code == 0, r.output[-3000:]
    return path


def test_with_one_replica_the_cluster_loses_the_engines_pages(schedule, tmp_path):
    doc = json.loads(schedule.read_text())
    assert doc["replicas"] == 1 and len(doc["failures"]) == 8
    r = _run("cluster", "chaos", "--failure-schedule", str(schedule), "--replicas", "1",
             "--state-dir", str(tmp_path / "r1"), "--no-emulate-links", "--json")
    assert r["replicas"] == 1
    for name in ("on-demand", "proactive"):
        got = r["strategies"][name]
        verdict = compare_figures(doc["engine"][name], got, KEYS)
        assert verdict.equal, (name, [(x.key, x.engine, x.other) for x in verdict.rows])
        assert got["pages_lost"] > 0 and got["page_tables_lost"] > 0, name
        # what the reads found gone is what the killed satellites held (their memory)
        assert got["pages_lost"] == got["frames_at_killed_satellites"], name
        # every satellite of the schedule was killed, in order
        assert [k["satellite"] for k in r["kills"][name]] == [f["satellite"] for f in doc["failures"]]
    # the trail exposes on-demand at past servers too: a session hit without its table lost
    od = r["strategies"]["on-demand"]
    assert od["sessions_hit"] > od["page_tables_lost"]


def test_with_two_replicas_the_same_kills_lose_nothing(schedule, tmp_path):
    """Also: without --state-dir the cluster's state (its TLS keys) is not written to the
    working directory, and a run whose losses are the engine's removes it."""
    r = _run("cluster", "chaos", "--failure-schedule", str(schedule), "--replicas", "2",
             "--no-emulate-links", "--json", cwd=tmp_path)
    assert list(tmp_path.iterdir()) == [], "the replay left files in its working directory"
    assert r["state_dir"] is None
    assert r["replicas"] == 2
    for name in ("on-demand", "proactive"):
        got = r["strategies"][name]
        assert {k: r["engine"][name][k] for k in KEYS} == dict.fromkeys(KEYS, 0), name
        assert {k: got[k] for k in KEYS} == dict.fromkeys(KEYS, 0), name
        # the copies to replicas were made (and counted by the relays) all along
        assert got["replication_copies"] > 0 and r["engine"][name]["replication_copies"] > 0
        # the kills did take the holders of pages (and of page tables): the replicas kept them
        assert got["frames_at_killed_satellites"] > 0, name
        # and every movement is the failure-free engine's, to the page-hop
        verdict = compare_figures(r["engine"][name], got, COUNTS)
        assert verdict.equal, (name, [(x.key, x.engine, x.other) for x in verdict.rows if not x.ok])
        assert got["page_moves"] > 0 and got["pages_deleted"] > 0, name
    assert r["equal"] == {"on-demand": True, "proactive": True}
    assert r["counts_equal"] == {"on-demand": True, "proactive": True}


def test_a_running_deployment_is_replayed_through_its_kill_command(schedule, tmp_path):
    """--target + --kill-command (what scripts/e2e-k8s.sh does with `kubectl delete pod`):
    here a running local cluster, killed by `satpage cluster kill`. Nothing is lost and
    the counts are the engine's; --fail-satellite/--fail-busiest at --fail-at replace the
    file's failures."""
    doc = json.loads(schedule.read_text())
    state = tmp_path / "c"
    up = _run("cluster", "up", "--constellation", "walker-star:30/2/1:500:87", "--replicas", "2",
              "--port-base", str(_port_base()), "--state-dir", str(state), "--no-emulate-links", "--json")
    kill = f"{SATPAGE} cluster kill {{satellite}} --state-dir {state}"
    try:
        common = ["cluster", "chaos", "--failure-schedule", str(schedule), "--target", up["gateway"],
                  "--tls-dir", up["tls_dir"], "--replicas", "2", "--kill-command", kill,
                  "--strategies", "on-demand", "--json"]
        r = _run_here(*common)
        got, eng = r["strategies"]["on-demand"], r["engine"]["on-demand"]
        assert r["target"] == up["gateway"] and r["state_dir"] is None
        assert [k["satellite"] for k in r["kills"]["on-demand"]] == [f["satellite"] for f in doc["failures"]]
        assert {k: got[k] for k in KEYS} == dict.fromkeys(KEYS, 0)
        assert got["frames_at_killed_satellites"] > 0
        assert compare_figures(eng, got, COUNTS).equal
        first = doc["failures"][0]
        at = ["--fail-at", str(first["fail_ns"] / 1e9)]
        one = _run_here(*common, "--fail-satellite", str(first["satellite"]), *at)
        assert [(k["satellite"], k["fail_ns"]) for k in one["kills"]["on-demand"]] == \
            [(first["satellite"], first["fail_ns"])]
        assert one["counts_equal"] == {"on-demand": True}
        # the worst single kill then: the satellite holding the most of the sessions' frames
        worst = _run_here(*common, "--fail-busiest", *at)
        [k] = worst["kills"]["on-demand"]
        assert k["fail_ns"] == first["fail_ns"]
        w = worst["strategies"]["on-demand"]
        assert w["frames_at_killed_satellites"] > 0 and w["pages_lost"] == 0
        assert w["frames_at_killed_satellites"] >= one["strategies"]["on-demand"]["frames_at_killed_satellites"]
        assert worst["counts_equal"] == {"on-demand": True}
    finally:
        subprocess.run([SATPAGE, "cluster", "down", "--state-dir", str(state)], capture_output=True,
                       timeout=120)


def test_replay_options_are_checked_before_anything_runs(schedule):
    for args, why in [(["--target", "127.0.0.1:1"], "--kill-command"),
                      (["--target", "127.0.0.1:1", "--kill-command", "true"], "--replicas"),
                      (["--fail-satellite", "3"], "--fail-at"),
                      (["--fail-busiest"], "--fail-at"),
                      (["--fail-at", "10"], "--fail-busiest"),
                      (["--fail-satellite", "3", "--fail-at", "1e9"], "--fail-at 1000000000"),
                      (["--fail-satellite", "99", "--fail-at", "10"], "99"),
                      (["--settle-s", "-1"], "--settle-s -1.0")]:
        out = _invoke("cluster", "chaos", "--failure-schedule", str(schedule), *args)
        assert out.exit_code == 2, (args, out.output)
        assert "error:" in out.stderr and why in " ".join(out.stderr.split()), (args, out.stderr)


def test_a_bad_schedule_file_is_refused_naming_it(tmp_path):
    """No cluster is started for a file that cannot be replayed (exit 2, `error:`)."""
    missing = tmp_path / "nope.json"
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"format": "satpage-failures/1", "failures": [
        {"satellite": 1, "fail_ns": 5, "repair_ns": None}]}))
    for path, why in [(missing, "nope.json"), (old, "no scenario config")]:
        out = _invoke("cluster", "chaos", "--failure-schedule", str(path))
        assert out.exit_code == 2, out.output
        assert "error:" in out.stderr and why in " ".join(out.stderr.split())


def test_replay_options_without_a_schedule_are_refused():
    """--settle-s, like --target and the kill options, belongs to --failure-schedule: alone
    it is refused (exit 2, naming it) before a cluster starts."""
    out = _invoke("cluster", "chaos", "--settle-s", "6")
    assert out.exit_code == 2, out.output
    assert "--settle-s" in out.stderr and "--failure-schedule" in " ".join(out.stderr.split())
