"""The test tiers: a unit-tier test that starts a process fails, by whatever
route it starts one and even when it swallows the error; an integration test
may. Runs the repository's conftest.py in an inner pytest (pytester)."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

INNER = '''
import multiprocessing
import os
import subprocess

import pytest


def test_subprocess_run():
    subprocess.run(["true"], check=True)


def test_a_swallowed_spawn():
    try:
        subprocess.Popen(["true"]).wait()
    except Exception:
        pass


def test_os_system():
    os.system("true")


def test_multiprocessing_spawn():
    p = multiprocessing.get_context("spawn").Process(target=print)
    p.start()
    p.join()


def test_multiprocessing_fork():
    p = multiprocessing.get_context("fork").Process(target=print)
    p.start()
    p.join()


def test_in_process_work():
    assert sum(range(10)) == 45


@pytest.mark.integration
def test_an_integration_test_may():
    assert subprocess.run(["true"]).returncode == 0


@pytest.fixture(scope="module")
def server():
    return subprocess.Popen(["sleep", "0"]).wait()


def test_a_module_fixture_that_starts_a_process(server):
    pass
'''


@pytest.mark.integration  # the inner integration test starts `true`
def test_a_unit_test_that_starts_a_process_fails_and_an_integration_test_passes(pytester):
    pytester.makeconftest((ROOT / "conftest.py").read_text())
    pytester.makepyfile(test_inner=INNER)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-n", "0")
    outcomes = {r.nodeid.split("::")[-1]: r.outcome
                for r in result.reprec.getreports("pytest_runtest_logreport") if r.when == "call"
                or r.outcome != "passed"}
    assert outcomes == {
        "test_subprocess_run": "failed",
        "test_a_swallowed_spawn": "failed",
        "test_os_system": "failed",
        "test_multiprocessing_spawn": "failed",
        "test_multiprocessing_fork": "failed",
        "test_in_process_work": "passed",
        "test_an_integration_test_may": "passed",
        "test_a_module_fixture_that_starts_a_process": "failed",
    }
    result.stdout.fnmatch_lines(["*unit-tier test started a process*"])
