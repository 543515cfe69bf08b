"""Serving the view: a small HTTP server on the loopback interface, or one
self-contained HTML file (script and data inlined; it opens from disk, offline).

Routes: ``/`` the page, ``/view.js`` its script, ``/view.json`` and ``/view.bin.gz``
the run's view data. Any other path is 404; nothing else of the run folder is served.
"""

from __future__ import annotations

import base64
import json
import logging
import threading
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path

from satpage.view.model import BLOB_NAME, FORMAT, JSON_NAME

__all__ = ["ViewServer", "render_html", "static_file"]

log = logging.getLogger(__name__)

_MARK = "<!--satpage-view-data-->"
_SCRIPT = '<script src="view.js"></script>'


def static_file(name: str) -> bytes:
    """A file of satpage/view/static (the page and its bundled script)."""
    path = resources.files("satpage.view") / "static" / name
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise ValueError(f"{path} is missing: build the front end (sim/web/README.md)") from None


def _check_run(run_dir: Path) -> dict:
    head_path = run_dir / JSON_NAME
    if not run_dir.is_dir():
        raise ValueError(f"run folder {str(run_dir)!r} does not exist")
    if not head_path.is_file():
        raise ValueError(f"{run_dir}: no {JSON_NAME}; write one with "
                         f"`satpage compare --out {run_dir}`")
    head = json.loads(head_path.read_text())
    if head.get("format") != FORMAT:
        raise ValueError(f"{head_path}: format {head.get('format')!r}, this satpage reads "
                         f"{FORMAT!r}")
    if not (run_dir / head.get("blob", BLOB_NAME)).is_file():
        raise ValueError(f"{run_dir}: {head.get('blob', BLOB_NAME)} is missing")
    return head


def render_html(run_dir: Path) -> str:
    """The page with its script and the run's view data inlined (no other file needed)."""
    run_dir = Path(run_dir)
    head = _check_run(run_dir)
    blob = base64.b64encode((run_dir / head["blob"]).read_bytes()).decode("ascii")
    page = static_file("index.html").decode()
    script = static_file("view.js").decode()
    data = json.dumps({"head": head, "blob": blob}, separators=(",", ":"))
    # "</" cannot end the script element early once escaped; JSON reads "<\/" as "</"
    data = data.replace("</", "<\\/")
    script = script.replace("</script", "<\\/script")
    page = page.replace(_MARK, f"<script>globalThis.SATPAGE_VIEW_INLINE = {data};</script>")
    return page.replace(_SCRIPT, f"<script>{script}</script>")


class _Handler(BaseHTTPRequestHandler):
    server_version = "satpage-view"

    def __init__(self, *args, run_dir: Path, **kwargs) -> None:
        self.run_dir = run_dir
        super().__init__(*args, **kwargs)

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        path = self.path.split("?", 1)[0]
        routes = {
            "/": (lambda: static_file("index.html"), "text/html; charset=utf-8"),
            "/index.html": (lambda: static_file("index.html"), "text/html; charset=utf-8"),
            "/view.js": (lambda: static_file("view.js"), "text/javascript; charset=utf-8"),
            f"/{JSON_NAME}": (lambda: (self.run_dir / JSON_NAME).read_bytes(),
                              "application/json"),
            f"/{BLOB_NAME}": (lambda: (self.run_dir / BLOB_NAME).read_bytes(),
                              "application/octet-stream"),
        }
        if path not in routes:
            self.send_error(404, f"{path} is not part of the view")
            return
        make, ctype = routes[path]
        try:
            body = make()
        except (OSError, ValueError) as exc:
            self.send_error(500, str(exc))
            return
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args) -> None:  # noqa: A002 (base class's name)
        log.debug("view server: " + format, *args)


class ViewServer:
    """The loopback HTTP server of one run folder. ``port`` 0 picks a free port."""

    def __init__(self, run_dir: Path, port: int = 0, host: str = "127.0.0.1") -> None:
        if host not in ("127.0.0.1", "::1", "localhost"):
            raise ValueError(f"the view server listens on the loopback interface only, "
                             f"not {host!r}")
        if not 0 <= port <= 65535:
            raise ValueError(f"--port must be in 0..65535, got {port}")
        self.run_dir = Path(run_dir)
        _check_run(self.run_dir)
        self.httpd = ThreadingHTTPServer((host, port), partial(_Handler, run_dir=self.run_dir))
        self.httpd.daemon_threads = True

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}/"

    def serve_forever(self) -> None:
        self.httpd.serve_forever(poll_interval=0.2)

    def start(self) -> threading.Thread:
        """Serve in a daemon thread (tests, notebooks)."""
        t = threading.Thread(target=self.serve_forever, daemon=True, name="satpage-view")
        t.start()
        return t

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
