"""Building a `ViewData` (format satpage-view/1): from a finished `compare` run
(``from_run``), or from the parts any source has (``view_from_parts``: the synthetic
Starlink view of the speed test uses it; a live source can too).

Per-session detail is not re-implemented here: the sampled sessions are re-run
through pager's public replay (``pager.replay(..., events=True)``) on the exact
traces of the run (``satpage.simulate.chunk_trace``), and their holdings are
read off pager's event log.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

import pager
from pager import Trace
from satpage.view.model import GROUND_HOLDER, ViewData

__all__ = ["from_run", "view_from_parts", "SessionSample", "session_sample", "frame_times_ns",
           "population_layer", "satellite_frames", "sample_sessions", "MAX_FRAMES",
           "MAX_CLIENTS", "DEFAULT_SAMPLE", "SESSION_COUNTERS", "trace_subset"]

log = logging.getLogger(__name__)

#: slider positions at most (the frame step is a multiple of the schedule step):
#: 360 x 4,408 satellites x 4 bytes = 6.3 MB before compression
MAX_FRAMES = 360
#: clients drawn at most (an even stride over the start-ordered session table)
MAX_CLIENTS = 20_000
#: sessions re-run for the per-session detail, by default
DEFAULT_SAMPLE = 200
#: pager counters kept per sampled session (pager.COUNTER_DTYPE names)
SESSION_COUNTERS = ("accesses", "hits", "fault_moves", "handover_moves", "push_moves",
                    "remote_accesses", "trail_hops", "created")
#: spawn key of the sample's random stream: a child of the session-table seed
#: (SeedSequence(seed, spawn_key=(0,)), satpage.workload), which spawns nothing itself
SAMPLE_SPAWN_KEY = (0, 1)


def frame_times_ns(duration_ns: int, step_ns: int, max_frames: int = MAX_FRAMES) -> np.ndarray:
    """int64 frame times 0, d, 2d, ... <= duration, d a multiple of ``step_ns`` chosen so
    that there are at most ``max_frames`` frames."""
    if duration_ns <= 0 or step_ns <= 0:
        raise ValueError(f"duration_ns and step_ns must be positive, got {duration_ns}, {step_ns}")
    k = max(1, math.ceil(duration_ns / step_ns / (max_frames - 1)))
    return np.arange(0, duration_ns + 1, k * step_ns, dtype=np.int64)


def satellite_frames(constellation, t_ns: np.ndarray) -> np.ndarray:
    """int16 (F, N, 2): sub-satellite geodetic latitude and longitude in centidegrees
    (orbit_model.subsatellite_points; 0.01 deg is about 1 km, below a pixel)."""
    from orbit_model import subsatellite_points

    out = np.empty((t_ns.size, constellation.n_satellites, 2), np.int16)
    for j in range(0, t_ns.size, 60):       # bounded memory at Starlink scale
        lat, lon = subsatellite_points(constellation, t_ns[j:j + 60])
        lon = (np.nan_to_num(lon) + 180.0) % 360.0 - 180.0
        out[j:j + 60, :, 0] = np.round(np.nan_to_num(lat).T * 100)
        out[j:j + 60, :, 1] = np.clip(np.round(lon.T * 100), -18000, 17999)
    return out


#: finest backdrop cell: a finer GPW grid (gpw:PATH, down to 30 arc-seconds) is summed
#: into blocks of about this size, so the backdrop stays below ~260 kB
BACKDROP_CELL_DEG = 0.5


def population_layer(grid) -> tuple[np.ndarray, dict]:
    """uint8 (rows, cols) log10 population density, 0..255, and its extent."""
    counts = np.nan_to_num(np.asarray(grid.counts() if callable(getattr(grid, "counts", None))
                                      else grid.counts, float))
    cell_deg = float(grid.cell_size_deg)
    k = max(1, int(round(BACKDROP_CELL_DEG / cell_deg)))
    if k > 1:
        r, c = (-(-counts.shape[0] // k)) * k, (-(-counts.shape[1] // k)) * k
        padded = np.zeros((r, c))
        padded[:counts.shape[0], :counts.shape[1]] = counts
        counts = padded.reshape(r // k, k, c // k, k).sum(axis=(1, 3))
        cell_deg *= k
    lat = grid.north_deg - (np.arange(counts.shape[0]) + 0.5) * cell_deg
    cell_km2 = (111.32 * cell_deg) ** 2 * np.maximum(np.cos(np.radians(lat)), 1e-3)
    dens = counts / cell_km2[:, None]
    top = float(dens.max()) or 1.0
    img = np.round(255 * np.log10(1 + dens) / np.log10(1 + top)).astype(np.uint8)
    meta = {"west_deg": float(grid.west_deg), "north_deg": float(grid.north_deg),
            "cell_size_deg": cell_deg,
            "max_per_km2": top, "scale": "255 * log10(1 + per_km2) / log10(1 + max_per_km2)",
            "source": "GPW v4.11 2020, 30 arc-min (CC BY 4.0, CIESIN), data/"
            if not str(getattr(grid, "source", "")).startswith("gpw:") else grid.source}
    return img, meta


#: chunks whose traces are rebuilt for the sample, at most: bounds the view's cost on
#: large runs (100,000 sessions are 400 chunks; the sample comes from 16 of them)
MAX_SAMPLE_CHUNKS = 16


def sample_sessions(seed: int, n_sessions: int, n_sample: int,
                    chunk_sessions: int | None = None,
                    max_chunks: int = MAX_SAMPLE_CHUNKS) -> np.ndarray:
    """Sorted indices of ``n_sample`` sessions (all when fewer), drawn without replacement
    from ``SeedSequence(seed, spawn_key=SAMPLE_SPAWN_KEY)``. With ``chunk_sessions``,
    from at most ``max_chunks`` chunks of that many sessions, spread evenly over the
    start-ordered table (so over the run's time)."""
    pool = np.arange(n_sessions, dtype=np.int64)
    if chunk_sessions:
        n_chunks = -(-n_sessions // chunk_sessions)
        if n_chunks > max_chunks:
            chunks = np.unique(np.linspace(0, n_chunks - 1, max_chunks).round().astype(np.int64))
            pool = pool[np.isin(pool // chunk_sessions, chunks)]
    if n_sample >= pool.size:
        return pool
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed,
                                                                     spawn_key=SAMPLE_SPAWN_KEY)))
    return np.sort(rng.choice(pool, n_sample, replace=False)).astype(np.int64)


def trace_subset(trace: Trace, sessions: np.ndarray) -> Trace:
    """The sessions ``sessions`` (indices in ``trace``) as a Trace of their own."""
    vo, ao = trace.visit_offsets, trace.access_offsets
    visits = np.concatenate([np.arange(vo[s], vo[s + 1]) for s in sessions]) \
        if len(sessions) else np.zeros(0, np.int64)
    nv = vo[np.asarray(sessions) + 1] - vo[np.asarray(sessions)]
    v_off = np.zeros(len(sessions) + 1, np.int64)
    np.cumsum(nv, out=v_off[1:])
    acc = np.concatenate([np.arange(ao[v], ao[v + 1]) for v in visits]) \
        if visits.size else np.zeros(0, np.int64)
    na = ao[visits + 1] - ao[visits]
    a_off = np.zeros(visits.size + 1, np.int64)
    np.cumsum(na, out=a_off[1:])
    return Trace(n_pages=trace.n_pages, visit_offsets=v_off,
                 visit_satellite=trace.visit_satellite[visits],
                 visit_start_ns=trace.visit_start_ns[visits], access_offsets=a_off,
                 access_page=trace.access_page[acc], access_time_ns=trace.access_time_ns[acc])


@dataclass(frozen=True, eq=False)
class SessionSample:
    """The sampled sessions' detail: arrays of ARRAY_SPECS (sess_*, visit_*, hold_*)."""

    arrays: dict[str, np.ndarray]


def session_sample(trace: Trace, session_index: np.ndarray, session_end_ns: np.ndarray,
                   lat_deg: np.ndarray, lon_deg: np.ndarray,
                   strategies: Sequence[tuple[str, pager.Strategy]], frame_ns: np.ndarray,
                   window_edges_ns: np.ndarray) -> SessionSample:
    """Replay ``trace`` (the sampled sessions only) under each strategy with pager and
    read from its event log, per session: the pages each satellite holds at every frame
    of the session (rows at frames from the one at or before its start to the one at or
    after its end, state at the frame time clamped into the session), the movements in
    each time window and pager's counters.

    Holdings: a CREATE adds a page to its visit's satellite; FAULT, HANDOVER and PUSH
    move one from the ``from_visit``'s holder (or the ground) to the ``to_visit``'s;
    REMOTE moves nothing. The holdings at the session end equal pager's
    ``held_at_end`` (tests/test_view.py checks it)."""
    k = trace.n_sessions
    vo = trace.visit_offsets
    start_ns = trace.visit_start_ns[vo[:-1]] if k else np.zeros(0, np.int64)
    n_w = window_edges_ns.size - 1
    n_s = len(strategies)
    hold_rows: list[np.ndarray] = []
    hold_off = np.zeros((n_s, k + 1), np.int32)
    moves = np.zeros((n_s, k, n_w), np.int32)
    counters = np.zeros((n_s, k, len(SESSION_COUNTERS)), np.float64)
    n_rows = 0
    for si, (_, strategy) in enumerate(strategies):
        r = pager.replay(trace, strategy, events=True, log_creations=True)
        for ci, name in enumerate(SESSION_COUNTERS):
            counters[si, :, ci] = r.counters[name]
        ev = r.events
        kind = ev["kind"].astype(np.int64)
        moving = kind != int(pager.EventKind.REMOTE)
        is_move = moving & (kind != int(pager.EventKind.CREATE))
        w = np.clip(np.searchsorted(window_edges_ns, ev["time_ns"], side="right") - 1, 0, n_w - 1)
        moves[si] = np.bincount(ev["session"][is_move].astype(np.int64) * n_w + w[is_move],
                                minlength=k * n_w).reshape(k, n_w)
        ev_off = np.searchsorted(ev["session"], np.arange(k + 1))
        hold_off[si, 0] = n_rows
        for s in range(k):
            rows = _holdings(ev[ev_off[s]:ev_off[s + 1]][moving[ev_off[s]:ev_off[s + 1]]],
                             trace.visit_satellite, int(start_ns[s]), int(session_end_ns[s]),
                             frame_ns)
            hold_rows.append(rows)
            n_rows += rows.shape[0]
            hold_off[si, s + 1] = n_rows
    hold = np.concatenate(hold_rows) if hold_rows else np.zeros((0, 3), np.int64)
    lon = (np.asarray(lon_deg, float) + 180.0) % 360.0 - 180.0
    arrays = {
        "sess_index": np.asarray(session_index, np.int32),
        "sess_latlon_cdeg": np.round(np.stack([lat_deg, lon], axis=1) * 100).astype(np.int16)
        .reshape(k, 2),
        "sess_t_s": np.stack([start_ns, session_end_ns], axis=1).astype(np.float64).reshape(k, 2)
        / 1e9,
        "sess_visit_offsets": np.asarray(vo, np.int32),
        "visit_sat": np.asarray(trace.visit_satellite, np.int32),
        "visit_start_s": np.asarray(trace.visit_start_ns, np.float64) / 1e9,
        "hold_offsets": hold_off,
        "hold_frame": hold[:, 0].astype(np.int32),
        "hold_sat": hold[:, 1].astype(np.int32),
        "hold_pages": hold[:, 2].astype(np.int32),
        "sess_window_moves": moves,
        "sess_counters": counters,
    }
    return SessionSample(arrays)


def _holdings(ev: np.ndarray, visit_sat: np.ndarray, start_ns: int, end_ns: int,
              frame_ns: np.ndarray) -> np.ndarray:
    """int64 (h, 3) rows (frame, holder, pages > 0) of one session's moving events."""
    f0 = max(int(np.searchsorted(frame_ns, start_ns, side="right")) - 1, 0)
    f1 = min(int(np.searchsorted(frame_ns, end_ns, side="left")), frame_ns.size - 1)
    frames = np.arange(f0, f1 + 1)
    t = np.clip(frame_ns[frames], start_ns, end_ns)
    to_h = visit_sat[ev["to_visit"]].astype(np.int64)
    fv = ev["from_visit"].astype(np.int64)
    from_h = np.where(fv >= 0, visit_sat[np.maximum(fv, 0)], GROUND_HOLDER)
    created = ev["kind"] == int(pager.EventKind.CREATE)
    holders = np.unique(np.concatenate([to_h, from_h[~created]]))
    if holders.size == 0 or frames.size == 0:
        return np.zeros((0, 3), np.int64)
    # pages held by holder h at time t = arrivals at h up to t minus departures from h up
    # to t: counted by binary search in (holder, time) keys, no per-event loop
    # (times from the earliest: a push can precede the session's first frame)
    t0 = min(int(ev["time_ns"].min()), int(t.min()))
    tev = ev["time_ns"].astype(np.int64) - t0
    t = t - t0
    span = int(max(int(tev.max()), int(t.max()))) + 1
    hidx = np.arange(holders.size, dtype=np.int64)
    q = hidx[None, :] * span + t[:, None]                              # (frames, holders)

    def counted(h: np.ndarray, times: np.ndarray) -> np.ndarray:
        key = np.sort(np.searchsorted(holders, h).astype(np.int64) * span + times)
        return (np.searchsorted(key, q, side="right")
                - np.searchsorted(key, hidx * span, side="left")[None, :])

    at = counted(to_h, tev) - counted(from_h[~created], tev[~created])
    fi, hi = np.nonzero(at > 0)
    return np.stack([frames[fi], holders[hi], at[fi, hi]], axis=1).astype(np.int64)


def view_from_parts(*, meta: dict, constellation, frame_ns: np.ndarray, links: np.ndarray,
                    window_edges_ns: np.ndarray, link_load_pages: np.ndarray,
                    held_pages: np.ndarray, client_lat_deg: np.ndarray,
                    client_lon_deg: np.ndarray, client_t_ns: np.ndarray,
                    sample: SessionSample, population, min_elevation_deg: float,
                    sat_frames: np.ndarray | None = None,
                    link_capacity_bytes_per_s: np.ndarray | None = None,
                    link_background_util: np.ndarray | None = None) -> ViewData:
    """A validated ViewData from its parts (shapes as in satpage.view.model); with
    capacities (and optionally a background utilisation (W, L)) the page shows
    link utilisation."""
    from orbit_model.kernels import footprint_central_angle_rad

    n_sats = constellation.n_satellites
    alt = np.array([sh.altitude_km for sh in constellation.shells])[np.asarray(constellation.shell)]
    foot = footprint_central_angle_rad(alt, min_elevation_deg).astype(np.float32)
    plane = np.asarray(constellation.plane, np.int32)
    pop_img, pop_meta = population_layer(population)
    n_c = len(client_lat_deg)
    if n_c > MAX_CLIENTS:
        keep = np.linspace(0, n_c - 1, MAX_CLIENTS).round().astype(np.int64)
        client_lat_deg, client_lon_deg = client_lat_deg[keep], client_lon_deg[keep]
        client_t_ns = client_t_ns[keep]
    c_lon = (np.asarray(client_lon_deg, float) + 180.0) % 360.0 - 180.0
    arrays = {
        "frame_t_s": frame_ns.astype(np.float64) / 1e9,
        "sat_latlon_cdeg": sat_frames if sat_frames is not None
        else satellite_frames(constellation, frame_ns),
        "sat_plane": plane,
        "sat_shell": np.asarray(constellation.shell, np.int32),
        "footprint_rad": foot,
        "links": np.asarray(links, np.int32).reshape(-1, 2),
        "window_edges_s": window_edges_ns.astype(np.float64) / 1e9,
        "link_load_pages": np.minimum(link_load_pages, 2**32 - 1).astype(np.uint32),
        "held_pages": held_pages.astype(np.int32),
        "client_latlon_cdeg": np.round(np.stack([client_lat_deg, c_lon], axis=1) * 100)
        .astype(np.int16).reshape(-1, 2),
        "client_t_s": (np.asarray(client_t_ns, np.float64) / 1e9).astype(np.float32)
        .reshape(-1, 2),
        "population": pop_img,
        **sample.arrays,
    }
    if link_capacity_bytes_per_s is not None:
        arrays["link_capacity_bytes_per_s"] = np.broadcast_to(
            np.asarray(link_capacity_bytes_per_s, np.float32), (arrays["links"].shape[0],)).copy()
        if link_background_util is not None:
            arrays["link_background_util"] = np.asarray(link_background_util, np.float32)
    meta = {**meta, "satellites": n_sats, "min_elevation_deg": float(min_elevation_deg),
            "population": pop_meta, "session_counters": list(SESSION_COUNTERS),
            "ground_holder": GROUND_HOLDER}
    view = ViewData(meta, arrays)
    view.validate()
    return view


def from_run(res, n_sample: int = DEFAULT_SAMPLE,
             on_progress: Callable[[str], None] | None = None) -> ViewData:
    """The view of a finished `satpage compare` run (a satpage.simulate.RunResult)."""
    from orbit_model import Constellation, PopulationGrid
    from satpage.simulate import chunk_trace, strategy_for
    from satpage.version import code_version

    sc = res.scenario
    w = res.world
    names = list(res.costs)
    strategies = [(n, strategy_for(sc, n)) for n in names]
    frames = frame_times_ns(sc.duration_ns, sc.step_ns)
    bins = sc.network.load_bins
    edges = (np.arange(bins + 1, dtype=np.int64) * sc.duration_ns) // bins

    # ISL load per link: the accumulators count per link id, a row of orbit_model's links
    links = np.asarray(w.routing.links.endpoints, dtype=np.int64)
    ids = np.arange(links.shape[0])
    load = np.stack([res.costs[n].link_load[:, ids] for n in names])
    held = np.stack([res.costs[n].held_series().T for n in names])

    # sampled sessions, re-run chunk by chunk on the run's own traces
    pick = sample_sessions(sc.seed, w.sessions.size, n_sample, sc.run.chunk_sessions)
    c = sc.run.chunk_sessions
    parts = []
    for chunk in np.unique(pick // c):
        if on_progress:
            on_progress(f"chunk {chunk}")
        ct = chunk_trace(w, int(chunk))
        local = pick[pick // c == chunk] - chunk * c
        parts.append((trace_subset(ct.trace, local), ct.session_end_ns[local]))
    trace = _concat_traces(parts, sc.workload.pages)
    end_ns = np.concatenate([p[1] for p in parts]) if parts else np.zeros(0, np.int64)
    rows = w.sessions[pick]
    sample = session_sample(trace, pick, end_ns, rows["lat_deg"], rows["lon_deg"], strategies,
                            frames, edges)
    constellation = Constellation.from_spec(sc.constellation.spec, epoch=sc.epoch)
    if constellation.n_satellites != w.sats.n_sats:
        raise AssertionError("the view's constellation differs from the run's")
    result_strategies = res.summaries()
    meta = {"source": "compare", "scenario": sc.name, "scenario_file": sc.source,
            "seed": sc.seed, "version": code_version(), "epoch": sc.epoch.isoformat(),
            "constellation": sc.constellation.spec, "strategies": names,
            "page_bytes": sc.workload.page_bytes, "pages_per_session": sc.workload.pages,
            "sessions": int(w.sessions.size), "sampled_sessions": int(pick.size),
            "totals": {n: {k: float(v) for k, v in result_strategies[n].items()} for n in names}}
    sess = w.sessions
    extra = {}
    if getattr(w, "links", None) is not None:
        # i20's link model: capacity and background utilisation per bin (satpage.linkmodel)
        extra = {"link_capacity_bytes_per_s": w.links.capacity_gbps * 1e9 / 8.0,
                 "link_background_util": w.links.background[:, ids]}
    return view_from_parts(**extra,
        meta=meta, constellation=constellation, frame_ns=frames, links=links,
        window_edges_ns=edges, link_load_pages=load, held_pages=held,
        client_lat_deg=sess["lat_deg"], client_lon_deg=sess["lon_deg"],
        client_t_ns=np.stack([sess["start_ns"], sess["end_ns"]], axis=1), sample=sample,
        population=PopulationGrid.from_spec(sc.clients.source),
        min_elevation_deg=sc.handover.min_elevation_deg)


def _concat_traces(parts: list[tuple[Trace, np.ndarray]], n_pages: int) -> Trace:
    if not parts:
        z = np.zeros(0, np.int64)
        return Trace(n_pages, np.zeros(1, np.int64), z.astype(np.int32), z,
                     np.zeros(1, np.int64), z.astype(np.int32), z)
    vo, ao = [np.zeros(1, np.int64)], [np.zeros(1, np.int64)]
    for t, _ in parts:
        vo.append(t.visit_offsets[1:] + vo[-1][-1])
        ao.append(t.access_offsets[1:] + ao[-1][-1])
    ts = [p[0] for p in parts]
    return Trace(n_pages, np.concatenate(vo), np.concatenate([t.visit_satellite for t in ts]),
                 np.concatenate([t.visit_start_ns for t in ts]), np.concatenate(ao),
                 np.concatenate([t.access_page for t in ts]),
                 np.concatenate([t.access_time_ns for t in ts]))
