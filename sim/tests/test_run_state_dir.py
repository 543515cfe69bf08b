"""The state directory of a cluster started for one run (`cluster chaos`, a failure replay):
never the working directory, since it holds every satellite's TLS private key and the
token signing key; removed after a run that ends well, kept and named otherwise."""

import os
import shutil
import stat
import tempfile
from pathlib import Path

import pytest

from satpage.cluster.local import run_state_dir


def _key(rd):
    tls = rd.path / "tls"
    tls.mkdir()
    (tls / "satellite-0-key.pem").write_text("private")


def test_by_default_it_is_a_private_directory_under_the_system_temp_dir_not_the_cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    said = []
    with run_state_dir(None, prefix="satpage-chaos-", say=said.append) as rd:
        _key(rd)
        assert rd.own
        assert rd.path.parent == Path(tempfile.gettempdir())
        assert rd.path.name.startswith("satpage-chaos-")
        assert stat.S_IMODE(os.stat(rd.path).st_mode) == 0o700
    assert not rd.path.exists() and rd.kept is False
    assert list(tmp_path.iterdir()) == [] and said == []


def test_a_run_that_raises_keeps_it_and_names_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    said = []
    with pytest.raises(RuntimeError), run_state_dir(None, prefix="satpage-chaos-", say=said.append) as rd:
        _key(rd)
        raise RuntimeError("a satellite did not start")
    try:
        assert (rd.path / "tls" / "satellite-0-key.pem").is_file()
        assert said == [f"state directory kept after a failed run: {rd.path} (logs, history; TLS keys in tls/)"]
        assert list(tmp_path.iterdir()) == []
    finally:
        shutil.rmtree(rd.path)


@pytest.mark.parametrize("how", ["failed", "keep"])
def test_a_failed_outcome_or_keep_keeps_it(how):
    said = []
    with run_state_dir(None, prefix="satpage-chaos-", keep=how == "keep", say=said.append) as rd:
        _key(rd)
        rd.failed = how == "failed"
    try:
        assert rd.kept and rd.path.is_dir()
        assert str(rd.path) in said[0]
        assert ("(--keep)" in said[0]) == (how == "keep")
    finally:
        shutil.rmtree(rd.path)


def test_a_given_directory_is_used_and_left_in_place(tmp_path):
    given = tmp_path / "state"
    with run_state_dir(given, prefix="satpage-chaos-") as rd:
        assert rd.path == given and not rd.own
        given.mkdir()
        _key(rd)
    assert (given / "tls" / "satellite-0-key.pem").is_file() and rd.kept


def test_git_ignores_a_state_directory_and_key_files_in_a_checkout():
    """The belt: a --state-dir (or an older chaos's ./chaos-XXXX) inside a checkout stays out of
    `git add -A`."""
    root = Path(__file__).resolve().parents[2]
    ignored = (root / ".gitignore").read_text(encoding="utf-8").splitlines()
    for pattern in ("chaos-*/", "satpage-chaos-*/", "*-key.pem"):
        assert pattern in ignored, f".gitignore lacks {pattern!r}"
