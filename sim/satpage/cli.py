"""The ``satpage`` command: a thin layer over orbit_model, pager and satpage.sim.

Each command lives in its own module under ``satpage.commands`` and is
registered here; a new command is a new module plus one line below.
"""

from __future__ import annotations

import inspect
import sys

import typer

from satpage import __version__
from satpage.commands import cluster, compare, deploy, live, orbit, paper, population, sweep, view
from satpage.console import reflow, stderr

app = typer.Typer(
    name="satpage",
    help="Move client session state between satellites: simulate, compare, deploy.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

app.command("paper")(paper.paper)
app.command("compare", help=compare.help_text())(compare.compare)
app.command("sweep")(sweep.sweep)
app.command("view")(view.view)
app.add_typer(orbit.app, name="orbit")
app.add_typer(population.app, name="population")
app.add_typer(cluster.app, name="cluster")
app.add_typer(deploy.app, name="deploy")
live.app.command("view")(view.live_view)
app.add_typer(live.app, name="live")


def _reflow_help(t: typer.Typer) -> None:
    """Every command's and group's help as reflowed paragraphs (satpage.console.reflow),
    so that help ends lines at the terminal's width, not at the docstring's."""
    for cmd in t.registered_commands:
        cmd.help = reflow(cmd.help or inspect.getdoc(cmd.callback) or "")
    for group in t.registered_groups:
        sub = group.typer_instance
        if group.help:
            group.help = reflow(group.help)
        elif isinstance(sub.info.help, str):
            sub.info.help = reflow(sub.info.help)
        _reflow_help(sub)


_reflow_help(app)


def _version(value: bool) -> None:
    if value:
        typer.echo(__version__)
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="Print the version and exit."),
) -> None:
    """satpage: move client session state between satellites."""


def main() -> None:
    """Entry point: library errors about bad input become ``error: ...`` and exit 2."""
    try:
        app()
    except (ValueError, OSError) as exc:
        stderr.print(f"[bold red]error:[/] {exc}", highlight=False, soft_wrap=True)
        sys.exit(2)


if __name__ == "__main__":
    main()
