"""`satpage paper`: placeholder until issue 4 lands (owner replaces this module)."""

from __future__ import annotations

from satpage.console import fail


def paper() -> None:
    """Not built yet (issue 4)."""
    fail("satpage paper is not built yet (issue 4)")
