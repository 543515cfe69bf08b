"""Repository-wide pytest set-up: package imports and the test tiers.

The component folder ``pager/`` has the same name as the package inside it
(``pager/pager``). Under ``--import-mode=importlib`` pytest names a test module
after its path (``pager.tests.test_x``) and would create a stand-in ``pager``
module; importing the real packages first keeps them in ``sys.modules``.

Tiers: a test that starts another process (redis-server, a cluster, helm,
chromium, a Dask worker, the CLI in a subprocess, git) is marked ``integration``;
every other test is a unit test and ``make test-unit`` runs only those. A unit test
that starts a process fails, whatever it does with the error: the process-starting
primitives every Python path ends in (``_posixsubprocess.fork_exec`` under
subprocess and multiprocessing's spawn and forkserver, ``os.posix_spawn``,
``os.fork``, ``os.system``, the ``exec`` family) are replaced for the setup, call
and teardown of each unit test, and each attempt is recorded and reported even if
the code under test catches the error it raises.

Sharing: under ``--dist loadgroup`` (make's PYTEST_FLAGS) the tests of a module that
use a module-scoped fixture (a cluster, a compare run, a browser) go to one worker,
so the fixture is made once rather than once per worker; a fixture shared across
modules (sim/tests/conftest.py) names its group with ``@pytest.mark.xdist_group``.
"""

from __future__ import annotations

import _posixsubprocess
import os
import subprocess

import pytest

import orbit_model  # noqa: F401
import pager  # noqa: F401
import satpage  # noqa: F401
from satpage.version import code_version

# sim/tests/test_tiers.py runs pytest inside pytest to prove the guard below.
pytest_plugins = ["pytester"]

# subprocess keeps its own reference to fork_exec (``_fork_exec``, imported at load).
_SPAWNERS = [(_posixsubprocess, "fork_exec")] + [
    (subprocess, name) for name in ("_fork_exec",) if getattr(subprocess, name, None)] + [
    (os, name) for name in ("fork", "forkpty", "posix_spawn", "posix_spawnp", "system",
                            "execv", "execve", "execl", "execle", "execlp", "execlpe",
                            "execvp", "execvpe", "spawnv", "spawnve", "spawnvp", "spawnvpe",
                            "popen")
    if hasattr(os, name)]


class ProcessStarted(RuntimeError):
    """A unit-tier test tried to start a process."""


def _what(name: str, args: tuple) -> str:
    """The program a spawn call would have run, for the failure message."""
    for a in args:
        if isinstance(a, (list, tuple)) and a and isinstance(a[0], (str, bytes, os.PathLike)):
            return " ".join(os.fsdecode(x) for x in a[:6])
        if isinstance(a, (str, bytes)) and name != "fork_exec":
            return os.fsdecode(a)
    return name


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    if item.get_closest_marker("integration"):
        return (yield)
    attempts: list[str] = []
    item.stash[_ATTEMPTS] = attempts
    saved = [(mod, name, getattr(mod, name)) for mod, name in _SPAWNERS]

    def refuse(mod, name):
        def spawn(*args, **kwargs):
            attempts.append(f"{name}: {_what(name, args)}")
            raise ProcessStarted(f"a unit test started a process ({name}: {_what(name, args)}); "
                                 "mark the test @pytest.mark.integration or keep it in-process")
        return spawn

    for mod, name, _ in saved:
        setattr(mod, name, refuse(mod, name))
    try:
        return (yield)
    finally:
        for mod, name, fn in saved:
            setattr(mod, name, fn)


_ATTEMPTS = pytest.StashKey[list]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    attempts = item.stash.get(_ATTEMPTS, None)
    if attempts:
        if report.passed:  # the code under test swallowed the error
            report.outcome = "failed"
            report.longrepr = ("unit-tier test started a process (mark it integration): "
                               + "; ".join(attempts))
        attempts.clear()  # reported once, in the phase that made the attempt
    return report


def pytest_configure(config):
    # The reports' version string asks git once per test process, here, outside
    # any test: unit tests then read the cached value.
    code_version()


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(config, items):
    if not config.getoption("loadgroup", False):  # set in an xdist worker of --dist loadgroup
        return
    for item in items:
        if not item.get_closest_marker("xdist_group"):
            info = getattr(item, "_fixtureinfo", None)
            if info and any(d[-1].scope == "module" for d in info.name2fixturedefs.values()):
                item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))
        _name_the_group(item)


def _name_the_group(item) -> None:
    """loadgroup sends tests whose node id ends in ``@group`` to one worker. xdist 3.8
    appends it by setting ``item._nodeid``, which pytest 9 no longer reads (the id is
    ``item._id``, a NodeId); until xdist follows, the suffix is set here the way
    pytest 9 stores it. Without it every test is scheduled alone."""
    try:
        from _pytest.nodeid import NodeId
    except ImportError:  # pytest < 9: xdist's own suffix works
        return
    names = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                    for m in item.iter_markers("xdist_group")})
    if names and "@" not in item.nodeid and hasattr(item, "_id"):
        item._id = NodeId.parse(f"{item.nodeid}@{'_'.join(names)}")
