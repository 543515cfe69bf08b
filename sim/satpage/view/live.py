"""The view of a running live cluster (docs/live.md): the constellation the gateway's
ephemeris describes, from the gateway's clock onwards, and the serving satellites of
given places, in the same format (satpage-view/1, ``source: "live"``). The page
follows the cluster's clock (``meta["clock"]``).

What it does not show yet: the live sessions' pages and the ISL load, because the
gateway has no call that lists its live sessions; the per-window arrays are zeros and
the places carry no holdings.
"""

from __future__ import annotations

import time

import numpy as np

from satpage.view.build import (
    SESSION_COUNTERS,
    SessionSample,
    frame_times_ns,
    view_from_parts,
)
from satpage.view.model import ViewData

__all__ = ["live_view", "LIVE_WALL_MINUTES"]

#: the view covers this much wall time of the cluster's clock by default (capped at the
#: ephemeris horizon and 24 h of constellation time)
LIVE_WALL_MINUTES = 30.0


def live_view(clock, places: list[tuple[float, float]], minutes: float | None = None,
              wall_unix_s: float | None = None) -> ViewData:
    """A ViewData of the live constellation from ``clock.now_ns`` for ``minutes`` of
    constellation time (default: 30 wall minutes at the clock's speed). ``clock`` is a
    satpage.client.ClockInfo; ``places`` (lat, lon) become sessions whose visits are
    orbit_model's schedule for them under the gateway's policy."""
    from orbit_model import Constellation, PopulationGrid, parse_epoch
    from orbit_model.kernels import grid_links
    from satpage.live import reference_schedule

    wall = time.time() if wall_unix_s is None else wall_unix_s
    now = int(clock.now_ns)
    if minutes is None:
        minutes = min(LIVE_WALL_MINUTES * max(clock.speed, 1.0), 24 * 60.0)
    if not minutes > 0:
        raise ValueError(f"--minutes must be positive, got {minutes}")
    end = now + int(minutes * 60e9)
    if clock.ephemeris_end_ns > now:
        end = min(end, int(clock.ephemeris_end_ns))
    step = int(clock.step_ns) or 10_000_000_000
    frames = now + frame_times_ns(max(end - now, step), step)
    epoch = parse_epoch(clock.epoch)
    c = Constellation.from_spec(clock.constellation, epoch=epoch)
    links = np.asarray(grid_links(c).endpoints, np.int32)
    n_w = 1
    edges = np.array([now, int(frames[-1])], np.int64)

    # the places: orbit_model's schedule from the epoch, cut to the view's span
    vo, vsat, vstart = [0], [], []
    for lat, lon in places:
        sched = reference_schedule(clock.constellation, epoch, lat, lon, int(frames[-1]),
                                   policy=clock.policy, sticky=clock.sticky,
                                   min_elevation_deg=clock.min_elevation_deg, step_ns=step,
                                   interval_ns=clock.reallocation_interval_ns,
                                   phase_ns=clock.reallocation_phase_ns)
        t = np.array([s[0] for s in sched], np.int64)
        sats = np.array([s[1] for s in sched], np.int64)
        first = max(int(np.searchsorted(t, now, side="right")) - 1, 0)
        for ti, si in zip(t[first:], sats[first:], strict=True):
            vsat.append(int(si))
            vstart.append(max(int(ti), now))
        vo.append(len(vsat))
    k = len(places)
    lat = np.array([p[0] for p in places], float)
    lon = np.array([p[1] for p in places], float)
    sample = SessionSample({
        "sess_index": np.arange(k, dtype=np.int32),
        "sess_latlon_cdeg": np.round(np.stack([lat, (lon + 180) % 360 - 180], axis=1) * 100)
        .astype(np.int16).reshape(k, 2),
        "sess_t_s": np.tile(np.array([now, frames[-1]], np.float64) / 1e9, (k, 1)),
        "sess_visit_offsets": np.array(vo, np.int32),
        "visit_sat": np.array(vsat, np.int32),
        "visit_start_s": np.array(vstart, np.float64) / 1e9,
        "hold_offsets": np.zeros((1, k + 1), np.int32),
        "hold_frame": np.zeros(0, np.int32),
        "hold_sat": np.zeros(0, np.int32),
        "hold_pages": np.zeros(0, np.int32),
        "sess_window_moves": np.zeros((1, k, n_w), np.int32),
        "sess_counters": np.zeros((1, k, len(SESSION_COUNTERS)), np.float64),
    })
    meta = {"source": "live", "scenario": "live", "scenario_file": "", "seed": 0,
            "version": _version(), "epoch": epoch.isoformat(),
            "constellation": clock.constellation, "strategies": ["live"], "page_bytes": 4096,
            "pages_per_session": 0, "sessions": k, "sampled_sessions": k, "totals": {},
            "clock": {"now_ns": now, "speed": float(clock.speed), "wall_unix_s": wall,
                      "policy": clock.policy, "sticky": bool(clock.sticky)}}
    return view_from_parts(
        meta=meta, constellation=c, frame_ns=frames, links=links, window_edges_ns=edges,
        link_load_pages=np.zeros((1, n_w, links.shape[0]), np.uint32),
        held_pages=np.zeros((1, n_w, c.n_satellites), np.int32), client_lat_deg=lat,
        client_lon_deg=lon, client_t_ns=np.tile(np.array([now, frames[-1]], np.int64), (k, 1)),
        sample=sample, population=PopulationGrid.default(),
        min_elevation_deg=clock.min_elevation_deg)


def _version() -> str:
    from satpage.version import code_version

    return code_version()
