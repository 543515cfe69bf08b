"""Dask as the parallel engine (satpage.parallel): a real scheduler and real worker
processes on loopback give exactly the in-process numbers for the same seed."""

import json

import pytest
from typer.testing import CliRunner

from satpage.cli import app

SMALL = ["--sessions", "120", "--set", "run.chunk_sessions=15", "--set", "time.duration_s=3600",
         "--set", "network.load_bins=6"]
# what says how a run was done, not what it found
RUN_FIELDS = ("processes", "dask", "timing_s", "memory")


def compare_json(*extra):
    result = CliRunner().invoke(app, ["compare", *SMALL, "--json", *extra])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def in_process():
    return compare_json()


@pytest.mark.integration
def test_compare_on_a_local_cluster_of_two_workers_gives_the_in_process_json(in_process):
    on_dask = compare_json("--dask", "local:2")
    assert on_dask["dask"] == "local:2" and on_dask["processes"] == 2
    assert len(on_dask["memory"]["workers_peak_rss_mb"]) == 2
    assert {k: v for k, v in on_dask.items() if k not in RUN_FIELDS} == {
        k: v for k, v in in_process.items() if k not in RUN_FIELDS}
    assert in_process["dask"] is None and in_process["memory"]["peak_rss_mb"] > 0


@pytest.mark.integration
def test_compare_on_a_running_scheduler_gives_the_in_process_json(in_process):
    from distributed import LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address="127.0.0.1:0") as cluster:
        on_dask = compare_json("--dask", cluster.scheduler_address)
    assert on_dask["dask"].startswith("tcp://127.0.0.1:")
    assert {k: v for k, v in on_dask.items() if k not in RUN_FIELDS} == {
        k: v for k, v in in_process.items() if k not in RUN_FIELDS}


@pytest.mark.integration
def test_sweep_on_dask_gives_the_in_process_rows(tmp_path):
    args = ["sweep", *SMALL, "--vary", "workload.zipf_s=0.8,1.2", "--strategies",
            "on-demand,proactive", "--json"]
    here = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "a")])
    there = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "b"), "--dask", "local:2"])
    assert here.exit_code == 0 and there.exit_code == 0, here.output + there.output
    rows = json.loads(here.stdout)["rows"]
    assert json.loads(there.stdout)["rows"] == rows and len(rows) == 4
    assert len(json.loads(there.stdout)["memory"]["workers_peak_rss_mb"]) == 2
    assert [r["workload.zipf_s"] for r in rows] == [0.8, 0.8, 1.2, 1.2]


@pytest.mark.parametrize("bad", ["local:0", "lokal:2", "tcp://nowhere", "4"])
def test_a_bad_dask_target_exits_2_naming_it(bad):
    result = CliRunner().invoke(app, ["compare", *SMALL, "--dask", bad])
    assert result.exit_code == 2
    assert f"--dask {bad!r}" in result.output


@pytest.mark.integration
def test_failures_and_replication_on_dask_give_the_in_process_figures():
    # the failure schedule is drawn from the scenario seed in every worker's World
    faults = ["--set", "faults.count=40", "--set", "faults.replicas=2",
              "--set", "faults.recovery_s=300", "--set", "faults.repair_after_s=900"]
    here = compare_json(*faults)
    there = compare_json(*faults, "--dask", "local:2")
    assert {k: v for k, v in there.items() if k not in RUN_FIELDS} == {
        k: v for k, v in here.items() if k not in RUN_FIELDS}
    od = here["strategies"]["on-demand"]
    assert od["pages_lost"] > 0 and od["rereplication_copies"] > 0
    assert here["faults"]["failures"] == 40


def test_a_scheduler_that_does_not_answer_exits_2_naming_the_address():
    import socket

    # distributed's defaults join dask's config when it is first imported: imported inside
    # the set() below, they would leave with it, and every later cluster in this process
    # would find no "distributed" configuration at all
    import dask
    import distributed  # noqa: F401

    with socket.socket() as s:  # a loopback port nobody listens on
        s.bind(("127.0.0.1", 0))
        address = f"tcp://127.0.0.1:{s.getsockname()[1]}"
    with dask.config.set({"distributed.comm.timeouts.connect": "2s"}):
        result = CliRunner().invoke(app, ["compare", *SMALL, "--dask", address])
    assert result.exit_code == 2, result.output
    assert f"--dask {address!r}: no scheduler answers" in result.output


@pytest.mark.parametrize("n_chunks", [1, 8, 37, 100, 1000])
@pytest.mark.parametrize("n_workers", [1, 2, 3, 8])
def test_chunk_groups_tile_the_chunks_four_per_worker_and_end_together(n_chunks, n_workers):
    import heapq

    from satpage.parallel import chunk_groups
    groups = chunk_groups(n_chunks, n_workers)
    assert [a for a, _ in groups] == [0] + [b for _, b in groups[:-1]]  # consecutive, no gap
    assert groups[-1][1] == n_chunks
    sizes = [b - a for a, b in groups]
    assert all(s >= 1 for s in sizes) and len(groups) <= 4 * n_workers  # few accumulators travel back
    assert max(sizes) - min(sizes) <= 1
    # list scheduling of equal-cost chunks, as the scheduler hands groups out in order:
    # the last worker ends within one chunk of the ideal n / workers
    free = [0.0] * n_workers
    for s in sizes:
        heapq.heappush(free, heapq.heappop(free) + s)
    assert max(free) <= n_chunks / n_workers + 1


@pytest.mark.integration
def test_a_worker_tunes_its_allocator_before_it_runs_chunks():
    """A Dask worker starts with the nanny's MALLOC_TRIM_THRESHOLD_, under which every
    large array is a fresh mapping (tests/test_allocator.py measures it); the worker
    fixes its thresholds when it builds its World (satpage.parallel._world)."""
    from distributed import Client, LocalCluster

    def state():
        import os

        from satpage.allocator import is_tuned
        return os.environ.get("MALLOC_TRIM_THRESHOLD_"), is_tuned()

    with (LocalCluster(n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1",
                       dashboard_address="127.0.0.1:0") as cluster, Client(cluster) as client):
        before = list(client.run(state).values())
        compare_json("--dask", cluster.scheduler_address)
        after = list(client.run(state).values())
    assert before == [("65536", False)] and after == [("65536", True)]
