"""`satpage deploy ...`: placeholder until issue 11 lands (owner replaces this module)."""

from __future__ import annotations

import typer

from satpage.console import fail

app = typer.Typer(help="Not built yet (issue 11).", no_args_is_help=True)


@app.command("todo")
def todo() -> None:
    """Not built yet (issue 11)."""
    fail("satpage deploy is not built yet (issue 11)")
