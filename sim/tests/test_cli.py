import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from satpage.cli import app
from satpage.version import code_version


def test_help_lists_every_command():
    result = CliRunner().invoke(app, ["--help"])
    assert result.exit_code == 0
    for command in ("paper", "compare", "sweep", "orbit", "population", "cluster", "deploy"):
        assert command in result.output


@pytest.mark.integration
def test_the_installed_entry_point_runs():
    exe = Path(sys.executable).with_name("satpage")
    out = subprocess.run([str(exe), "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == code_version().split("+")[0]


def test_code_version_names_the_commit_inside_a_checkout():
    assert "+g" in code_version()
