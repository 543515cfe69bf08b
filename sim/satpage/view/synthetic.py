"""A Starlink-sized view without a Starlink-sized run: the speed test's data set.

Real geometry, synthetic traffic. The constellation is Starlink's first-generation
filing as five Walker shells (4,408 satellites; FCC SAT-MOD-20200417-00037:
72 x 22 at 550 km / 53 deg, 72 x 22 at 540 km / 53.2 deg, 36 x 20 at 570 km /
70 deg, 6 x 58 and 4 x 43 at 560 km / 97.6 deg), propagated by orbit_model, with
its +Grid links. Clients are population-weighted (orbit_model.place_clients on the
embedded GPW grid). The sampled sessions are served by the satellite nearest
overhead at each frame and replayed by pager (Zipf accesses), as in a run. ISL
loads and pages held are Poisson draws whose means follow the population under
each link or satellite, since the page renders the same whatever the values are.
"""

from __future__ import annotations

import numpy as np

import pager
from pager import Trace
from satpage.view.build import (
    frame_times_ns,
    satellite_frames,
    session_sample,
    view_from_parts,
)
from satpage.view.model import ViewData

__all__ = ["STARLINK_GEN1", "synthetic_view"]

#: Starlink generation 1 (4,408 satellites) as Walker shells, orbit_model spec syntax
STARLINK_GEN1 = "+".join([
    "walker:1584/72/1:550:53", "walker:1584/72/1:540:53.2", "walker:720/36/1:570:70",
    "walker:348/6/1:560:97.6", "walker:172/4/1:560:97.6",
])


def synthetic_view(spec: str = STARLINK_GEN1, n_sessions: int = 10_000, n_sample: int = 200,
                   duration_s: float = 6 * 3600.0, step_s: float = 60.0, windows: int = 96,
                   pages: int = 1000, seed: int = 2023, epoch: str = "2023-06-01T00:00:00Z",
                   min_elevation_deg: float = 25.0) -> ViewData:
    """A validated ViewData of ``spec`` with ``n_sessions`` synthetic sessions."""
    from orbit_model import Constellation, PopulationGrid, place_clients
    from orbit_model.kernels import grid_links

    rng = np.random.default_rng(seed)
    c = Constellation.from_spec(spec, epoch=epoch)
    duration_ns = int(duration_s * 1e9)
    frames = frame_times_ns(duration_ns, int(step_s * 1e9))
    sat = satellite_frames(c, frames)
    links = np.asarray(grid_links(c).endpoints, np.int32)
    grid = PopulationGrid.default()
    clients = place_clients(grid, n_sessions, rng)
    lat = np.asarray(clients.lat_deg, float)
    lon = (np.asarray(clients.lon_deg, float) + 180.0) % 360.0 - 180.0
    life = np.maximum(rng.exponential(1200.0, n_sessions), step_s) * 1e9
    start = np.floor(rng.random(n_sessions) * np.maximum(duration_ns - life, 0))
    t_ns = np.stack([start, np.minimum(start + life, duration_ns)], axis=1).astype(np.int64)
    edges = (np.arange(windows + 1, dtype=np.int64) * duration_ns) // windows

    # traffic follows people: mean load from the population density under each end
    pop = np.asarray(grid.counts() if callable(getattr(grid, "counts", None)) else grid.counts)
    pop = np.nan_to_num(pop)
    w_frame = np.clip(np.searchsorted(frames, edges[:-1]), 0, frames.size - 1)

    def density(lat_c: np.ndarray, lon_c: np.ndarray) -> np.ndarray:
        r = np.clip(((grid.north_deg - lat_c / 100) / grid.cell_size_deg).astype(int), 0,
                    pop.shape[0] - 1)
        q = np.clip(((lon_c / 100 - grid.west_deg) / grid.cell_size_deg).astype(int), 0,
                    pop.shape[1] - 1)
        return pop[r, q]

    d_sat = density(sat[w_frame, :, 0], sat[w_frame, :, 1])              # (W, N)
    d_link = d_sat[:, links[:, 0]] + d_sat[:, links[:, 1]]
    strategies = [("proactive", pager.Proactive()), ("on-demand", pager.OnDemand())]
    scale = np.array([3.0, 1.0])
    load = rng.poisson(scale[:, None, None] * 40.0 * d_link[None] / max(d_link.max(), 1.0))
    held = rng.poisson(scale[:, None, None] * 300.0 * d_sat[None] / max(d_sat.max(), 1.0))

    # sampled sessions: the satellite nearest overhead at each frame, Zipf accesses
    pick = np.sort(rng.choice(n_sessions, min(n_sample, n_sessions), replace=False))
    trace = _nearest_trace(sat, frames, lat[pick], lon[pick], t_ns[pick], pages, rng)
    sample = session_sample(trace, pick, t_ns[pick, 1], lat[pick], lon[pick], strategies, frames,
                            edges)
    meta = {"source": "synthetic", "scenario": "synthetic-starlink", "scenario_file": "",
            "seed": seed, "version": "synthetic", "epoch": epoch, "constellation": spec,
            "strategies": [s for s, _ in strategies], "page_bytes": 4096,
            "pages_per_session": pages, "sessions": n_sessions, "sampled_sessions": int(pick.size),
            "totals": {}}
    return view_from_parts(meta=meta, constellation=c, frame_ns=frames, links=links,
                           window_edges_ns=edges, link_load_pages=load, held_pages=held,
                           client_lat_deg=lat, client_lon_deg=lon, client_t_ns=t_ns,
                           sample=sample, population=grid, min_elevation_deg=min_elevation_deg,
                           sat_frames=sat)


def _nearest_trace(sat: np.ndarray, frames: np.ndarray, lat: np.ndarray, lon: np.ndarray,
                   t_ns: np.ndarray, pages: int, rng: np.random.Generator) -> Trace:
    """Visits: runs of the satellite with the nearest sub-satellite point at each frame."""
    la = np.radians(sat[..., 0] / 100.0)
    lo = np.radians(sat[..., 1] / 100.0)
    vo, vsat, vstart, ao, apage, atime = [0], [], [], [0], [], []
    probs = pager.zipf_probabilities(pages, 1.0)
    for i in range(lat.size):
        f0 = int(np.searchsorted(frames, t_ns[i, 0], side="right")) - 1
        f1 = max(int(np.searchsorted(frames, t_ns[i, 1], side="left")), f0)
        f1 = min(f1, frames.size - 1)
        p, q = np.radians(lat[i]), np.radians(lon[i])
        cosd = (np.sin(p) * np.sin(la[f0:f1 + 1]) + np.cos(p) * np.cos(la[f0:f1 + 1])
                * np.cos(lo[f0:f1 + 1] - q))
        near = np.argmax(cosd, axis=1)
        change = np.flatnonzero(np.r_[True, near[1:] != near[:-1]])
        starts = np.maximum(frames[f0 + change], t_ns[i, 0])
        ends = np.r_[starts[1:], t_ns[i, 1]]
        for s_ns, e_ns, who in zip(starts, ends, near[change], strict=True):
            vsat.append(int(who))
            vstart.append(int(s_ns))
            k = int(rng.poisson(5.0 * max(e_ns - s_ns, 0) / 1e9))
            apage.append(rng.choice(pages, k, p=probs).astype(np.int32))
            atime.append(np.sort(rng.integers(s_ns, max(e_ns, s_ns + 1), k)))
            ao.append(ao[-1] + k)
        vo.append(len(vsat))
    return Trace(n_pages=pages, visit_offsets=np.array(vo, np.int64),
                 visit_satellite=np.array(vsat, np.int32),
                 visit_start_ns=np.array(vstart, np.int64), access_offsets=np.array(ao, np.int64),
                 access_page=np.concatenate(apage) if apage else np.zeros(0, np.int32),
                 access_time_ns=np.concatenate(atime).astype(np.int64) if atime
                 else np.zeros(0, np.int64))
