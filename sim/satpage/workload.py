"""From a scenario to `pager.Trace`s: sessions, their handover schedules, their accesses.

Randomness follows one rule so that results do not depend on the process count:
``SeedSequence(seed)`` spawns child 0 for the session table (drawn once, whole)
and child ``1 + i`` for chunk ``i`` of sessions (accesses). Sessions are sorted by
start time, so a chunk covers a short time window and its satellite positions
stay small.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numba
import numpy as np

from pager import Trace
from satpage.geometry import EARTH_RADIUS_KM, PositionCache, SatelliteSet, ground_ecef_km
from satpage.scenario import Scenario

__all__ = ["SESSION_DTYPE", "make_sessions", "chunk_rng", "build_trace", "ChunkTrace",
           "serving_schedule", "zipf_cdf", "POLICY_CODES"]

log = logging.getLogger(__name__)

SESSION_DTYPE = np.dtype([("lat_deg", "f8"), ("lon_deg", "f8"),
                          ("start_ns", "i8"), ("end_ns", "i8")])
POLICY_CODES = {"highest-elevation": 0, "longest-visibility": 1, "nearest": 2}


def root_seed_sequence(sc: Scenario) -> np.random.SeedSequence:
    return np.random.SeedSequence(sc.seed)


def chunk_rng(sc: Scenario, chunk: int) -> np.random.Generator:
    """The Generator of chunk ``chunk``: child ``1 + chunk`` of the scenario seed."""
    return np.random.Generator(np.random.PCG64(
        np.random.SeedSequence(sc.seed, spawn_key=(1 + chunk,))))


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


def zipf_cdf(n_pages: int, s: float) -> np.ndarray:
    """Cumulative Zipf probabilities over ranks 1..N (page index = rank - 1)."""
    w = np.arange(1, n_pages + 1, dtype=np.float64) ** (-float(s))
    c = np.cumsum(w)
    return c / c[-1]


@numba.njit(cache=True, nogil=True)
def _schedule_kernel(pos, order, slat, g, up, lat_rad, max_angle_rad, j0, j1, sin_min, policy,
                     sticky, out_offsets, out_sat, uncovered):
    """Serving satellite at each step j0[i]..j1[i] (inclusive) of each client i.

    pos: (n_sats, n_t, 3) for steps 0..n_t-1 of the window; g, up: (n_clients, 3).
    Only satellites whose latitude is within ``max_angle_rad`` of the client's can be
    above the minimum elevation (|delta latitude| <= central angle), so each step
    scans the band ``slat[j]`` (latitudes sorted, ``order[j]`` their satellites)."""
    n_band = slat.shape[1]
    for i in range(g.shape[0]):
        cur = -1
        base = out_offsets[i]
        for j in range(j0[i], j1[i] + 1):
            best = -1
            best_v = -1e30
            best_any = 0
            best_any_v = -1e30
            keep = False
            lo = np.searchsorted(slat[j], lat_rad[i] - max_angle_rad)
            hi = np.searchsorted(slat[j], lat_rad[i] + max_angle_rad, side="right")
            if cur < 0:
                lo = 0          # first step: also find the best satellite below the mask
                hi = n_band
            for kk in range(lo, hi):
                s = order[j, kk]
                vx = pos[s, j, 0] - g[i, 0]
                vy = pos[s, j, 1] - g[i, 1]
                vz = pos[s, j, 2] - g[i, 2]
                h = vx * up[i, 0] + vy * up[i, 1] + vz * up[i, 2]
                rng = np.sqrt(vx * vx + vy * vy + vz * vz)
                se = h / rng
                if se > best_any_v:
                    best_any_v = se
                    best_any = s
                if se < sin_min:
                    continue
                if s == cur:
                    keep = True
                if policy == 2:
                    v = -rng
                elif policy == 1:
                    # remaining visibility (steps) from j, looking ahead to the session end
                    v = 0.0
                    for jj in range(j, j1[i] + 1):
                        wx = pos[s, jj, 0] - g[i, 0]
                        wy = pos[s, jj, 1] - g[i, 1]
                        wz = pos[s, jj, 2] - g[i, 2]
                        hh = wx * up[i, 0] + wy * up[i, 1] + wz * up[i, 2]
                        if hh / np.sqrt(wx * wx + wy * wy + wz * wz) < sin_min:
                            break
                        v += 1.0
                else:
                    v = se
                if v > best_v:
                    best_v = v
                    best = s
            if keep and (sticky or policy == 1):
                best = cur
            if best < 0:
                uncovered[0] += 1
                best = cur if cur >= 0 else best_any
            out_sat[base + j - j0[i]] = best
            cur = best


def latitude_band(pos: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """Per step, the satellites in order of geocentric latitude and those latitudes
    (radians), and the largest orbit radius: what the schedule kernel scans."""
    r = np.linalg.norm(pos, axis=2)
    sat_lat = np.arcsin(np.clip(pos[..., 2] / np.where(r > 0, r, 1.0), -1.0, 1.0)).T
    sat_lat = np.where(np.isfinite(sat_lat), sat_lat, 10.0)      # failed SGP4: never in a band
    order = np.ascontiguousarray(np.argsort(sat_lat, axis=1)).astype(np.int64)
    slat = np.ascontiguousarray(np.take_along_axis(sat_lat, order, axis=1))
    r_max = float(np.nanmax(r)) if r.size else EARTH_RADIUS_KM
    return order, slat, r_max


def serving_schedule(pos: np.ndarray, lat_deg: np.ndarray, lon_deg: np.ndarray,
                     j0: np.ndarray, j1: np.ndarray, min_elevation_deg: float, policy: str,
                     sticky: bool = False, band: tuple | None = None
                     ) -> tuple[np.ndarray, np.ndarray, int]:
    """Per client, the serving satellite at each step ``j0..j1`` (indices into ``pos``'s
    time axis). Returns (offsets int64 (n+1,), satellite int32, uncovered step count).
    A step with no satellite above the minimum elevation keeps the previous server
    (or the highest one at the start) and is counted as uncovered."""
    g, up = ground_points(lat_deg, lon_deg)
    pos = np.ascontiguousarray(pos)
    order, slat, r_max = band if band is not None else latitude_band(pos)
    # largest central angle at which a satellite at the highest radius is above the mask
    el = np.radians(min_elevation_deg)
    max_angle = float(np.arccos(np.clip(EARTH_RADIUS_KM * np.cos(el) / r_max, -1, 1)) - el)
    max_angle += np.radians(0.5)      # the ellipsoid's ground radius is below the equator's
    counts = (np.asarray(j1) - np.asarray(j0) + 1).astype(np.int64)
    offsets = np.zeros(counts.size + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    sat = np.empty(int(offsets[-1]), dtype=np.int32)
    unc = np.zeros(1, dtype=np.int64)
    g_lat = np.arctan2(g[:, 2], np.hypot(g[:, 0], g[:, 1]))      # geocentric, as sat_lat
    _schedule_kernel(pos, order, slat, g, up, g_lat,
                     max_angle, np.asarray(j0, np.int64), np.asarray(j1, np.int64),
                     np.sin(np.radians(min_elevation_deg)), POLICY_CODES[policy], bool(sticky),
                     offsets, sat, unc)
    return offsets, sat, int(unc[0])


def ground_points(lat_deg: np.ndarray, lon_deg: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Earth-fixed positions (km) and local vertical of ground points: on the WGS 84
    ellipsoid as orbit_model.visibility places them (so elevations agree with its
    passes and schedules), on the sphere without it."""
    lat = np.atleast_1d(np.asarray(lat_deg, float))
    lon = np.atleast_1d(np.asarray(lon_deg, float))
    try:
        from orbit_model.visibility import GroundPoints
    except ImportError:
        g = ground_ecef_km(lat, lon).reshape(-1, 3)
        return g, g / EARTH_RADIUS_KM
    gp = GroundPoints.from_degrees(lat, lon)
    return np.ascontiguousarray(gp.itrs_km), np.ascontiguousarray(gp.up)


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
    band = latitude_band(pos)

    if sc.handover.policy == "trail":
        h1 = sc.handover.trail_handovers + 1
        per_plane = int(np.sum(sats.plane == sc.handover.trail_plane))
        if per_plane < h1:
            raise ValueError(f"{sc.source}: handover.trail_plane {sc.handover.trail_plane} "
                             f"has {per_plane} satellites, fewer than the {h1} visits")
        plane_sats = np.flatnonzero(sats.plane == sc.handover.trail_plane)
        plane_sats = plane_sats[np.argsort(sats.slot[plane_sats])]
        visit_sat = np.tile(plane_sats[:h1], n).astype(np.int32)
        visit_offsets = np.arange(n + 1, dtype=np.int64) * h1
        vdur = int(round(sc.handover.trail_visit_s * 1e9))
        visit_start = (start[:, None] + vdur * np.arange(h1)[None, :]).reshape(-1)
        uncovered, client_steps = 0, 0
    else:
        offs, sat, uncovered = serving_schedule(
            pos, sessions["lat_deg"], sessions["lon_deg"], j0 - w0, j1 - w0,
            sc.handover.min_elevation_deg, sc.handover.policy, sc.handover.sticky, band)
        client_steps = int(offs[-1])
        # visits = runs of the same serving satellite within a session
        sess_of_step = np.repeat(np.arange(n), np.diff(offs))
        new = np.ones(sat.size, dtype=bool)
        new[1:] = (sat[1:] != sat[:-1]) | (sess_of_step[1:] != sess_of_step[:-1])
        first = np.flatnonzero(new)
        visit_sat = sat[first]
        vs = sess_of_step[first]
        step_global = (np.arange(sat.size) - offs[sess_of_step] + j0[sess_of_step])
        visit_start = np.maximum(step_global[first] * step, start[vs])
        visit_offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(vs, minlength=n), out=visit_offsets[1:])

    vsess = np.repeat(np.arange(n), np.diff(visit_offsets))
    visit_end = np.empty_like(visit_start)
    visit_end[:-1] = visit_start[1:]
    last = visit_offsets[1:] - 1
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
    cdf = zipf_cdf(wl.pages, wl.zipf_s)
    a_page = np.minimum(np.searchsorted(cdf, rng.random(a_visit.size), side="right"),
                        wl.pages - 1).astype(np.int32)

    trace = Trace(n_pages=wl.pages, visit_offsets=visit_offsets,
                  visit_satellite=np.asarray(visit_sat, np.int32),
                  visit_start_ns=np.asarray(visit_start, np.int64),
                  access_offsets=access_offsets, access_page=a_page,
                  access_time_ns=a_time.astype(np.int64))

    # the satellite above the ground-store gateway at every step of the window
    nt = w1 - w0 + 1
    goffs, gsat, _ = serving_schedule(pos, np.array([sc.network.gateway_lat_deg]),
                                      np.array([sc.network.gateway_lon_deg]),
                                      np.array([0]), np.array([nt - 1]),
                                      sc.handover.min_elevation_deg, "highest-elevation",
                                      band=band)
    gpos = ground_points(np.array([sc.network.gateway_lat_deg]),
                         np.array([sc.network.gateway_lon_deg]))[0][0]
    grange = np.linalg.norm(pos[gsat, np.arange(nt)] - gpos, axis=1)
    del vsess
    return ChunkTrace(trace=trace, session_index=np.arange(n) + first_session,
                      session_end_ns=np.asarray(end, np.int64), window_step0=w0, pos=pos,
                      gateway_sat=gsat, gateway_range_km=grange, uncovered_steps=uncovered,
                      client_steps=client_steps)
