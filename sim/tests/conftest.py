"""Fixtures shared by the sim tests of one test process: clusters that several tests
can use as they are, started once and stopped at the end of the session. A test that
uses one carries ``@pytest.mark.xdist_group`` with the fixture's name, so that
``--dist loadgroup`` runs every user on the same worker and one cluster serves them."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

#: the default constellation's cluster: 150 satellites, 301 processes
DEFAULT_SPEC = "walker-star:150/10/1:500:87"
SATPAGE = str(Path(sys.executable).with_name("satpage"))


#: what a local cluster runs: make build's Go binaries and the Debian redis-server
CLUSTER_BINARIES = ("satnode", "gateway", "satcheck")


@pytest.fixture(scope="session")
def cluster_binaries() -> None:
    """Skips the test when a local cluster cannot be started here: the Go binaries
    (``make build``) or redis-server (scripts/setup.sh) missing."""
    from satpage.cluster.local import find_binary

    try:
        for name in CLUSTER_BINARIES:
            find_binary(name)
    except OSError:
        pytest.skip(f"bin/{', bin/'.join(CLUSTER_BINARIES)} missing: run `make build`")
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed (scripts/setup.sh installs it)")


@pytest.fixture(scope="session")
def default_cluster(tmp_path_factory, cluster_binaries):
    """``satpage cluster up`` of the default constellation (secure, the default R),
    as its recorded state; replays through it end their sessions, so tests can follow
    each other on it. Group: ``default-cluster``.

    Its links are not emulated: its users assert counts (moves, hops, copies), which the
    relays count hop by hop with or without the sky's delays, and the delays made their
    sequential replays three times longer (test_cluster_fidelity and the Go linkemu
    tests hold the emulation to the sky)."""
    from satpage.cluster import load_state
    from satpage.cluster.driver import _free_port_base
    from satpage.cluster.local import cluster_down

    state_dir = tmp_path_factory.mktemp("default-cluster")
    up = subprocess.run([SATPAGE, "cluster", "up", "--constellation", DEFAULT_SPEC,
                         "--state-dir", str(state_dir), "--no-emulate-links", "--port-base",
                         str(_free_port_base(DEFAULT_SPEC))],
                        capture_output=True, text=True, timeout=600)
    try:
        assert up.returncode == 0, up.stderr[-3000:]
        yield load_state(state_dir)
    finally:
        # In this process, by signals: a session fixture is torn down in the teardown of
        # its worker's last test, which may be a unit test, where the root conftest
        # refuses to start a process (a `satpage cluster down` would leave 301 running).
        cluster_down(state_dir)
