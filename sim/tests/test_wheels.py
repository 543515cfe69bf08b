"""The wheels as a new user gets them: `make wheels`, a fresh virtual environment
in a temporary folder outside the checkout, the client wheel alone (no numpy), then
all four, and `satpage compare` from an empty folder (its JSON equals the
checkout's, version and timing aside) and `satpage cluster up` with the Go binaries
the wheel carries. Dependencies come from the wheelhouse scripts/setup.sh downloads
(--no-index), else PyPI; every step is bounded in time."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import venv
from pathlib import Path

import pytest
from typer.testing import CliRunner

from satpage.cli import app

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
COMPARE = ["compare", "--set", "sessions.count=50", "--json"]


def _run(argv, *, timeout, **kw) -> subprocess.CompletedProcess:
    out = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **kw)
    assert out.returncode == 0, f"{' '.join(map(str, argv))}: {out.stderr[-3000:]}"
    return out


def _clean_env(tmp: Path) -> dict[str, str]:
    """No trace of the checkout: no PYTHONPATH, no data or binary overrides, the venv's bin
    first, cwd elsewhere."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTHON", "SATPAGE_", "VIRTUAL_ENV"))}
    env["PATH"] = f"{tmp / 'venv' / 'bin'}:{env.get('PATH', '')}"
    env["SATPAGE_CLUSTER_DIR"] = str(tmp / "state")
    return env


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("wheels")
    assert ROOT not in tmp.parents
    dist = tmp / "dist"
    _run(["make", "--no-print-directory", "wheels", f"DIST={dist}"], cwd=ROOT, timeout=600)
    wheels = sorted(p.name for p in dist.glob("*.whl"))
    assert [w.split("-")[0] for w in wheels] == ["orbit_model", "satpage", "satpage_client",
                                                "satpage_pager"]
    venv.create(tmp / "venv", with_pip=True)
    return tmp, dist


#: the dependencies' wheels that scripts/setup.sh downloads (else PyPI, much slower)
WHEELHOUSE = Path(os.environ.get("SATPAGE_WHEELHOUSE",
                                  Path.home() / ".cache" / "satpage" / "wheels"))


def _pip(tmp: Path, *args: str) -> None:
    where = (["--no-index", "--find-links", str(WHEELHOUSE)]
             if (WHEELHOUSE / ".satpage-downloaded").is_file() else [])
    # --no-compile: pip would byte-compile every module of numpy, scipy, dask and the rest
    # (seconds of CPU); what the commands import is compiled when they first run
    _run([str(tmp / "venv" / "bin" / "python"), "-m", "pip", "install", "-q", "--no-compile",
          "--disable-pip-version-check", *where, *args], timeout=900, env=_clean_env(tmp))


def _modules(tmp: Path) -> set[str]:
    out = _run([str(tmp / "venv" / "bin" / "python"), "-m", "pip", "list", "--format=json"],
               timeout=60, env=_clean_env(tmp))
    return {p["name"].lower() for p in json.loads(out.stdout)}


def test_the_client_wheel_alone_brings_grpc_and_protobuf_and_no_numpy(installed):
    tmp, dist = installed
    _pip(tmp, *map(str, dist.glob("satpage_client-*.whl")))
    assert _modules(tmp) - {"pip", "setuptools", "typing-extensions", "typing_extensions"} == {
        "satpage-client", "grpcio", "protobuf"}
    code = ("import sys; from satpage_client import Session, Gateway, SessionExpired, "
            "Unavailable, InvalidArgument; print(sorted(m for m in ('numpy', 'satpage') "
            "if m in sys.modules))")
    out = _run([str(tmp / "venv" / "bin" / "python"), "-c", code], timeout=60,
               env=_clean_env(tmp), cwd=tmp)
    assert out.stdout.strip() == "[]"


def test_compare_and_cluster_up_run_from_the_wheels_in_an_empty_folder(installed):
    tmp, dist = installed
    _pip(tmp, "-c", str(ROOT / "constraints.txt"), *map(str, sorted(dist.glob("*.whl"))))
    empty = tmp / "empty"
    empty.mkdir()
    satpage = str(tmp / "venv" / "bin" / "satpage")
    # the wheel's run (a fresh venv: numba compiles every kernel) beside the authority's
    wheel_run = subprocess.Popen([satpage, *COMPARE], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, env=_clean_env(tmp), cwd=empty)
    try:
        # the authority: the same command from the checkout, in this process (its imports
        # and compiled kernels are loaded already)
        ref = CliRunner().invoke(app, COMPARE)
        out, err = wheel_run.communicate(timeout=600)
    finally:
        if wheel_run.poll() is None:
            wheel_run.kill()
            wheel_run.communicate()
    assert wheel_run.returncode == 0, f"{satpage} {' '.join(COMPARE)}: {err[-3000:]}"
    assert ref.exit_code == 0, ref.output[-3000:]
    got, want = json.loads(out), json.loads(ref.stdout)
    assert list(empty.iterdir()) == []
    for doc in (got, want):  # where it ran, with which code, how fast
        for key in ("version", "scenario_file", "timing_s", "memory"):
            doc.pop(key)
    assert got == want

    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed (scripts/setup.sh installs it)")
    from satpage.cluster.driver import _free_port_base

    spec = "walker-star:4/2/0:500:87"
    up = ["cluster", "up", "--constellation", spec, "--insecure",
          "--port-base", str(_free_port_base(spec))]  # booked: not 17000, which others may hold
    _run([satpage, *up], timeout=120, env=_clean_env(tmp), cwd=empty)
    try:
        st = json.loads(_run([satpage, "cluster", "status", "--json"], timeout=60,
                             env=_clean_env(tmp), cwd=empty).stdout)
        assert st["running"] and st["alive"] == {"redis": 4, "satnode": 4, "gateway": 1}
        record = json.loads((tmp / "state" / "cluster.json").read_text())
        started = {Path(p["argv"][0]).resolve() for p in record["processes"]
                   if p["role"] in ("satnode", "gateway")}
        site = Path(_run([str(tmp / "venv" / "bin" / "python"), "-c",
                          "import satpage, pathlib; print(pathlib.Path(satpage.__file__).parent)"],
                         timeout=60, env=_clean_env(tmp), cwd=empty).stdout.strip())
        assert started == {(site / "bin" / "satnode").resolve(), (site / "bin" / "gateway").resolve()}
        assert ROOT not in site.parents
    finally:
        _run([satpage, "cluster", "down"], timeout=120, env=_clean_env(tmp), cwd=empty)
