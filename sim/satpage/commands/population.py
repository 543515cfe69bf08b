"""`satpage population ...`: placeholder until issue 6 lands (owner replaces this module)."""

from __future__ import annotations

import typer

from satpage.console import fail

app = typer.Typer(help="Not built yet (issue 6).", no_args_is_help=True)


@app.command("todo")
def todo() -> None:
    """Not built yet (issue 6)."""
    fail("satpage population is not built yet (issue 6)")
