"""`satpage sweep`: placeholder until issue 7 lands (owner replaces this module)."""

from __future__ import annotations

from satpage.console import fail


def sweep() -> None:
    """Not built yet (issue 7)."""
    fail("satpage sweep is not built yet (issue 7)")
