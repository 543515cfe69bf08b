"""Live mode end to end (docs/live.md): a local cluster whose gateway runs on a
constellation clock at 240x, clients that open sessions by location. Checked
against the authorities: orbit_model's handover schedule for the same place and
policy, and the engine (pager) replaying the run's recorded accesses, priced with
orbit_model's ISL hops. Bounded: about 40 s of wall time in all."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from satpage.client import InvalidArgument, SatpageError, Session, SessionExpired
from satpage.cluster import load_state
from satpage.cluster.driver import _free_port_base
from satpage.cluster.local import _alive
from satpage.comparator import compare_figures
from satpage.live import engine_counts, reference_schedule, run_demo, trace_of

pytestmark = pytest.mark.integration  # starts processes: a live cluster and the CLI

SPEC = "walker-star:150/10/1:500:87"
SPEED = 240.0
PLACES = [(59.9, 10.7), (-6.2, 106.8)]
CUTOFF_DEG = 60.0  # the satnodes route on an ISL schedule: the engine's pricing must follow it
LEAD_S = 20.0  # push-ahead copies 20 constellation seconds (two handover steps) before the handover
NS = 1_000_000_000
SATPAGE = str(Path(sys.executable).with_name("satpage"))


@pytest.fixture(scope="module")
def gateway(tmp_path_factory, cluster_binaries):
    sdir = tmp_path_factory.mktemp("live")
    # through the CLI, as a user would (and the processes are not this test's children)
    for _ in range(3):  # a port of the range may be taken between the check and the start
        up = subprocess.run([SATPAGE, "live", "up", "--speed", str(SPEED), "--hours", "12", "--idle-timeout-s", "2", "--lead-s", str(LEAD_S),
                             "--isl-latitude-cutoff", str(CUTOFF_DEG),
                             "--state-dir", str(sdir), "--port-base", str(_free_port_base(SPEC)), "--json"],
                            capture_output=True, text=True, timeout=300)
        if "in use" not in up.stderr:
            break
    try:
        assert up.returncode == 0, up.stderr[-2000:]
        doc = json.loads(up.stdout)
        assert doc["tls_dir"], "a live cluster is secure by default"
        assert doc["isl_latitude_cutoff_deg"] == CUTOFF_DEG and load_state(sdir).isl_schedule
        yield doc["gateway"], doc["tls_dir"], sdir
    finally:
        st = subprocess.run([SATPAGE, "cluster", "status", "--state-dir", str(sdir), "--json"],
                            capture_output=True, text=True, timeout=120)
        recorded = load_state(sdir).processes if load_state(sdir) else []
        subprocess.run([SATPAGE, "live", "down", "--state-dir", str(sdir)], capture_output=True, timeout=120)
        # everything live up started is stopped, the ephemeris refresher included
        assert json.loads(st.stdout)["alive"].get("refresher") == 1, st.stdout
        assert not [p for p in recorded if _alive(p)]


def _check_against_the_models(head, clients, strategy):
    for c in clients:
        assert c.error is None, c.error
        assert len(c.stats.schedule) >= 2, f"no handover at {c.lat_deg}, {c.lon_deg}: {c.stats.schedule}"
        assert c.pages_written > 0 and c.pages_read_back_ok == c.pages_written
        assert c.read_mismatches == 0
        # orbit_model's schedule for the place from the epoch, cut to the session's window
        ref = reference_schedule(head["constellation"], head["epoch"], c.lat_deg, c.lon_deg,
                                 c.stats.scenario_time_ns, policy=head["policy"], sticky=head["sticky"],
                                 min_elevation_deg=head["min_elevation_deg"], step_ns=int(head["step_s"] * NS),
                                 interval_ns=int(head.get("interval_s", 0) * NS),
                                 phase_ns=int(head.get("phase_s", 0) * NS))
        opened = c.stats.schedule[0].time_ns
        want = [(t, s) for t, s in ref if opened <= t <= c.stats.scenario_time_ns]
        got = [(h.time_ns, h.satellite) for h in c.stats.schedule]
        assert [s for _, s in got] == [s for _, s in want], (got, want)
        step = int(head["step_s"] * NS)
        assert all(abs(a - b) <= step for (a, _), (b, _) in zip(got, want, strict=True)), (got, want)
    # the accesses replayed in the engine: the relays' movements and page-hops
    trace = trace_of(clients, head["n_pages"])
    assert head["push_lead_s"] == LEAD_S
    eng = engine_counts(trace, strategy, head["constellation"], head["epoch"], isl_latitude_cutoff_deg=CUTOFF_DEG,
                        push_lead_ns=int(LEAD_S * NS), until_ns=[c.stats.scenario_time_ns for c in clients])
    relays = {"fault_moves": sum(c.stats.ondemand_moves for c in clients),
              "fault_hops": sum(c.stats.ondemand_hops for c in clients),
              "handover_moves": sum(c.stats.proactive_moves for c in clients),
              "handover_hops": sum(c.stats.proactive_hops for c in clients),
              "push_moves": sum(c.stats.push_moves for c in clients),
              "push_hops": sum(c.stats.push_hops for c in clients)}
    verdict = compare_figures(eng, relays, list(eng))
    assert verdict.equal, [(r.key, r.engine, r.other) for r in verdict.rows if not r.ok]
    return eng, trace


@pytest.mark.parametrize("strategy", ["on-demand", "push-ahead", "proactive"])
def test_live_handovers_and_costs_match_orbit_model_and_the_engine(gateway, strategy):
    target, tls_dir, _ = gateway
    head, clients = run_demo(target, PLACES, minutes=16.0, strategy=strategy, n_pages=48, seed=3, tls_dir=tls_dir)
    eng, trace = _check_against_the_models(head, clients, strategy)
    moved = {"on-demand": "fault_moves", "push-ahead": "push_moves", "proactive": "handover_moves"}[strategy]
    assert eng[moved] > 0
    if strategy == "push-ahead":  # the lead was exercised: copies sent ahead, and copies claimed in place
        import numpy as np

        import pager

        r = pager.replay(trace, pager.PushAhead(lead_ns=int(LEAD_S * NS), staged=True), events=True)
        push = r.events[r.events["kind"] == int(pager.EventKind.PUSH)]
        ahead = np.isin(push["time_ns"], trace.visit_start_ns - int(LEAD_S * NS))
        copies = {(int(e["page"]), int(e["to_visit"])) for e in push[ahead]}
        sent_again = {(int(e["page"]), int(e["to_visit"])) for e in push[~ahead]}
        assert copies - sent_again, "no copy sent ahead was claimed in place"


def test_the_demo_prints_one_json_object_with_the_schedule_of_each_client(gateway):
    target, tls_dir, _ = gateway
    out = subprocess.run([SATPAGE, "live", "demo", "--gateway", target, "--tls-dir", tls_dir, "--lat", "40.4",
                          "--lon", "-3.7", "--minutes", "6", "--pages", "8", "--json"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    for key in ("epoch", "constellation", "policy", "sticky", "min_elevation_deg"):
        assert key in doc
    (c,) = doc["clients"]
    assert (c["lat_deg"], c["lon_deg"]) == (40.4, -3.7)
    assert c["pages_written"] == c["pages_read_back_ok"] > 0
    assert c["schedule"][0].keys() == {"time_s", "satellite"}
    assert c["fault_latency_ms"]["n"] <= c["movements"]
    # every access, as the client saw it, served by a satellite of the schedule
    assert c["accesses"] and set(c["accesses"][0]) == {"time_s", "satellite", "outcome", "hops", "page",
                                                      "write", "latency_ms"}
    assert {a["satellite"] for a in c["accesses"]} <= {h["satellite"] for h in c["schedule"]}
    assert all(a["latency_ms"] > 0 and (a["hops"] > 0) == (a["outcome"] == "moved") for a in c["accesses"])
    assert sum(a["outcome"] == "moved" for a in c["accesses"]) == c["fault_latency_ms"]["n"]
    # the schedule the live service followed is `satpage orbit handovers` for the place, cut to the window
    hours = (int(c["end_time_s"] // 60) + 1) / 60
    ref = subprocess.run([SATPAGE, "orbit", "handovers", "--constellation", doc["constellation"], "--start",
                          doc["epoch"], "--hours", str(hours), "--lat", "40.4", "--lon", "-3.7", "--min-elevation",
                          str(doc["min_elevation_deg"]), "--policy", doc["policy"], "--json"],
                         capture_output=True, text=True, timeout=120)
    assert ref.returncode == 0, ref.stderr
    want = [h for h in json.loads(ref.stdout)["schedule"]
            if c["schedule"][0]["time_s"] <= h["time_s"] <= c["end_time_s"]]
    assert [h["satellite"] for h in c["schedule"]] == [h["satellite"] for h in want]
    assert all(abs(a["time_s"] - b["time_s"]) <= doc["step_s"] for a, b in zip(c["schedule"], want, strict=True))


def test_a_session_idle_past_the_timeout_expires_and_errors_are_typed(gateway):
    import time

    target, tls_dir, _ = gateway
    s = Session.open(target, lat_deg=10.0, lon_deg=20.0, tls_dir=tls_dir)
    s.write(1, b"x")
    time.sleep(4.0)  # the gateway's --session-idle is 2 s, checked every second
    with pytest.raises(SessionExpired):
        s.read(1)
    with pytest.raises(InvalidArgument, match="latitude 95"):
        Session.open(target, lat_deg=95.0, lon_deg=0.0, tls_dir=tls_dir)
    with pytest.raises(InvalidArgument, match="strategy"):
        Session.open(target, lat_deg=0.0, lon_deg=0.0, strategy="teleport", tls_dir=tls_dir)
    with pytest.raises(SatpageError, match="UNAVAILABLE|UNAUTHENTICATED|PERMISSION_DENIED"):
        Session.open(target, lat_deg=0.0, lon_deg=0.0, tls_dir=None, timeout_s=3.0)  # plain text to a TLS gateway


def test_the_refresher_extends_the_ephemeris_once_the_clock_passes_half_of_it(tmp_path):
    import datetime as dt

    from orbit_model.io import read_ephemeris
    from satpage.live import clock_now_ns, refresh_once, write_live_ephemeris

    epoch = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    path = tmp_path / "ephemeris.bin"
    write_live_ephemeris(path, SPEC, epoch, 1.0)
    before = read_ephemeris(path)
    live = {"ephemeris": str(path), "epoch": epoch.isoformat(), "clock_start": "2026-01-01T00:00:10Z",
            "speed": 60.0, "hours": 1.0}
    # real time for 10 s, then 60x: 10 s + 20 s x 60 = 20 min 10 s
    assert clock_now_ns(live, epoch + dt.timedelta(seconds=30)) == (10 + 20 * 60) * NS
    assert refresh_once(SPEC, live, epoch + dt.timedelta(seconds=30)) is None
    assert refresh_once(SPEC, live, epoch + dt.timedelta(seconds=40)) == 2.0  # 30 min 10 s: past half
    after = read_ephemeris(path)
    assert after.end_ns == 2 * 3600 * NS and after.epoch == before.epoch and after.knot_ns == before.knot_ns
    assert (after.position_km[: before.position_km.shape[0]] == before.position_km).all()


def test_the_refresher_keeps_the_reallocation_schedule(tmp_path):
    """A refreshed ephemeris that dropped it would be refused by the gateway (it changes
    what live schedules depend on), so the live state records it and the refresher
    writes it again."""
    import datetime as dt

    from orbit_model.io import read_ephemeris
    from satpage.live import refresh_once, write_live_ephemeris

    epoch = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    path = tmp_path / "ephemeris.bin"
    write_live_ephemeris(path, SPEC, epoch, 1.0, step_s=3.0, interval_s=15.0, phase_s=12.0)
    live = {"ephemeris": str(path), "epoch": epoch.isoformat(), "clock_start": "2026-01-01T00:00:10Z",
            "speed": 60.0, "hours": 1.0, "step_s": 3.0, "interval_s": 15.0, "phase_s": 12.0}
    assert refresh_once(SPEC, live, epoch + dt.timedelta(seconds=40)) == 2.0
    after = read_ephemeris(path)
    assert after.end_ns == 2 * 3600 * NS
    assert (after.step_ns, after.interval_ns, after.phase_ns) == (3 * NS, 15 * NS, 12 * NS)


def test_a_restarted_gateway_carries_on_with_the_live_sessions_it_no_longer_knows(gateway):
    """Real processes: the gateway is stopped and started again with the same settings; the
    client keeps its session id and token, and every page is still there."""
    import signal
    import time

    from satpage.cluster.local import LocalCluster

    target, tls_dir, sdir = gateway
    s = Session.open(target, lat_deg=59.9, lon_deg=10.7, tls_dir=tls_dir)
    for page in range(8):
        s.write(page, bytes([page]) * 16)
    before = s.stats()
    cl = LocalCluster.attach(sdir)
    (gw,) = [p for p in cl.state.processes if p.role == "gateway"]
    cl.kill_gateway(sig=signal.SIGTERM)
    assert not _alive(gw)
    cl.restart_gateway()  # recorded, so that `live down` stops the new one
    (new,) = [p for p in load_state(sdir).processes if p.role == "gateway"]
    assert new.pid != gw.pid and _alive(new) and new.argv == gw.argv
    time.sleep(1.0)  # two constellation minutes at 240x: possibly a handover for the new gateway to do
    for page in range(8):
        assert s.read(page) == bytes([page]) * 16
    # Counted by the new gateway from the rebuild on. At 240x a handover can fall between
    # the read and the stats (every second or so): read and ask again, a few times.
    for _ in range(5):
        s.read(0)
        after = s.stats()
        if after.schedule[-1].satellite == s.satellite:
            break
    # rebuilt from the satellite that held the table: no older than where the old gateway left it
    assert after.schedule[0].time_ns >= before.schedule[-1].time_ns
    assert after.schedule[-1].satellite == s.satellite
    s.close()


def test_a_live_session_reads_back_every_page_after_its_satellite_dies(gateway):
    """Real processes, `live up`'s default R = 2: the satellite that stored a session's pages
    loses its satnode and its Redis (SIGKILL, not started again); every page still reads back,
    and a write after it is kept (the gateway fails over to the satellite behind, which
    holds the copy)."""
    import os
    import signal
    import time

    target, tls_dir, sdir = gateway
    st = load_state(sdir)
    assert st.replicas == 2
    s = Session.open(target, lat_deg=-33.9, lon_deg=18.4, tls_dir=tls_dir)
    data = {page: bytes([page, 29]) * 64 for page in range(12)}
    stored = [s.write(page, d).satellite for page, d in data.items()]
    victim = max(set(stored), key=stored.count)  # where most of the pages are (a handover may fall between)
    dead = [p for p in st.processes if p.index == victim and p.role in ("satnode", "redis")]
    assert len(dead) == 2, dead
    for p in dead:
        os.kill(p.pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while any(_alive(p) for p in dead) and time.monotonic() < deadline:
        time.sleep(0.05)
    for page, d in data.items():
        assert s.read(page) == d, f"page {page} after satellite {victim} died"
    s.write(12, b"after")
    assert s.read(12) == b"after"
    s.close()


@pytest.mark.parametrize("args, named", [
    (["live", "demo", "--lat", "95", "--lon", "0"], "95.0"),
    (["live", "demo", "--lat", "1", "--lat", "2", "--lon", "0"], "2 --lat but 1 --lon"),
    (["live", "up", "--speed", "0"], "--speed 0"),
    (["live", "up", "--lead-s", "-1"], "--lead-s -1"),
    (["live", "up", "--policy", "trail"], "'trail'"),
    (["live", "up", "--isl-latitude-cutoff", "95"], "--isl-latitude-cutoff 95"),
    (["live", "ephemeris", "x.bin", "--epoch", "yesterday"], "yesterday"),
])
def test_bad_live_input_exits_2_naming_the_value(args, named, tmp_path):
    out = subprocess.run([SATPAGE, *args], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert out.returncode == 2, out.stderr
    assert "error:" in out.stderr and named in out.stderr


def test_a_demo_under_15_s_reallocation_follows_orbit_models_reallocated_schedule():
    """`live demo --interval-s 15 --phase-s 12` starts a cluster whose gateway reallocates
    (the ephemeris header carries the schedule, the Clock RPC reports it), and every
    client's handovers are orbit_model's reallocated schedule for its place, which differs
    from the elevation-driven one."""
    out = subprocess.run([SATPAGE, "live", "demo", "--lat", "59.9", "--lon", "10.7", "--lat", "-6.2",
                          "--lon", "106.8", "--minutes", "20", "--speed", str(SPEED), "--pages", "8",
                          "--store", "memory", "--interval-s", "15", "--phase-s", "12", "--json"],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert (doc["interval_s"], doc["phase_s"], doc["step_s"]) == (15.0, 12.0, 3.0)
    differs = 0
    for c in doc["clients"]:
        assert c["pages_written"] == c["pages_read_back_ok"] > 0
        window = []
        for interval in (15, 0):
            ref = reference_schedule(doc["constellation"], doc["epoch"], c["lat_deg"], c["lon_deg"],
                                     int(c["end_time_s"] * NS), policy=doc["policy"],
                                     sticky=doc["sticky"], min_elevation_deg=doc["min_elevation_deg"],
                                     step_ns=3 * NS, interval_ns=interval * NS,
                                     phase_ns=12 * NS if interval else 0)
            window.append([(t / NS, s) for t, s in ref
                           if c["schedule"][0]["time_s"] <= t / NS <= c["end_time_s"]])
        want, elevation_driven = window
        differs += want != elevation_driven
        got = [(h["time_s"], h["satellite"]) for h in c["schedule"]]
        assert [s for _, s in got] == [s for _, s in want], (got, want)
        assert all(abs(a - b) <= 3 for (a, _), (b, _) in zip(got, want, strict=True)), (got, want)
    assert differs, "the reallocated and the elevation-driven schedules agree: nothing was tested"
