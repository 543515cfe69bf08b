"""Live mode from the simulator's side (docs/live.md): the local cluster in live
mode, the bounded demo workload, and the two checks that tie a live run to the
models: its handovers against orbit_model's schedule, and its recorded accesses
replayed in the engine (pager) against the movements and page-hops the relays
counted.

sim only joins here: geometry and handovers come from orbit_model, replay from
pager, the service from the cluster; nothing is re-implemented.
"""

from __future__ import annotations

import datetime as dt
import logging
import math
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from satpage.client import Access, Gateway, Session, SessionStats

__all__ = ["DemoClient", "live_up", "run_demo", "reference_schedule", "trace_of", "engine_counts",
           "write_live_ephemeris"]

log = logging.getLogger(__name__)

NS_PER_S = 1_000_000_000
EPHEMERIS_FILE = "ephemeris.bin"
ISL_SCHEDULE_FILE = "isl-schedule.json"


def write_live_ephemeris(path: Path, constellation: str, epoch: dt.datetime, hours: float, *,
                         policy: str = "highest", sticky: bool = True, min_elevation_deg: float = 10.0,
                         step_s: float = 10.0, interval_s: float = 0.0, phase_s: float = 0.0,
                         compress: bool = False) -> int:
    """Write the gateway's ephemeris (orbit_model.io.write_ephemeris); returns its size in bytes.
    ``interval_s`` > 0: the gateway reallocates at ``phase_s + k * interval_s``. ``compress``:
    the delta-coded body (positions to 1 m, about a sixth of the bytes)."""
    from orbit_model import Constellation
    from orbit_model.io import write_ephemeris

    const = Constellation.from_spec(constellation, epoch=epoch)
    write_ephemeris(path, const, int(round(hours * 3600 * NS_PER_S)), policy=policy, sticky=sticky,
                    min_elevation_deg=min_elevation_deg, step_ns=int(round(step_s * NS_PER_S)),
                    interval_ns=int(round(interval_s * NS_PER_S)),
                    phase_ns=int(round(phase_s * NS_PER_S)), compress=compress)
    return Path(path).stat().st_size


def live_up(constellation: str, *, state_dir: Path | None = None, port_base: int | None, speed: float,
            epoch: dt.datetime | None = None, hours: float = 24.0, store: str = "redis",
            policy: str = "highest", sticky: bool = True, min_elevation_deg: float = 10.0,
            idle_timeout_s: float = 3600.0, insecure: bool = False,
            isl_latitude_cutoff_deg: float = 90.0, routing_step_s: float = 60.0, push_lead_s: float = 10.0,
            interval_s: float = 0.0, phase_s: float = 0.0, replicas: int = 2,
            emulate_links: bool = True):
    """Write an ephemeris of ``hours`` from ``epoch`` (default: now, to the second) into the
    state directory and start the local cluster with a live gateway (mutual TLS unless
    ``insecure``, as ``cluster_up``, port_base None too); ``idle_timeout_s`` is the gateway's
    ``--session-idle``.
    With a latitude cut-off below 90 deg the satnodes route on an ISL schedule of the same
    ``hours`` (``write_live_isl_schedule``), as ``compare --backend cluster`` gives them.
    ``push_lead_s`` (constellation seconds, the gateway's ``--push-lead``): push-ahead copies a
    visit's pages to the next serving satellite this long before the handover (0: at it).
    ``interval_s`` > 0: the gateway reallocates at ``phase_s + k * interval_s`` (handover step
    ``orbit_model.reallocation_step_ns``: 3 s for 15 s at phase 12 s; else 10 s).
    ``replicas`` is R of the satnodes (the live service keeps a dead satellite's pages
    at R > 1; at most the satellites per plane).
    ``emulate_links``: the links wait the sky's delays, timed by this ephemeris
    (docs/emulation.md; in wall-clock time, not divided by the speed)."""
    from orbit_model import reallocation_step_ns
    from satpage.cluster import cluster_up, default_state_dir

    if not 0 < speed <= 1e6:
        raise ValueError(f"speed {speed} must be above 0 and at most 1e6")
    if not 0 < hours <= 24 * 31:
        raise ValueError(f"ephemeris horizon {hours} h must be above 0 and at most 31 days")
    if not 0 <= isl_latitude_cutoff_deg <= 90:
        raise ValueError(f"ISL latitude cut-off {isl_latitude_cutoff_deg} deg is outside 0..90")
    if not 0 <= push_lead_s <= 3600:
        raise ValueError(f"push-ahead lead {push_lead_s} s is outside 0..3600")
    if not 0 < routing_step_s <= 3600:
        raise ValueError(f"routing step {routing_step_s} s must be above 0 and at most 3600")
    sdir = Path(state_dir or default_state_dir()).resolve()
    sdir.mkdir(parents=True, exist_ok=True)
    if epoch is None:
        epoch = dt.datetime.now(dt.UTC).replace(microsecond=0)
    path = sdir / EPHEMERIS_FILE
    step_s = reallocation_step_ns(int(round(interval_s * NS_PER_S)),
                                  int(round(phase_s * NS_PER_S))) / NS_PER_S
    size = write_live_ephemeris(path, constellation, epoch, hours, policy=policy, sticky=sticky,
                                min_elevation_deg=min_elevation_deg, step_s=step_s,
                                interval_s=interval_s, phase_s=phase_s)
    log.info("ephemeris: %s, %.1f h from %s, %d bytes", path, hours, epoch.isoformat(), size)
    live = {"ephemeris": str(path), "epoch": epoch.isoformat(), "speed": float(speed),
            "idle_timeout_s": float(idle_timeout_s), "hours": float(hours), "policy": policy,
            "sticky": bool(sticky), "min_elevation_deg": float(min_elevation_deg),
            "isl_latitude_cutoff_deg": float(isl_latitude_cutoff_deg), "routing_step_s": float(routing_step_s),
            "push_lead_s": float(push_lead_s)}
    if interval_s:
        live |= {"step_s": step_s, "interval_s": float(interval_s), "phase_s": float(phase_s)}
    isl = None
    if isl_latitude_cutoff_deg < 90:
        isl = sdir / ISL_SCHEDULE_FILE
        # The satnodes read it once, so it covers more than the first ephemeris (which the
        # refresher extends, up to the schedule's end and no further).
        isl_hours = isl_schedule_hours(hours)
        write_live_isl_schedule(isl, constellation, epoch, isl_hours, isl_latitude_cutoff_deg, routing_step_s)
        live["isl_hours"] = isl_hours
    st = cluster_up(constellation, state_dir=sdir, port_base=port_base, store=store, insecure=insecure, live=live,
                    isl_schedule=isl, replicas=replicas, emulate_links=emulate_links)
    return _start_refresher(st)


def isl_schedule_hours(hours: float) -> float:
    """How far a live cluster's ISL schedule reaches: four ephemeris horizons, at least
    48 h and at most 31 days (150 satellites: 1 s and 160 kB for 48 h, 15 s and 2.8 MB
    for 31 days)."""
    return float(min(24 * 31, max(48.0, 4 * hours)))


def write_live_isl_schedule(path: Path, constellation: str, epoch: dt.datetime, hours: float,
                            latitude_cutoff_deg: float, routing_step_s: float = 60.0) -> int:
    """Write the satnodes' ISL schedule (satpage-isl-schedule/1) of a latitude cut-off for
    ``hours`` from ``epoch``, the writer ``compare --backend cluster`` uses; returns its size."""
    import json

    from orbit_model import Constellation, IslNetwork, RoutingSnapshots

    c = Constellation.from_spec(constellation, epoch=epoch)
    routing = RoutingSnapshots(IslNetwork(c, latitude_cutoff_deg=latitude_cutoff_deg),
                               int(round(routing_step_s * NS_PER_S)))
    tmp = Path(path).with_suffix(".tmp")
    tmp.write_text(json.dumps(routing.isl_schedule(constellation,
                                                   int(round(hours * 3600 * NS_PER_S)))))
    tmp.replace(path)
    return Path(path).stat().st_size


def _start_refresher(st):
    """The process that keeps the ephemeris ahead of the clock (``refresh_loop``), recorded
    with the cluster so ``down`` stops it too."""
    import sys

    from satpage.cluster.local import LocalCluster

    cl = LocalCluster(st)
    cl.spawn("refresher", -1, [sys.executable, "-m", "satpage.live", "--state-dir", st.state_dir])
    return cl.state


def clock_now_ns(live: dict, now: dt.datetime | None = None) -> int:
    """The cluster's constellation clock (docs/live.md): real time from the epoch up to
    ``clock_start``, ``speed`` times faster from there."""
    from orbit_model import parse_epoch

    now = now or dt.datetime.now(dt.UTC)
    epoch, start = parse_epoch(live["epoch"]), parse_epoch(live["clock_start"])
    return int(round(((start - epoch).total_seconds() + (now - start).total_seconds() * live["speed"]) * NS_PER_S))


def refresh_once(constellation: str, live: dict, now: dt.datetime | None = None) -> float | None:
    """Rewrite the ephemeris with a longer horizon when the clock has passed half of the
    current one (same epoch, knots and policy: the gateway re-reads it in place); returns
    the new horizon in hours, or None when nothing was due."""
    from orbit_model import parse_epoch
    from orbit_model.io import read_ephemeris

    t_h = clock_now_ns(live, now) / NS_PER_S / 3600
    current_h = read_ephemeris(live["ephemeris"]).end_ns / NS_PER_S / 3600
    if t_h < current_h / 2:
        return None
    hours = math.ceil(t_h + live["hours"])
    if "isl_hours" in live:  # the satnodes' ISL schedule ends there: so does the gateway's horizon
        hours = min(hours, live["isl_hours"])
        if hours <= current_h:
            return None
    write_live_ephemeris(Path(live["ephemeris"]), constellation, parse_epoch(live["epoch"]), hours,
                         policy=live.get("policy", "highest"), sticky=live.get("sticky", True),
                         min_elevation_deg=live.get("min_elevation_deg", 10.0),
                         step_s=live.get("step_s", 10.0), interval_s=live.get("interval_s", 0.0),
                         phase_s=live.get("phase_s", 0.0))
    return float(hours)


def refresh_loop(state_dir: Path) -> None:
    """Keep the local live cluster's ephemeris ahead of its clock until stopped."""
    from satpage.cluster import load_state

    st = load_state(state_dir)
    live = st.live
    # check several times per half horizon of wall time, at most every 5 s
    period_s = min(5.0, live["hours"] * 3600 / live["speed"] / 8)
    while True:
        hours = refresh_once(st.constellation, live)
        if hours is not None:
            log.info("ephemeris refreshed: %g h from the epoch", hours)
        time.sleep(period_s)


@dataclass
class DemoClient:
    """One demo client: where it is, what it saw and what it cost."""

    lat_deg: float
    lon_deg: float
    session_id: str = ""
    stats: SessionStats | None = None
    accesses: list[Access] | None = None
    pages_written: int = 0
    pages_read_back_ok: int = 0
    read_mismatches: int = 0
    error: str | None = None

    def to_json(self) -> dict:
        st = self.stats
        acc = self.accesses or []
        faults = np.array([a.latency_s for a in acc if a.outcome == "moved"]) * 1e3
        local = np.array([a.latency_s for a in acc if a.outcome == "local"]) * 1e3

        def summary(x: np.ndarray) -> dict:
            if x.size == 0:
                return {"n": 0}
            return {"n": int(x.size), "mean": round(float(x.mean()), 3),
                    "p50": round(float(np.percentile(x, 50)), 3), "p99": round(float(np.percentile(x, 99)), 3)}

        out = {"lat_deg": self.lat_deg, "lon_deg": self.lon_deg, "session_id": self.session_id,
               "pages_written": self.pages_written, "pages_read_back_ok": self.pages_read_back_ok,
               "read_mismatches": self.read_mismatches,
               # every access as the client saw it (latency_ms: its round trip at the client)
               "accesses": [{"time_s": a.scenario_time_ns / NS_PER_S, "satellite": a.satellite,
                             "outcome": a.outcome, "hops": a.hops, "page": a.page, "write": a.write,
                             "latency_ms": round(a.latency_s * 1e3, 3)} for a in acc],
               "fault_latency_ms": summary(faults), "local_latency_ms": summary(local)}
        if st is not None:
            out.update({"schedule": [{"time_s": h.time_ns / NS_PER_S, "satellite": h.satellite}
                                     for h in st.schedule],
                        "handovers": len(st.schedule) - 1, "movements": st.movements,
                        "page_hops": st.page_hops, "ondemand_moves": st.ondemand_moves,
                        "ondemand_hops": st.ondemand_hops, "proactive_moves": st.proactive_moves,
                        "proactive_hops": st.proactive_hops, "push_moves": st.push_moves,
                        "push_hops": st.push_hops, "end_time_s": st.scenario_time_ns / NS_PER_S})
        if self.error:
            out["error"] = self.error
        return out


def _client(gw: Gateway, c: DemoClient, index: int, *, strategy: str, minutes: float, n_pages: int,
            seed: int, interval_s: float, max_accesses: int) -> None:
    import pager

    rng = np.random.default_rng([seed, index])
    # pager's Zipf sampler (s = 1): this client's stream of pages, drawn up front
    pages = pager.ZipfSampler.zipf(n_pages, 1.0).session_pages(pager.paper_key(rng), [index],
                                                               [max_accesses])
    try:
        s = Session.open(gw, lat_deg=c.lat_deg, lon_deg=c.lon_deg, strategy=strategy, record=True)
    except Exception as exc:  # reported per client
        c.error = str(exc)
        return
    c.session_id = s.id
    written: dict[int, bytes] = {}
    end_ns = s.opened_ns + int(minutes * 60 * NS_PER_S)
    try:
        n = 0
        last_ns = s.opened_ns
        while last_ns < end_ns and n < max_accesses:
            page = int(pages[n])
            if page not in written or rng.random() < 0.3:
                data = f"{index}:{page}:{n}".encode()
                a = s.write(page, data)
                written[page] = data
            else:
                got, a = s.read_access(page)
                if got != written[page]:
                    c.read_mismatches += 1
            last_ns = a.scenario_time_ns
            n += 1
            time.sleep(interval_s)
        c.pages_written = len(written)
        for page, data in sorted(written.items()):
            if s.read(page) == data:
                c.pages_read_back_ok += 1
        c.stats = s.stats()
    except Exception as exc:
        c.error = str(exc)
    finally:
        c.accesses = list(s.accesses)
        try:
            s.close()
        except Exception as exc:
            c.error = c.error or f"close: {exc}"


def run_demo(target: str, places: list[tuple[float, float]], *, minutes: float, strategy: str = "on-demand",
             n_pages: int = 64, seed: int = 1, interval_s: float = 0.01, max_accesses: int = 20_000,
             tls_dir: str | None = None) -> tuple[dict, list[DemoClient]]:
    """Run one client per place against the live gateway at target for ``minutes`` of
    constellation time; returns the demo's JSON (without per-client detail) and the clients."""
    with Gateway(target, tls_dir=tls_dir) as gw:
        clock = gw.clock()
        clients = [DemoClient(lat, lon) for lat, lon in places]
        threads = [threading.Thread(target=_client, args=(gw, c, i),
                                    kwargs={"strategy": strategy, "minutes": minutes, "n_pages": n_pages,
                                            "seed": seed, "interval_s": interval_s,
                                            "max_accesses": max_accesses}, daemon=True)
                   for i, c in enumerate(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    head = {"epoch": clock.epoch, "constellation": clock.constellation, "policy": clock.policy,
            "sticky": clock.sticky, "min_elevation_deg": clock.min_elevation_deg, "speed": clock.speed,
            "step_s": clock.step_ns / NS_PER_S, "push_lead_s": clock.push_lead_ns / NS_PER_S, "minutes": minutes, "strategy": strategy, "seed": seed,
            "n_pages": n_pages}
    if clock.reallocation_interval_ns:
        head |= {"interval_s": clock.reallocation_interval_ns / NS_PER_S,
                 "phase_s": clock.reallocation_phase_ns / NS_PER_S}
    return head, clients


def reference_schedule(constellation: str, epoch: str | dt.datetime, lat_deg: float, lon_deg: float,
                       end_ns: int, *, policy: str, sticky: bool, min_elevation_deg: float,
                       step_ns: int = 10 * NS_PER_S, interval_ns: int = 0,
                       phase_ns: int = 0) -> list[tuple[int, int]]:
    """orbit_model's schedule for a place from the epoch to ``end_ns`` (what ``satpage orbit
    handovers --start EPOCH --json`` prints), as (time_ns, satellite) pairs."""
    from orbit_model import (
        Constellation,
        GroundPoints,
        handover_schedule,
        parse_epoch,
        step_times_ns,
    )

    const = Constellation.from_spec(constellation, epoch=parse_epoch(epoch))
    end_ns = -(-int(end_ns) // step_ns) * step_ns
    sched = handover_schedule(const, GroundPoints.from_degrees(lat_deg, lon_deg),
                              step_times_ns(max(end_ns, step_ns), step_ns),
                              min_elevation_deg=min_elevation_deg, policy=policy, sticky=sticky,
                              interval_ns=interval_ns, phase_ns=phase_ns)
    times, sats = sched.for_client(0)
    return [(int(t), int(s)) for t, s in zip(times, sats, strict=True)]


def trace_of(clients: list[DemoClient], n_pages: int):
    """A ``pager.Trace`` of what the live clients did: one session per client, its visits the
    handovers the gateway performed, its accesses in order at the clock's times."""
    from pager import Trace

    vo, vsat, vstart, ao, page, times, write = [0], [], [], [0], [], [], []
    for c in clients:
        sched = c.stats.schedule
        starts = np.array([h.time_ns for h in sched], np.int64)
        acc = c.accesses or []
        t = np.array([a.scenario_time_ns for a in acc], np.int64)
        visit = np.searchsorted(starts, t, side="right") - 1
        served = np.array([a.satellite for a in acc], np.int64)
        want = np.array([sched[v].satellite for v in visit], np.int64) if acc else served
        if (visit < 0).any() or (served != want).any():
            bad = int(np.flatnonzero((visit < 0) | (served != want))[0])
            raise ValueError(f"session {c.session_id}: access {bad} at {int(t[bad])} ns was served by satellite "
                             f"{int(served[bad])}, not by the schedule's")
        for k, h in enumerate(sched):
            vsat.append(h.satellite)
            vstart.append(h.time_ns)
            sel = visit == k
            page.extend(a.page for a, x in zip(acc, sel, strict=True) if x)
            write.extend(a.write for a, x in zip(acc, sel, strict=True) if x)
            times.extend(t[sel].tolist())
            ao.append(len(page))
        if c.stats.copied_ahead_for is not None:  # the copy for the next handover, not done yet: a visit
            vsat.append(c.stats.copied_ahead_for.satellite)  # with no access (engine_counts stops before it)
            vstart.append(c.stats.copied_ahead_for.time_ns)
            ao.append(len(page))
        vo.append(len(vsat))
    return Trace(n_pages=n_pages, visit_offsets=np.array(vo, np.int64),
                 visit_satellite=np.array(vsat, np.int32), visit_start_ns=np.array(vstart, np.int64),
                 access_offsets=np.array(ao, np.int64), access_page=np.array(page, np.int32),
                 access_time_ns=np.array(times, np.int64), access_write=np.array(write, np.bool_))


def engine_counts(trace, strategy: str, constellation: str, epoch: str, *,
                  isl_latitude_cutoff_deg: float = 90.0, routing_step_s: float = 60.0,
                  push_lead_ns: int = 0, until_ns=None) -> dict[str, int]:
    """Replay ``trace`` in the engine and price every movement with orbit_model's ISL hops
    between the two satellites at the movement's time: the counts the relays should report.
    With a latitude cut-off below 90 deg the hops are those of the routing snapshot the
    movement falls in (the satnodes' ISL schedule: topology at the snapshot's start).
    Push-ahead is the gateway's: ``PushAhead(recent_visits=1, lead_ns=push_lead_ns, staged=True)``
    (the copy ``push_lead_ns`` ahead, claimed at the handover; docs/live.md). ``until_ns``
    (one per session): count only the movements up to the time the relays' counts were
    read (a session's last visit may be a handover copied ahead for, not yet due)."""
    import pager
    from orbit_model import Constellation, IslNetwork, RoutingSnapshots, parse_epoch
    from pager.strategies import PushAhead

    strat = {"on-demand": pager.OnDemand(), "proactive": pager.Proactive(),
             "push-ahead": PushAhead(recent_visits=1, lead_ns=int(push_lead_ns), staged=True)}[strategy]
    r = pager.replay(trace, strat, events=True)
    const = Constellation.from_spec(constellation, epoch=parse_epoch(epoch))
    cutoff = isl_latitude_cutoff_deg if isl_latitude_cutoff_deg < 90 else None
    # the engine's routing (compare prices with the same), on the satnodes' snapshots
    routing = RoutingSnapshots(IslNetwork(const, latitude_cutoff_deg=cutoff),
                               int(round(routing_step_s * NS_PER_S)))
    ev = r.events
    if until_ns is not None:
        ev = ev[ev["time_ns"] <= np.asarray(until_ns, np.int64)[ev["session"]]]
    sats = np.asarray(trace.visit_satellite, np.int64)
    out = {}
    for kind, name in ((pager.EventKind.FAULT, "fault"), (pager.EventKind.HANDOVER, "handover"),
                       (pager.EventKind.PUSH, "push")):
        sel = ev[ev["kind"] == int(kind)]
        out[f"{name}_moves"] = int(sel.size)
        sel = sel[sel["from_visit"] >= 0]  # a page created where it is used did not move
        out[f"{name}_hops"] = int(routing.hops(sats[sel["from_visit"]], sats[sel["to_visit"]],
                                               sel["time_ns"]).sum())
    return {k: out[k] for k in ("fault_moves", "handover_moves", "push_moves", "fault_hops",
                                "handover_hops", "push_hops")}


if __name__ == "__main__":  # the refresher process `satpage live up` starts
    import argparse

    ap = argparse.ArgumentParser(description="keep a local live cluster's ephemeris ahead of its clock")
    ap.add_argument("--state-dir", type=Path, required=True)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    refresh_loop(ap.parse_args().state_dir)
