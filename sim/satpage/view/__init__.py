"""`satpage view`: an interactive offline map of a run (satellites, ISL load, clients,
a session's pages along its trail of satellites).

- ``model``: the data format ``satpage-view/1`` (view.json + view.bin.gz), `ViewData`
- ``build``: ViewData from a finished `compare` run or from parts (synthetic, live)
- ``live``: ViewData of a running live cluster from its gateway's clock (`satpage live view`)
- ``synthetic``: a Starlink-sized synthetic view (the speed test, bench-view)
- ``browser``: headless-chromium helpers shared by the browser tests and bench-view
- ``server``: the loopback HTTP server and the self-contained HTML page
- ``static/``: the page (index.html) and its bundled script (view.js, built from
  sim/web by esbuild; sim/web/README.md)
"""

from satpage.view.build import from_run, view_from_parts
from satpage.view.model import FORMAT, ViewData

__all__ = ["FORMAT", "ViewData", "from_run", "view_from_parts"]
