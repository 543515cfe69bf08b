"""The view data (satpage-view/1) of a compare run, checked against its authorities:
pager's own replay of the whole chunk (holdings at session end), orbit_model's
sub-satellite points (positions), the run's cost accumulators (ISL load)."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest

import pager
from satpage.commands.compare import resolve_scenario
from satpage.simulate import chunk_trace, run_scenario
from satpage.view import FORMAT, ViewData, from_run
from satpage.view.build import sample_sessions, trace_subset
from satpage.view.model import GROUND_HOLDER
from satpage.view.server import ViewServer, render_html

SETS = ["time.duration_s=3600", "run.chunk_sessions=60", "network.background_load=0.3"]


@pytest.fixture(scope="module")
def run():
    sc = resolve_scenario(None, SETS, sessions=150)
    return run_scenario(sc)


@pytest.fixture(scope="module")
def view(run):
    return from_run(run, n_sample=40)


def test_the_view_round_trips_through_its_two_files(view, tmp_path):
    paths = view.write(tmp_path)
    assert [p.name for p in paths] == ["view.json", "view.bin.gz"]
    head = json.loads(paths[0].read_text())
    assert head["format"] == FORMAT == "satpage-view/1"
    assert head["seed"] == 2023 and head["version"].startswith("0.1.0")
    back = ViewData.read(tmp_path)
    assert set(back.arrays) == set(view.arrays)
    for name, arr in view.arrays.items():
        np.testing.assert_array_equal(back.arrays[name], arr, err_msg=name)
    # deterministic bytes: the same data writes the same files
    assert view.to_bytes() == back.to_bytes()


def test_a_broken_array_is_named(view):
    arrays = dict(view.arrays)
    arrays["held_pages"] = arrays["held_pages"][:, :, :-1]
    with pytest.raises(ValueError, match="held_pages"):
        ViewData(view.meta, arrays).validate()
    arrays = dict(view.arrays)
    arrays["sat_plane"] = arrays["sat_plane"].astype(np.int64)
    with pytest.raises(ValueError, match="sat_plane: dtype int64"):
        ViewData(view.meta, arrays).validate()


def test_satellite_positions_are_orbit_models_subsatellite_points(run, view):
    from orbit_model import Constellation, subsatellite_points

    sc = run.scenario
    c = Constellation.from_spec(sc.constellation.spec, epoch=sc.epoch)
    t_ns = np.round(view.arrays["frame_t_s"][[0, 7, -1]] * 1e9).astype(np.int64)
    lat, lon = subsatellite_points(c, t_ns)
    got = view.arrays["sat_latlon_cdeg"][[0, 7, -1]] / 100.0
    np.testing.assert_allclose(got[..., 0], lat.T, atol=0.006)
    dlon = (got[..., 1] - lon.T + 180.0) % 360.0 - 180.0
    assert np.abs(dlon).max() < 0.006 + 1e-9


def test_isl_load_and_pages_held_are_the_runs(run, view):
    names = view.meta["strategies"]
    assert names == list(run.costs)
    for s, name in enumerate(names):
        acc = run.costs[name]
        assert view.arrays["link_load_pages"][s].sum() == acc.link_load.sum()
        np.testing.assert_array_equal(view.arrays["held_pages"][s], acc.held_series().T)
    links = view.arrays["links"]
    assert (links[:, 0] < links[:, 1]).all()
    assert links.shape[0] == run.world.topology.link_exists().sum()


def test_link_utilisation_from_the_view_is_the_link_models(run, view):
    """What the page computes per link and window (background + pages at the link
    rate) equals satpage.linkmodel's utilisation of the run."""
    a = view.arrays
    exists = run.world.topology.link_exists()
    cap = a["link_capacity_bytes_per_s"].astype(float)
    bg = a["link_background_util"].astype(float)
    window_s = np.diff(a["window_edges_s"])
    assert bg.max() == pytest.approx(0.3, rel=1e-6)
    for s, name in enumerate(view.meta["strategies"]):
        want = run.costs[name].utilisation(run.world.links, exists)
        got = bg + a["link_load_pages"][s] * view.meta["page_bytes"] / window_s[:, None] / cap
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


def test_a_fine_population_grid_is_summed_into_half_degree_backdrop_cells():
    from orbit_model import PopulationGrid
    from satpage.view.build import population_layer

    rng = np.random.default_rng(3)
    fine = rng.random((36, 72)) * 1000            # 5 arc-min cells over a 3 x 6 deg patch
    fine[:6, :6] = 0.0
    g = PopulationGrid(fine, 10.0, 50.0, 1 / 12, "test")
    img, meta = population_layer(g)
    assert img.shape == (6, 12) and meta["cell_size_deg"] == pytest.approx(0.5)
    assert img[0, 0] == 0 and img.max() == 255
    # the densest block is the one with the most people per km2 (the cells' areas differ
    # by latitude only, within a row)
    sums = fine.reshape(6, 6, 12, 6).sum(axis=(1, 3))
    lat = 50.0 - (np.arange(6) + 0.5) * 0.5
    dens = sums / np.cos(np.radians(lat))[:, None]
    assert np.unravel_index(np.argmax(img), img.shape) == np.unravel_index(np.argmax(dens),
                                                                           dens.shape)


def test_the_sample_is_seeded_and_spread_over_the_run():
    a = sample_sessions(7, 1000, 50)
    np.testing.assert_array_equal(a, sample_sessions(7, 1000, 50))
    assert not np.array_equal(a, sample_sessions(8, 1000, 50))
    assert a.size == np.unique(a).size == 50 and a.max() > 500
    np.testing.assert_array_equal(sample_sessions(7, 30, 50), np.arange(30))
    # a large run: the sample comes from at most 16 chunks, spread from first to last
    b = sample_sessions(7, 100_000, 200, chunk_sessions=250)
    chunks = np.unique(b // 250)
    assert b.size == 200 and chunks.size <= 16 and chunks[0] == 0 and chunks[-1] == 399
    np.testing.assert_array_equal(sample_sessions(7, 1000, 50, chunk_sessions=250), a)


def test_holdings_at_session_end_equal_pagers_replay_of_the_whole_chunk(run, view):
    """The sampled sessions are re-run on their own; pager's replay of the full chunk
    (every session) is the authority for what each satellite holds at the end."""
    from satpage.simulate import strategy_for

    sc = run.scenario
    a = view.arrays
    names = view.meta["strategies"]
    k_all = a["sess_index"].size
    frames_ns = np.round(a["frame_t_s"] * 1e9).astype(np.int64)
    c = sc.run.chunk_sessions
    checked = 0
    for chunk in np.unique(a["sess_index"] // c):
        ct = chunk_trace(run.world, int(chunk))
        for s, name in enumerate(names):
            full = pager.replay(ct.trace, strategy_for(sc, name))
            vsess = ct.trace.visit_session()
            for k in np.flatnonzero(a["sess_index"] // c == chunk):
                local = int(a["sess_index"][k] - chunk * c)
                vis = np.flatnonzero(vsess == local)
                want: dict[int, int] = {}
                for v in vis:
                    sat = int(ct.trace.visit_satellite[v])
                    want[sat] = want.get(sat, 0) + int(full.held_at_end[v])
                want = {h: p for h, p in want.items() if p > 0}
                # the frame at or after the session end holds the state at the end
                end_ns = int(ct.session_end_ns[local])
                f_end = min(int(np.searchsorted(frames_ns, end_ns)), frames_ns.size - 1)
                o = a["hold_offsets"][s]
                rows = slice(o[k], o[k + 1])
                at = a["hold_frame"][rows] == f_end
                got = dict(zip(a["hold_sat"][rows][at].tolist(),
                               a["hold_pages"][rows][at].tolist(), strict=True))
                if frames_ns[f_end] >= end_ns:
                    got.pop(GROUND_HOLDER, None)
                    assert got == want, (name, int(a["sess_index"][k]))
                    checked += 1
    assert checked >= k_all * len(names) // 2


def test_trace_subset_keeps_each_sessions_accesses(run):
    ct = chunk_trace(run.world, 0)
    sub = trace_subset(ct.trace, np.array([3, 1]))
    tr = ct.trace
    for new, old in enumerate([3, 1]):
        v0, v1 = tr.visit_offsets[old], tr.visit_offsets[old + 1]
        w0, w1 = sub.visit_offsets[new], sub.visit_offsets[new + 1]
        np.testing.assert_array_equal(sub.visit_satellite[w0:w1], tr.visit_satellite[v0:v1])
        np.testing.assert_array_equal(sub.access_page[sub.access_offsets[w0]:sub.access_offsets[w1]],
                                      tr.access_page[tr.access_offsets[v0]:tr.access_offsets[v1]])


def test_session_movements_per_window_add_up_to_pagers_counters(view):
    a = view.arrays
    counters = view.meta["session_counters"]
    moves = sum(a["sess_counters"][..., counters.index(k)]
                for k in ("fault_moves", "handover_moves", "push_moves"))
    np.testing.assert_array_equal(a["sess_window_moves"].sum(axis=2), moves)


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.read()


def test_the_server_serves_the_page_and_the_data_and_nothing_else(view, tmp_path):
    view.write(tmp_path)
    (tmp_path / "secret.txt").write_text("no")
    srv = ViewServer(tmp_path)
    srv.start()
    try:
        assert srv.url.startswith("http://127.0.0.1:")
        page = _get(srv.url).decode()
        assert '<canvas id="map"' in page and 'src="view.js"' in page
        js = _get(srv.url + "view.js")
        assert b"satpageView" in js and len(js) > 10_000
        blob = _get(srv.url + "view.bin.gz")
        assert blob == (tmp_path / "view.bin.gz").read_bytes()
        for bad in ("secret.txt", "../result.json", "view.json/../secret.txt"):
            with pytest.raises(urllib.error.HTTPError) as e:
                urllib.request.urlopen(srv.url + bad, timeout=10)
            assert e.value.code == 404
            e.value.close()
    finally:
        srv.close()


def test_the_self_contained_page_inlines_script_and_data(view, tmp_path):
    view.write(tmp_path)
    page = render_html(tmp_path)
    assert 'src="view.js"' not in page and "SATPAGE_VIEW_INLINE" in page
    assert "http://" not in page.replace("http://www.w3.org", "") \
        and "https://" not in page


def _satpage(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "satpage.cli", *args], capture_output=True,
                          text=True, timeout=300)


@pytest.mark.integration
def test_cli_bad_run_folder_is_an_error_naming_it(tmp_path):
    r = _satpage("view", str(tmp_path / "nope"), "--no-browser")
    assert r.returncode == 2 and "nope" in r.stderr and "error" in r.stderr
    r = _satpage("view", str(tmp_path), "--html", str(tmp_path / "x.html"))
    assert r.returncode == 2 and "view.json" in r.stderr
    r = _satpage("view", str(tmp_path), "--port", "70000", "--no-browser")
    assert r.returncode == 2


@pytest.mark.integration
def test_compare_out_writes_the_view_and_view_html_reads_it(tmp_path):
    out = tmp_path / "run"
    r = _satpage("compare", "--sessions", "40", "--set", "time.duration_s=1800",
                 "--strategies", "proactive,on-demand", "--view-sessions", "10",
                 "--json", "--out", str(out))
    assert r.returncode == 0, r.stderr
    head = json.loads((out / "view.json").read_text())
    assert head["format"] == FORMAT and head["sampled_sessions"] == 10
    assert head["strategies"] == ["proactive", "on-demand"]
    r = _satpage("view", str(out), "--html", str(tmp_path / "v.html"), "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["html"] == str(tmp_path / "v.html")
    assert Path(tmp_path / "v.html").stat().st_size > 100_000


def _clock(now_s: float = 3600.0, speed: float = 60.0):
    from satpage.client import ClockInfo

    return ClockInfo(epoch="2023-06-01T00:00:00Z", speed=speed, now_ns=int(now_s * 1e9),
                     constellation="walker-star:150/10/1:500:87",
                     ephemeris_end_ns=int((now_s + 7200) * 1e9), step_ns=10_000_000_000,
                     policy="highest", sticky=True, min_elevation_deg=10.0)


def test_the_live_view_is_the_constellation_from_the_clock_on_with_each_places_server():
    from orbit_model import Constellation, GroundPoints, elevations_deg, subsatellite_points
    from satpage.view.live import live_view

    clock = _clock()
    v = live_view(clock, [(59.9, 10.7), (-6.2, 106.8)], minutes=30, wall_unix_s=1000.0)
    a = v.arrays
    assert v.meta["source"] == "live" and v.meta["clock"]["now_ns"] == clock.now_ns
    assert a["frame_t_s"][0] == 3600.0 and a["frame_t_s"][-1] == 3600.0 + 1800.0
    c = Constellation.from_spec(clock.constellation, epoch="2023-06-01T00:00:00Z")
    lat, lon = subsatellite_points(c, np.array([clock.now_ns, clock.now_ns + 600 * 10**9]))
    f600 = int(np.searchsorted(a["frame_t_s"], 4200.0))
    np.testing.assert_allclose(a["sat_latlon_cdeg"][[0, f600], :, 0] / 100, lat.T, atol=0.006)
    # each place's serving satellite over the view is visible from it (orbit_model's
    # elevation) whenever it serves
    vo = a["sess_visit_offsets"]
    for k, (plat, plon) in enumerate([(59.9, 10.7), (-6.2, 106.8)]):
        sats = a["visit_sat"][vo[k]:vo[k + 1]]
        starts = np.round(a["visit_start_s"][vo[k]:vo[k + 1]] * 1e9).astype(np.int64)
        assert starts[0] == clock.now_ns and sats.size >= 2
        t_mid = np.r_[starts[1:], int(a["frame_t_s"][-1] * 1e9)] // 2 + starts // 2
        el = elevations_deg(c, GroundPoints.from_degrees(plat, plon), t_mid)
        served = el[0, sats, np.arange(sats.size)]
        assert (served >= 10.0 - 1e-6).all(), served


@pytest.mark.integration
def test_live_view_of_an_unreachable_gateway_is_an_error_naming_it():
    r = _satpage("live", "view", "--gateway", "127.0.0.1:1", "--no-browser")
    assert r.returncode == 2 and "127.0.0.1:1" in r.stderr
    r = _satpage("live", "view", "--gateway", "127.0.0.1:1", "--place", "95,10")
    assert r.returncode == 2 and "--place" in r.stderr
