"""From a scenario to `pager.Trace`s: sessions, their handover schedules, their accesses.

This module only joins: the handover schedule of each session is orbit_model's
(``orbit_model.session_schedule``, the sweep of ``handover_schedule`` over each
session's own window), the pages are pager's (``ZipfSampler.session_pages``) and
the paper's trail is pager's (``pager.trail_trace``).

Randomness follows one rule so that results do not depend on the process count:
``SeedSequence(seed)`` spawns child 0 for the session table (drawn once, whole)
and child ``1 + i`` for chunk ``i`` of sessions (access counts and times); the
pages of session ``i`` (its index in the start-sorted table) are pager's session
stream ``i`` of the key ``pager.paper_key(numpy.random.default_rng(seed))``, the
key `satpage paper --seed` and ``pager.run_paper`` use, so the paper-mimic scenario
gives ``run_paper``'s counts exactly. Sessions are sorted by start time, so a
chunk covers a short time window and its satellite positions stay small.

Outages: while no satellite is above the minimum elevation a session stays with its
last server (those steps are counted as uncovered); before its first one it waits
for it (the first server's visit starts at the session start). A session that sees
no satellite above the mask at all, and the ground-store gateway at such steps, is
served by the highest satellite whatever its elevation.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

import pager
from orbit_model import GroundPoints, session_schedule
from orbit_model.kernels import BLOCK_STEPS
from pager import Trace
from satpage.geometry import PositionCache, SatelliteSet
from satpage.scenario import Scenario

__all__ = ["SESSION_DTYPE", "make_sessions", "chunk_rng", "access_key", "build_trace",
           "ChunkTrace", "session_visits", "ORBIT_MODEL_POLICY"]

log = logging.getLogger(__name__)

SESSION_DTYPE = np.dtype([("lat_deg", "f8"), ("lon_deg", "f8"),
                          ("start_ns", "i8"), ("end_ns", "i8")])
#: scenario policy names -> orbit_model.handover policy names
ORBIT_MODEL_POLICY = {"highest-elevation": "highest", "longest-visibility": "longest",
                      "nearest": "nearest"}


def root_seed_sequence(sc: Scenario) -> np.random.SeedSequence:
    return np.random.SeedSequence(sc.seed)


def chunk_rng(sc: Scenario, chunk: int) -> np.random.Generator:
    """The Generator of chunk ``chunk``: child ``1 + chunk`` of the scenario seed."""
    return np.random.Generator(np.random.PCG64(
        np.random.SeedSequence(sc.seed, spawn_key=(1 + chunk,))))


def access_key(sc: Scenario) -> np.uint64:
    """The key of the pages' session streams: ``pager.paper_key`` of the scenario seed."""
    return pager.paper_key(np.random.default_rng(sc.seed))


def _session_rng(sc: Scenario) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(sc.seed, spawn_key=(0,))))


def place_clients(sc: Scenario, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Client latitudes and longitudes (degrees): population-weighted or one point."""
    if sc.clients.placement == "point":
        return np.full(n, sc.clients.lat_deg), np.full(n, sc.clients.lon_deg)
    import orbit_model
    grid = orbit_model.PopulationGrid.from_spec(sc.clients.source)
    clients = orbit_model.place_clients(grid, n, rng)
    lon = (np.asarray(clients.lon_deg, float) + 180.0) % 360.0 - 180.0
    return np.asarray(clients.lat_deg, float), lon


def make_sessions(sc: Scenario) -> np.ndarray:
    """The whole session table (SESSION_DTYPE), sorted by start time."""
    rng = _session_rng(sc)
    n = sc.sessions.count
    dur_ns = sc.duration_ns
    out = np.zeros(n, dtype=SESSION_DTYPE)
    if sc.handover.policy == "trail":
        life_ns = np.full(n, int(round(sc.handover.trail_visit_s * 1e9))
                          * (sc.handover.trail_handovers + 1), dtype=np.int64)
    else:
        mean = sc.sessions.lifetime_mean_s
        if sc.sessions.lifetime == "exponential":
            life_s = rng.exponential(mean, n)
        elif sc.sessions.lifetime == "uniform":
            life_s = rng.uniform(0.0, 2.0 * mean, n)
        else:
            life_s = np.full(n, mean)
        life_ns = np.maximum(np.round(life_s * 1e9).astype(np.int64), sc.step_ns)
    # uniform start over the span, so that the whole session fits inside it when it can
    latest = np.maximum(dur_ns - life_ns, 0)
    out["start_ns"] = np.floor(rng.random(n) * latest).astype(np.int64)
    out["end_ns"] = np.minimum(out["start_ns"] + life_ns, dur_ns)
    out["lat_deg"], out["lon_deg"] = place_clients(sc, n, rng)
    order = np.argsort(out["start_ns"], kind="stable")
    return out[order]


def _with_fallback(sats: SatelliteSet, t_ns: np.ndarray, lat: np.ndarray, lon: np.ndarray,
                   first: np.ndarray, last: np.ndarray, min_elevation_deg: float, policy: str,
                   sticky: bool, interval_ns: int = 0, phase_ns: int = 0):
    """orbit_model's schedule of each window, and for windows with no satellite above
    the mask at any step the highest satellite below it (so every session has a server)."""
    ground = GroundPoints.from_degrees(lat, lon)
    sch = session_schedule(sats.constellation, ground, t_ns, first, last,
                           min_elevation_deg=min_elevation_deg, policy=policy, sticky=sticky,
                           interval_ns=interval_ns, phase_ns=phase_ns)
    offsets, time_ns, sat = sch.offsets, sch.time_ns, sch.satellite
    seen = np.add.reduceat((sat >= 0).astype(np.int64), offsets[:-1]) if sat.size else \
        np.zeros(0, np.int64)
    blind = np.flatnonzero(seen == 0)
    if blind.size:
        log.info("%d windows see no satellite above %.1f deg: served below the mask",
                 blind.size, min_elevation_deg)
        low = session_schedule(sats.constellation,
                               GroundPoints.from_degrees(lat[blind], lon[blind]), t_ns,
                               first[blind], last[blind], min_elevation_deg=-90.0,
                               policy="highest", sticky=False)
        parts_t, parts_s = np.split(time_ns, offsets[1:-1]), np.split(sat, offsets[1:-1])
        for k, i in enumerate(blind):
            parts_t[i], parts_s[i] = low.for_client(k)
        counts = np.array([p.size for p in parts_t], dtype=np.int64)
        offsets = np.zeros(counts.size + 1, np.int64)
        np.cumsum(counts, out=offsets[1:])
        time_ns, sat = np.concatenate(parts_t), np.concatenate(parts_s)
    return offsets, time_ns, sat


def session_visits(sats: SatelliteSet, t_ns: np.ndarray, lat: np.ndarray, lon: np.ndarray,
                   first: np.ndarray, last: np.ndarray, min_elevation_deg: float, policy: str,
                   sticky: bool, interval_ns: int = 0, phase_ns: int = 0):
    """Visits of each window from orbit_model's schedule (module docstring: outages);
    ``interval_ns`` > 0: scheduled reallocation (orbit_model.handover).

    Returns (visit_offsets int64 (n+1,), visit_satellite int32, visit_step int64 (step
    of the visit's first entry), uncovered steps int64 (n,) per window)."""
    offsets, time_ns, sat = _with_fallback(sats, t_ns, lat, lon, first, last,
                                           min_elevation_deg, ORBIT_MODEL_POLICY[policy], sticky,
                                           interval_ns, phase_ns)
    return _visits_of(offsets, time_ns, sat, t_ns, first, last)


def _visits_of(offsets: np.ndarray, time_ns: np.ndarray, sat: np.ndarray, t_ns: np.ndarray,
               first: np.ndarray, last: np.ndarray):
    """session_visits from the windows' schedule entries (offsets, time_ns, satellite)."""
    n = offsets.size - 1
    step = np.searchsorted(t_ns, time_ns)
    owner = np.repeat(np.arange(n), np.diff(offsets))
    end = np.empty_like(step)
    end[:-1] = step[1:]
    if end.size:
        end[offsets[1:] - 1] = last + 1
    out = sat < 0
    uncovered = np.bincount(owner[out], weights=(end - step)[out], minlength=n).astype(np.int64)
    keep = sat >= 0
    sat, step, owner = sat[keep], step[keep], owner[keep]
    new = np.ones(sat.size, dtype=bool)      # an outage between two passes of one satellite
    new[1:] = (sat[1:] != sat[:-1]) | (owner[1:] != owner[:-1])
    sat, step, owner = sat[new], step[new], owner[new]
    visit_offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(owner, minlength=n), out=visit_offsets[1:])
    step[visit_offsets[:-1]] = first            # the first server serves from the start
    return visit_offsets, sat.astype(np.int32), step, uncovered


#: The gateway's schedule per block of orbit_model's grid (BLOCK_STEPS), per satellite set
#: and gateway (one kept): a block is swept once per process, right after the chunks' own
#: sweep has propagated it (orbit_model keeps the block's positions).
_GATEWAY: dict[tuple, tuple] = {}


def gateway_visits(sats: SatelliteSet, t_ns: np.ndarray, lat_deg: float, lon_deg: float,
                   w0: int, w1: int, min_elevation_deg: float):
    """``session_visits`` of the gateway over steps ``w0..w1``, cut from its schedule over
    the blocks of orbit_model's grid that the window touches: highest elevation without
    stickiness has no memory, so a window's schedule is the span's limited to it
    (orbit_model's session_schedule contract, tests/test_handover.py), a block's is the
    span's limited to the block, and the blocks' schedules joined are the span's. The
    gateway rides on the blocks the chunk's sessions were just swept over instead of
    sweeping the whole constellation over the chunk's window a second time, or over the
    whole span in every process. A window that sees no satellite above the mask takes
    session_visits' own fallback."""
    key = (id(sats), float(lat_deg), float(lon_deg), float(min_elevation_deg), t_ns.size,
           int(t_ns[-1]))
    got = _GATEWAY.get(key)
    if got is None or got[0] is not sats:
        _GATEWAY.clear()
        got = _GATEWAY[key] = (sats, {})
    blocks = got[1]
    parts = []
    for b in range(w0 // BLOCK_STEPS, w1 // BLOCK_STEPS + 1):
        if b not in blocks:
            lo, hi = b * BLOCK_STEPS, min(t_ns.size, (b + 1) * BLOCK_STEPS) - 1
            sch = session_schedule(sats.constellation,
                                   GroundPoints.from_degrees([lat_deg], [lon_deg]), t_ns,
                                   np.array([lo]), np.array([hi]),
                                   min_elevation_deg=min_elevation_deg,
                                   policy=ORBIT_MODEL_POLICY["highest-elevation"], sticky=False)
            blocks[b] = (np.searchsorted(t_ns, sch.time_ns), sch.satellite)
        parts.append(blocks[b])
    # a block's first entry may repeat the last one's satellite: _visits_of merges them
    steps = np.concatenate([p[0] for p in parts])
    sat = np.concatenate([p[1] for p in parts])
    i0 = int(np.searchsorted(steps, w0, side="right")) - 1      # the entry in force at w0
    i1 = int(np.searchsorted(steps, w1, side="right"))
    cut_steps = steps[i0:i1].copy()
    cut_steps[0] = w0
    cut_sat = sat[i0:i1]
    first, last = np.array([w0]), np.array([w1])
    if not np.any(cut_sat >= 0):
        return session_visits(sats, t_ns, np.array([lat_deg]), np.array([lon_deg]), first, last,
                              min_elevation_deg, "highest-elevation", False)
    return _visits_of(np.array([0, cut_sat.size], np.int64), t_ns[cut_steps], cut_sat, t_ns,
                      first, last)


@dataclass(frozen=True, eq=False)
class ChunkTrace:
    """One chunk's trace plus what the cost accounting needs beside it."""

    trace: Trace
    session_index: np.ndarray   # int64 (n,): global index of each session of the chunk
    session_end_ns: np.ndarray  # int64 (n,)
    window_step0: int           # global step index of pos[:, 0]
    pos: np.ndarray             # float64 (n_sats, n_t, 3): Earth-fixed km over the window
    gateway_sat: np.ndarray     # int32 (n_t,): satellite above the gateway at each step
    gateway_range_km: np.ndarray  # float64 (n_t,): gateway-to-satellite slant range
    uncovered_steps: int
    client_steps: int


def step_times(sc: Scenario) -> np.ndarray:
    """The scenario's schedule steps 0, step, ... covering the span (one grid for every
    chunk: orbit_model's positions at a step do not depend on the chunk)."""
    return np.arange(sc.duration_ns // sc.step_ns + 2, dtype=np.int64) * sc.step_ns


def build_trace(sc: Scenario, sats: SatelliteSet, sessions: np.ndarray, chunk: int,
                first_session: int, positions: PositionCache | None = None) -> ChunkTrace:
    """The trace of one chunk of sessions (rows of the session table, start-sorted)."""
    rng = chunk_rng(sc, chunk)
    step = sc.step_ns
    start, end = sessions["start_ns"], sessions["end_ns"]
    n = sessions.size
    j0 = start // step
    j1 = np.maximum((end - 1) // step, j0)
    w0 = int(j0.min())
    w1 = int(j1.max()) + 1
    if positions is None:
        positions = PositionCache(sats, step, 0)
    pos = np.ascontiguousarray(positions.window(w0, w1))
    t_ns = step_times(sc)
    wl = sc.workload
    ho = sc.handover
    gw_lat, gw_lon = sc.network.gateway_lat_deg, sc.network.gateway_lon_deg

    if ho.policy == "trail":
        h1 = ho.trail_handovers + 1
        per_plane = int(np.sum(sats.plane == ho.trail_plane))
        if per_plane < h1:
            raise ValueError(f"{sc.source}: handover.trail_plane {ho.trail_plane} "
                             f"has {per_plane} satellites, fewer than the {h1} visits")
        plane_sats = np.flatnonzero(sats.plane == ho.trail_plane)
        plane_sats = plane_sats[np.argsort(sats.slot[plane_sats])]
        visit_ns = int(round(ho.trail_visit_s * 1e9))
        if wl.access_rate_per_s > 0:
            visit_offsets = np.arange(n + 1, dtype=np.int64) * h1
            visit_start = (start[:, None] + visit_ns * np.arange(h1)[None, :]).reshape(-1)
            trace = _accesses(sc, rng, n, first_session, visit_offsets,
                              np.tile(plane_sats[:h1], n), visit_start, end)
        else:                                   # the paper's own workload: pager's trail
            params = pager.PaperParams(n_pages=wl.pages, accesses=wl.accesses_per_visit,
                                       handovers=ho.trail_handovers, zipf_s=wl.zipf_s)
            trace = pager.trail_trace(params, access_key(sc), n, first_session=first_session,
                                      satellites=plane_sats[:h1], start_ns=start,
                                      visit_ns=visit_ns)
        uncovered, client_steps = 0, 0
        gateway = None
    else:
        # the gateway rides along as one more client when it uses the same policy (the
        # ground-store gateway is not reallocated: it follows the highest satellite)
        same = ho.policy == "highest-elevation" and not ho.sticky and not ho.interval_s
        lat = np.append(sessions["lat_deg"], gw_lat) if same else sessions["lat_deg"]
        lon = np.append(sessions["lon_deg"], gw_lon) if same else sessions["lon_deg"]
        first = np.append(j0, w0) if same else j0
        last = np.append(j1, w1) if same else j1
        offs, visit_sat, visit_step, unc = session_visits(
            sats, t_ns, lat, lon, first, last, ho.min_elevation_deg, ho.policy, ho.sticky,
            int(round(ho.interval_s * 1e9)), int(round(ho.phase_s * 1e9)))
        uncovered = int(unc[:n].sum())
        client_steps = int(np.sum(j1 - j0 + 1))
        if same:
            gateway = (visit_sat[offs[n]:], visit_step[offs[n]:])
            offs, visit_sat, visit_step = offs[:n + 1], visit_sat[:offs[n]], visit_step[:offs[n]]
        else:
            gateway = None
        visit_offsets = offs
        vs = np.repeat(np.arange(n), np.diff(visit_offsets))
        visit_start = np.maximum(visit_step * step, start[vs])
        trace = _accesses(sc, rng, n, first_session, visit_offsets, visit_sat, visit_start, end)

    # the satellite above the ground-store gateway at every step of the window
    nt = w1 - w0 + 1
    if gateway is None:
        _, g_sat, g_step, _ = gateway_visits(sats, t_ns, gw_lat, gw_lon, w0, w1,
                                             ho.min_elevation_deg)
        gateway = (g_sat, g_step)
    g_sat, g_step = gateway
    gsat = np.repeat(g_sat, np.diff(np.append(np.maximum(g_step, w0), w1 + 1))).astype(np.int32)
    gpos = GroundPoints.from_degrees([gw_lat], [gw_lon]).itrs_km[0]
    grange = np.linalg.norm(pos[gsat, np.arange(nt)] - gpos, axis=1)
    return ChunkTrace(trace=trace, session_index=np.arange(n) + first_session,
                      session_end_ns=np.asarray(end, np.int64), window_step0=w0, pos=pos,
                      gateway_sat=gsat, gateway_range_km=grange, uncovered_steps=uncovered,
                      client_steps=client_steps)


def _accesses(sc: Scenario, rng: np.random.Generator, n: int, first_session: int,
              visit_offsets: np.ndarray, visit_sat: np.ndarray, visit_start: np.ndarray,
              end: np.ndarray) -> Trace:
    """Accesses of each visit: Poisson counts at the scenario's rate (or a fixed count),
    times uniform in the visit (or evenly spaced), pages from pager's session streams."""
    last = visit_offsets[1:] - 1
    visit_end = np.empty_like(visit_start)
    visit_end[:-1] = visit_start[1:]
    visit_end[last] = end
    vdur_ns = np.maximum(visit_end - visit_start, 0)
    wl = sc.workload
    if wl.access_rate_per_s > 0:
        n_acc = rng.poisson(wl.access_rate_per_s * vdur_ns / 1e9)
    else:
        n_acc = np.full(visit_start.size, wl.accesses_per_visit, dtype=np.int64)
    access_offsets = np.zeros(visit_start.size + 1, dtype=np.int64)
    np.cumsum(n_acc, out=access_offsets[1:])
    a_visit = np.repeat(np.arange(visit_start.size), n_acc)
    if wl.access_rate_per_s > 0:
        frac = rng.random(a_visit.size)
        # sort within each visit: order by (visit, frac)
        frac = np.sort(frac + a_visit) - a_visit
    else:
        k = np.arange(a_visit.size) - access_offsets[a_visit]
        frac = (k + 0.5) / np.maximum(n_acc[a_visit], 1)
    a_time = visit_start[a_visit] + np.floor(frac * vdur_ns[a_visit]).astype(np.int64)
    per_session = np.add.reduceat(n_acc, visit_offsets[:-1]) if n_acc.size else np.zeros(n, int)
    sampler = pager.ZipfSampler.zipf(wl.pages, wl.zipf_s)
    a_page = sampler.session_pages(access_key(sc), first_session + np.arange(n), per_session)
    return Trace(n_pages=wl.pages, visit_offsets=visit_offsets,
                 visit_satellite=np.asarray(visit_sat, np.int32),
                 visit_start_ns=np.asarray(visit_start, np.int64),
                 access_offsets=access_offsets, access_page=a_page,
                 access_time_ns=a_time.astype(np.int64))
