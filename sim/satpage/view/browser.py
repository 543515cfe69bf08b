"""Driving the view page in a headless chromium (selenium): what the browser tests and
bench/bench_view.py share. Debian's `chromium` and `chromium-driver` (scripts/setup.sh)."""

from __future__ import annotations

import shutil
import time

import numpy as np

__all__ = ["CHROMIUM", "CHROMEDRIVER", "new_driver", "wait_ready", "step_times", "STEP_JS"]

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"


def new_driver(window: tuple[int, int] = (1400, 900)):
    """A headless chromium at device scale 1 that keeps the console log."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for a in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
              f"--window-size={window[0]},{window[1]}", "--force-device-scale-factor=1",
              "--disable-extensions", "--no-first-run", "--allow-file-access-from-files"):
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    drv = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    drv.set_script_timeout(120)
    return drv


def wait_ready(drv, url: str, timeout_s: float = 60.0) -> None:
    """Open ``url`` and wait for the page's data to load; RuntimeError with the page's
    error when it fails."""
    drv.get(url)
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout_s:
        ready, err = drv.execute_script(
            "const h = window.satpageView; return h ? [h.ready, h.error] : [false, null]")
        if err:
            raise RuntimeError(f"page error: {err}")
        if ready:
            return
        time.sleep(0.05)
    raise RuntimeError(f"the page did not become ready in {timeout_s:g} s")


STEP_JS = """
const done = arguments[arguments.length - 1];
const n = arguments[0];
const painted = arguments[1];
const slider = document.getElementById('slider');
const g = document.getElementById('map').getContext('2d');
const out = [];
function input() {
  slider.value = String((Number(slider.value) + 1) % (Number(slider.max) + 1));
  slider.dispatchEvent(new Event('input'));
}
function step() {
  if (out.length >= n) { done(out); return; }
  const t0 = performance.now();
  input();
  const js = performance.now() - t0;
  if (!painted) {
    // redraw: the input handler's drawing plus its rasterisation, which reading one
    // pixel back forces (the canvas is software-rendered in headless chromium)
    g.getImageData(0, 0, 1, 1);
    out.push([js, performance.now() - t0]);
    setTimeout(step, 0);
    return;
  }
  // two animation frames later the redrawn frame has been painted (vsync waits included)
  requestAnimationFrame(() => requestAnimationFrame(() => {
    out.push([js, performance.now() - t0]); step();
  }));
}
step();
"""


def step_times(drv, n: int, painted: bool = False) -> np.ndarray:
    """float (n, 2) ms per slider step: [input handler, redraw] where redraw is the
    handler plus rasterisation (``painted=False``) or the time until the frame after
    it has been painted (``painted=True``: two animation frames, vsync included)."""
    return np.array(drv.execute_async_script(STEP_JS, int(n), bool(painted)), float)
