"""`satpage view RUN_DIR`: the interactive map of a finished `compare --out` run.

Serves the page from a small HTTP server on 127.0.0.1 and prints its URL (opens a
browser unless ``--no-browser``), or with ``--html FILE`` writes one self-contained
HTML file (script and data inlined) and exits. Everything is local: the script is
bundled into the package (sim/web), the land outlines are in it, the population
backdrop is in the run's view data.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated

import typer

from satpage.console import fail, print_json, setup_logging, stderr, stdout

__all__ = ["view"]

log = logging.getLogger(__name__)


def view(
    run_dir: Annotated[Path, typer.Argument(help="Folder written by `satpage compare --out`.")],
    port: Annotated[int, typer.Option("--port", help="Port on 127.0.0.1 (0 = any free port).")] = 0,
    no_browser: Annotated[bool, typer.Option("--no-browser",
                                             help="Only print the URL.")] = False,
    html: Annotated[Path | None, typer.Option("--html", help="Write a self-contained HTML "
                                              "file instead of serving.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object "
                                          "({\"url\"} or {\"html\"}) on stdout.")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Debug logging.")] = False,
) -> None:
    """Open the interactive map of a finished run: satellites over the population,
    ISL load, clients, and a session's pages along its trail, per strategy."""
    setup_logging(verbose)
    from satpage.view.server import ViewServer, render_html

    if html is not None:
        try:
            page = render_html(run_dir)
        except ValueError as exc:
            fail(str(exc))
        html.parent.mkdir(parents=True, exist_ok=True)
        html.write_text(page)
        if as_json:
            print_json({"html": str(html), "bytes": len(page.encode())})
        else:
            stdout.print(f"wrote {html} ({len(page.encode()) / 1e6:.1f} MB)")
        return
    try:
        server = ViewServer(run_dir, port)
    except ValueError as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}")
    url = server.url
    if as_json:
        print_json({"url": url})
    else:
        # plain print: the URL on a line of its own, for scripts and tests
        typer.echo(url)
    stderr.print(f"serving {run_dir} at {url} (Ctrl-C stops)")
    if not no_browser:
        import webbrowser
        webbrowser.open(url)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
