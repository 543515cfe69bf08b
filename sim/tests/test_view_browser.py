"""`satpage view` in a real headless browser (Debian's chromium + chromium-driver,
driven by selenium): the page served by the real `satpage view` server process for a
real `satpage compare --out` run, checked against the run's data and orbit_model,
and a screenshot checked against simple pixel facts. The speed test draws a
Starlink-sized view (4,408 satellites, 10,000 sessions) and logs the redraw times.

scripts/setup.sh installs the browser; without it the tests skip, except under CI
(CI=true), where a missing browser is a failure.
"""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from satpage.view import ViewData
from satpage.view.browser import CHROMEDRIVER, CHROMIUM, new_driver, step_times, wait_ready

pytestmark = pytest.mark.integration  # starts processes: chromium and chromedriver

log = logging.getLogger(__name__)

WINDOW = (1400, 900)
#: a slider step must redraw within this (issue 21): the median redraw (input handler
#: plus rasterisation) is held to it; p90, max and the time to the painted frame are logged
STEP_BUDGET_MS = 100.0


def _need_browser():
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not Path(p).exists()]
    try:
        import selenium  # noqa: F401
    except ImportError:
        missing.append("selenium (pip)")
    if missing:
        msg = f"headless browser missing: {missing} (scripts/setup.sh installs them)"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)


@pytest.fixture(scope="module")
def browser():
    _need_browser()
    drv = new_driver(WINDOW)
    yield drv
    drv.quit()


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("view-run") / "run"
    r = subprocess.run([sys.executable, "-m", "satpage.cli", "compare", "--sessions", "150",
                        "--set", "time.duration_s=3600", "--set", "network.background_load=0.3",
                        "--view-sessions", "40", "--json",
                        "--out", str(out)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return out


@pytest.fixture(scope="module")
def server_url(run_dir):
    """The real `satpage view` process, on a free loopback port."""
    proc = subprocess.Popen([sys.executable, "-m", "satpage.cli", "view", str(run_dir),
                             "--no-browser", "--port", "0"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), (url, proc.stderr.read() if proc.poll() else "")
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        proc.stdout.close()
        proc.stderr.close()


def _load(drv, url: str) -> None:
    try:
        wait_ready(drv, url)
    except RuntimeError as exc:
        pytest.fail(str(exc))


def _console_errors(drv) -> list[str]:
    return [e["message"] for e in drv.get_log("browser") if e["level"] == "SEVERE"]


def _screenshot(drv):
    from PIL import Image

    img = np.asarray(Image.open(io.BytesIO(drv.get_screenshot_as_png())).convert("RGB"))
    rect = drv.execute_script("const r = document.getElementById('map').getBoundingClientRect();"
                              "return [r.left, r.top, r.width, r.height]")
    return img, [int(round(v)) for v in rect]


def _is_satellite_colour(px: np.ndarray) -> bool:
    """#e8eef5 (plain) or #39d0ff (holding pages), allowing for blending at the edges."""
    r, g, b = (int(v) for v in px)
    return (r > 180 and g > 180 and b > 180) or (r < 120 and g > 160 and b > 200)


def _sat_pixels_hit(img, rect, pixels) -> float:
    x0, y0 = rect[0], rect[1]
    hit = 0
    for x, y in pixels:
        xi, yi = int(x0 + x), int(y0 + y)
        patch = img[max(yi - 1, 0):yi + 2, max(xi - 1, 0):xi + 2].reshape(-1, 3)
        hit += any(_is_satellite_colour(p) for p in patch)
    return hit / len(pixels)


def _lonlat_px(rect, lat, lon):
    return (rect[0] + (lon + 180) / 360 * rect[2], rect[1] + (90 - lat) / 180 * rect[3])


def test_the_page_loads_without_errors_and_draws_backdrop_and_satellites(browser, server_url,
                                                                         tmp_path):
    _load(browser, server_url)
    assert _console_errors(browser) == []
    n = browser.execute_script("return satpageView.meta().satellites")
    assert n == 150
    img, rect = _screenshot(browser)
    (tmp_path / "view.png").write_bytes(browser.get_screenshot_as_png())
    assert rect[2] > 600 and abs(rect[3] - rect[2] / 2) <= 1
    # the population backdrop: warm (amber) cells over India and eastern China, none in
    # the South Pacific, whose pixels stay ocean blue
    def region(lat0, lat1, lon0, lon1):
        xa, ya = _lonlat_px(rect, lat1, lon0)
        xb, yb = _lonlat_px(rect, lat0, lon1)
        return img[int(ya):int(yb), int(xa):int(xb)].reshape(-1, 3).astype(int)

    india = region(15, 30, 72, 88)
    warm = (india[:, 0] > 120) & (india[:, 0] > india[:, 2] + 60)
    assert warm.mean() > 0.25, warm.mean()
    pacific = region(-45, -20, -140, -110)
    warm_p = (pacific[:, 0] > 120) & (pacific[:, 0] > pacific[:, 2] + 60)
    assert warm_p.mean() < 0.01
    assert np.median(pacific[:, 2]) > np.median(pacific[:, 0])
    # the satellites: a satellite-coloured pixel where the page says each one is
    pixels = browser.execute_script(f"return [...Array({n}).keys()].map(satpageView.satPixel)")
    assert _sat_pixels_hit(img, rect, pixels) > 0.9


def test_satellites_move_with_the_slider_to_orbit_models_positions(browser, server_url, run_dir):
    from selenium.webdriver.common.keys import Keys

    from orbit_model import Constellation, subsatellite_points

    _load(browser, server_url)
    view = ViewData.read(run_dir)
    sats = [0, 37, 149]
    slider = browser.find_element("id", "slider")
    slider.click()                      # focus; the click may move the slider: read it back
    slider.send_keys(Keys.HOME)
    for _ in range(5):
        slider.send_keys(Keys.ARROW_RIGHT)
    frame = browser.execute_script("return satpageView.frame")
    assert frame == 5 and slider.get_attribute("value") == "5"
    before = [view.arrays["sat_latlon_cdeg"][0, i] / 100 for i in sats]
    after = browser.execute_script(f"return {sats}.map(i => satpageView.satLatLon(i))")
    for b, a in zip(before, after, strict=True):
        assert abs(a[0] - b[0]) + abs(a[1] - b[1]) > 5.0      # 10 min at 7.6 km/s: ~ 40 deg
    # where orbit_model puts them at the frame's time
    meta = view.meta
    c = Constellation.from_spec(meta["constellation"], epoch=meta["epoch"])
    t_ns = np.array([round(view.arrays["frame_t_s"][frame] * 1e9)], np.int64)
    lat, lon = subsatellite_points(c, t_ns)
    for i, a in zip(sats, after, strict=True):
        assert abs(a[0] - lat[i, 0]) < 0.01
        assert abs((a[1] - lon[i, 0] + 180) % 360 - 180) < 0.01
    # and the canvas shows them there
    img, rect = _screenshot(browser)
    pixels = browser.execute_script("return [...Array(150).keys()].map(satpageView.satPixel)")
    assert _sat_pixels_hit(img, rect, pixels) > 0.9
    assert _console_errors(browser) == []


def test_selecting_a_session_shows_its_trail_and_pages_per_strategy(browser, server_url, run_dir,
                                                                    tmp_path):
    from selenium.webdriver.support.ui import Select

    _load(browser, server_url)
    view = ViewData.read(run_dir)
    a = view.arrays
    names = view.meta["strategies"]
    s_od = names.index("on-demand")
    vo = a["sess_visit_offsets"]
    nvis = np.diff(vo)
    k = int(np.argmax(nvis))                     # the sampled session with the longest trail
    assert nvis[k] >= 3
    # a frame inside its last visit
    t_last = a["visit_start_s"][vo[k + 1] - 1]
    frames = a["frame_t_s"]
    f = int(np.searchsorted(frames, t_last))
    f = min(f, frames.size - 1)
    assert frames[f] <= a["sess_t_s"][k, 1]
    Select(browser.find_element("id", "sessions")).select_by_value(str(k))
    Select(browser.find_element("id", "strategy")).select_by_value(str(s_od))
    browser.execute_script(f"satpageView.setFrame({f})")
    got = browser.execute_script(f"return satpageView.session({k}, {s_od})")
    want_trail = [int(x) for x, t in zip(a["visit_sat"][vo[k]:vo[k + 1]],
                                         a["visit_start_s"][vo[k]:vo[k + 1]], strict=True)
                  if t <= frames[f]]
    assert got["trail"] == want_trail and len(set(want_trail)) >= 2
    assert got["serving"] == want_trail[-1] and got["active"]
    o = a["hold_offsets"][s_od]
    rows = slice(o[k], o[k + 1])
    at = a["hold_frame"][rows] == f
    want = dict(zip(a["hold_sat"][rows][at].tolist(), a["hold_pages"][rows][at].tolist(),
                    strict=True))
    assert {h["sat"]: h["pages"] for h in got["holders"]} == want
    assert len(want) >= 2                         # on-demand leaves pages along the trail
    # the side panel: one column per strategy, each with its trail and holders
    cols = browser.find_elements("css selector", "#session .col")
    assert [c.find_element("css selector", ".sn").text for c in cols] == names
    assert " → ".join(f"#{x}" for x in dict.fromkeys(want_trail)) in cols[s_od].text
    # side by side: one small map per strategy, on-demand's with its holders' discs
    minis = browser.find_elements("css selector", "#session canvas.mini")
    assert len(minis) == len(names)
    r = minis[s_od].rect
    img, _ = _screenshot(browser)
    crop = img[int(r["y"]):int(r["y"] + r["height"]), int(r["x"]):int(r["x"] + r["width"])]
    crop = crop.reshape(-1, 3).astype(int)
    assert ((crop[:, 0] > 200) & (crop[:, 1] < 140) & (crop[:, 2] > 150)).sum() > 20
    # the trail is drawn: magenta (#ff5ac8) holder rings on the map near the holders
    img, rect = _screenshot(browser)
    (tmp_path / "session.png").write_bytes(browser.get_screenshot_as_png())
    pix = browser.execute_script("return Object.keys(arguments[0]).map(Number)"
                                 ".filter(s => s >= 0).map(satpageView.satPixel)", want)
    for x, y in pix:
        xi, yi = int(rect[0] + x), int(rect[1] + y)
        patch = img[yi - 12:yi + 13, xi - 12:xi + 13].reshape(-1, 3).astype(int)
        magenta = (patch[:, 0] > 200) & (patch[:, 1] < 140) & (patch[:, 2] > 150)
        assert magenta.any(), (x, y)
    assert _console_errors(browser) == []


def test_links_are_coloured_by_utilisation_and_hover_gives_the_numbers(browser, server_url,
                                                                       run_dir):
    from selenium.webdriver.common.action_chains import ActionChains

    _load(browser, server_url)
    view = ViewData.read(run_dir)
    a = view.arrays
    assert browser.find_element("id", "linkmetric").get_attribute("value") == "util"
    browser.execute_script("satpageView.setFrame(30)")
    w = browser.execute_script("return satpageView.window()")
    # the busiest link of on-demand in this window: the page's numbers are the data's
    s = view.meta["strategies"].index("on-demand")
    load = a["link_load_pages"][s, w]
    l_busy = int(np.argmax(load))
    assert load[l_busy] > 0
    got = browser.execute_script(f"return satpageView.linkValue({s}, {w}, {l_busy})")
    window_s = a["window_edges_s"][w + 1] - a["window_edges_s"][w]
    want = (a["link_background_util"][w, l_busy] + load[l_busy] * view.meta["page_bytes"]
            / window_s / a["link_capacity_bytes_per_s"][l_busy])
    assert got["pages"] == load[l_busy]
    assert got["util"] == pytest.approx(float(want), rel=1e-5)
    # hovering a satellite shows its pages held per strategy
    i = 17
    x, y = browser.execute_script(f"return satpageView.satPixel({i})")
    canvas = browser.find_element("id", "map")
    size = canvas.size
    ActionChains(browser).move_to_element_with_offset(
        canvas, int(x - size["width"] / 2), int(y - size["height"] / 2)).perform()
    tip = browser.find_element("id", "tip")
    assert tip.is_displayed()
    assert f"satellite {i}" in tip.text and "pages held" in tip.text
    assert _console_errors(browser) == []


def test_the_self_contained_html_file_works_from_disk(browser, run_dir, tmp_path):
    page = tmp_path / "view.html"
    r = subprocess.run([sys.executable, "-m", "satpage.cli", "view", str(run_dir), "--html",
                        str(page)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    _load(browser, page.as_uri())
    assert browser.execute_script("return satpageView.nFrames()") == \
        json.loads((run_dir / "view.json").read_text())["arrays"]["frame_t_s"]["shape"][0]
    browser.execute_script("satpageView.setFrame(3)")
    img, rect = _screenshot(browser)
    pixels = browser.execute_script("return [...Array(150).keys()].map(satpageView.satPixel)")
    assert _sat_pixels_hit(img, rect, pixels) > 0.9
    assert _console_errors(browser) == []


@pytest.mark.slow
def test_slider_step_times_are_logged_for_starlink_and_10000_sessions(browser,
                                                                              tmp_path):
    from satpage.view.server import ViewServer
    from satpage.view.synthetic import synthetic_view

    t0 = time.perf_counter()
    v = synthetic_view(n_sessions=10_000, n_sample=200)
    v.write(tmp_path)
    build_s = time.perf_counter() - t0
    assert v.meta["satellites"] == 4408 and v.arrays["client_t_s"].shape[0] == 10_000
    srv = ViewServer(tmp_path)
    srv.start()
    try:
        _load(browser, srv.url)
        browser.execute_script("satpageView.selectSession(5)")
        step_times(browser, 5)                                 # warm-up (JIT)
        redraw = step_times(browser, 40)
        painted = step_times(browser, 40, painted=True)
        parts = browser.execute_script("return satpageView.parts")
        assert _console_errors(browser) == []
    finally:
        srv.close()
    js_ms, redraw_ms, paint_ms = redraw[:, 0], redraw[:, 1], painted[:, 1]

    def q(a):
        return (f"p50 {np.median(a):.1f} ms, p90 {np.percentile(a, 90):.1f} ms, "
                f"max {a.max():.1f} ms")

    msg = (f"view speed, 4,408 satellites, 8,816 ISLs, 10,000 sessions (200 sampled), "
           f"{(tmp_path / 'view.bin.gz').stat().st_size / 1e6:.1f} MB data, built in "
           f"{build_s:.1f} s, 40 slider steps: script {q(js_ms)}; redraw (script + raster) "
           f"{q(redraw_ms)}; to the painted frame (+ vsync waits) {q(paint_ms)}; "
           f"last frame's parts (ms) {({k: round(v, 1) for k, v in parts.items()})}; "
           f"target {STEP_BUDGET_MS:.0f} ms for the median redraw (make bench-view); load average "
           f"{os.getloadavg()[0]:.1f}")
    log.warning(msg)
    print(msg)
    # The 100 ms target is held by `make bench-view` (exit 1 over it), not here: a timed
    # assertion in the default suite would fail on a loaded machine, not on slow code.
    assert np.all(np.isfinite(redraw_ms)) and redraw_ms.size == 40, msg


CLOCK_TICK_S = 0.25  # the live view's clock timer (sim/web/src/main.js, follow)


def test_the_live_view_follows_the_cluster_clock_until_the_slider_moves(browser, tmp_path):
    from selenium.webdriver.common.keys import Keys

    from satpage.client import ClockInfo
    from satpage.view.live import live_view
    from satpage.view.server import ViewServer

    speed = 600.0                     # 10 constellation minutes per wall second
    clock = ClockInfo(epoch="2023-06-01T00:00:00Z", speed=speed, now_ns=3600 * 10**9,
                      constellation="walker-star:150/10/1:500:87",
                      ephemeris_end_ns=6 * 3600 * 10**9, step_ns=10 * 10**9, policy="highest",
                      sticky=True, min_elevation_deg=10.0)
    view = live_view(clock, [(59.9, 10.7)], minutes=240, wall_unix_s=time.time())
    view.write(tmp_path)
    srv = ViewServer(tmp_path)
    srv.start()
    try:
        _load(browser, srv.url)
        frames = view.arrays["frame_t_s"]
        time.sleep(1.5)
        def frame_at(wall_s: float) -> int:
            t = 3600.0 + speed * (wall_s - view.meta["clock"]["wall_unix_s"])
            return int(np.searchsorted(frames, t, side="right")) - 1

        for _ in range(2):
            # The page sets its frame from the clock every 250 ms (main.js, follow), so
            # the frame it shows was taken at most one tick, and the tick's lateness on
            # a loaded machine, before the query; and no later than its answer.
            before = time.time()
            got = browser.execute_script("return [satpageView.following(), satpageView.frame]")
            lo, hi = frame_at(before - 2 * CLOCK_TICK_S), frame_at(time.time())
            assert got[0] and lo <= got[1] <= hi, (got, lo, hi)
            time.sleep(1.0)
        assert got[1] >= 8                                    # it moved on by itself
        slider = browser.find_element("id", "slider")
        slider.send_keys(Keys.HOME)
        time.sleep(0.6)
        assert browser.execute_script("return [satpageView.following(), satpageView.frame]") \
            == [False, 0]
        assert "live: following the cluster clock at 600x" in \
            browser.find_element("id", "subtitle").text
        assert _console_errors(browser) == []
    finally:
        srv.close()
