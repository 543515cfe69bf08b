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
    from satpage.view.server import render_html

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
    _serve(run_dir, port, no_browser, as_json)

def live_view(
    gateway: Annotated[str | None, typer.Option("--gateway", help="HOST:PORT of a live gateway "
                                                "(default: the cluster recorded in --state-dir).")]
    = None,
    state_dir: Annotated[Path | None, typer.Option("--state-dir", help="Where `satpage live up` "
                                                   "recorded its cluster.")] = None,
    tls_dir: Annotated[str | None, typer.Option("--tls-dir", help="TLS material for --gateway "
                                                "(default $SATPAGE_TLS_DIR or the recorded "
                                                "cluster's).")] = None,
    place: Annotated[list[str] | None, typer.Option("--place", help="LAT,LON of a client whose "
                                                     "serving satellites to show (repeatable).")]
    = None,
    minutes: Annotated[float | None, typer.Option("--minutes", help="Constellation minutes "
                                                  "the view covers from now (default: 30 "
                                                  "minutes of wall time at the clock's speed, "
                                                  "at most 24 h).")] = None,
    out: Annotated[Path | None, typer.Option("--out", help="Keep the view files in this "
                                             "folder (default: a temporary one).")] = None,
    port: Annotated[int, typer.Option("--port", help="Port on 127.0.0.1 (0 = any free port).")] = 0,
    no_browser: Annotated[bool, typer.Option("--no-browser", help="Only print the URL.")] = False,
    html: Annotated[Path | None, typer.Option("--html", help="Write a self-contained HTML "
                                              "file instead of serving.")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Debug logging.")] = False,
) -> None:
    """The map of a running live cluster (`satpage live up`): its constellation from the
    gateway's clock onwards, following the clock, and the serving satellites of the
    given places. The live sessions' pages and ISL load are not shown (the gateway does
    not list its live sessions)."""
    import tempfile

    setup_logging(verbose)
    from satpage.client import Gateway, SatpageError
    from satpage.cluster import load_state
    from satpage.view.live import live_view as build_live_view

    places = []
    for p in place or []:
        try:
            lat, lon = (float(x) for x in p.split(","))
        except ValueError:
            fail(f"--place {p!r} is not LAT,LON")
        if not -90 <= lat <= 90 or not -180 <= lon <= 360:
            fail(f"--place {p!r}: latitude must lie in -90..90 and longitude in -180..360")
        places.append((lat, lon))
    if gateway is None:
        st = load_state(state_dir)
        if st is None:
            fail("no live cluster recorded here: give --gateway HOST:PORT or --state-dir")
        gateway, tls_dir = st.gateway, tls_dir or st.tls_dir
    try:
        with Gateway(gateway, tls_dir=tls_dir) as gw:
            clock = gw.clock()
        view = build_live_view(clock, places, minutes)
    except (SatpageError, ValueError) as exc:
        fail(f"live gateway {gateway}: {exc}")
    with tempfile.TemporaryDirectory(prefix="satpage-live-view-") as tmp:
        folder = out or Path(tmp)
        view.write(folder)
        if html is not None:
            from satpage.view.server import render_html

            html.parent.mkdir(parents=True, exist_ok=True)
            html.write_text(render_html(folder))
            stdout.print(f"wrote {html}")
            return
        _serve(folder, port, no_browser, False)


def _serve(run_dir: Path, port: int, no_browser: bool, as_json: bool) -> None:
    from satpage.view.server import ViewServer

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
