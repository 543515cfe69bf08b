"""The code version every report records: package version plus git commit when known."""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path

from satpage import __version__

__all__ = ["code_version"]


@functools.cache
def code_version() -> str:
    """``0.1.0+g1a2b3c4`` (``.dirty`` appended with uncommitted changes), or the bare
    package version outside a git checkout."""
    repo = Path(__file__).resolve().parents[2]
    try:
        sha = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "--short=10", "HEAD"],
            capture_output=True, text=True, check=True, timeout=5,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True, text=True, check=True, timeout=5,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return __version__
    return f"{__version__}+g{sha}" + (".dirty" if dirty else "")
