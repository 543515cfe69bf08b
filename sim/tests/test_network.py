import datetime as dt

import networkx as nx
import numpy as np
import pytest

from satpage.geometry import C_KM_S, SatelliteSet
from satpage.network import Router, route_walk, topology_from_links

EPOCH = dt.datetime(2023, 6, 1, tzinfo=dt.UTC)
STEP_NS = 10 * 10**9


def _walk(router, sats, src, dst, t_ns):
    pos = sats.positions_km(np.unique(t_ns))
    step_idx = np.searchsorted(np.unique(t_ns), t_ns)
    pred, remap = router.predecessors(router.snapshot_index(t_ns))
    hops = np.zeros(src.size, np.int64)
    dist = np.zeros(src.size)
    load = np.zeros((1, router.topology.n_link_ids), np.int64)
    route_walk(src.astype(np.int64), dst.astype(np.int64), step_idx, remap.astype(np.int64),
               pred, pos, router.topology.neighbours, np.ones(src.size, np.int64),
               np.zeros(src.size, np.int64), load, hops, dist)
    return hops, dist, load, pos, step_idx


@pytest.mark.parametrize("spec", ["walker-star:150/10/1:500:87", "walker:60/6/2:550:53"])
def test_walk_hops_match_networkx_shortest_paths_on_the_grid_links(spec):
    sats = SatelliteSet(spec, EPOCH)
    topo = topology_from_links(sats.n_sats, sats.links, sats.link_cross_plane)
    router = Router(sats, topo, 90.0, 60 * 10**9)
    g = nx.Graph()
    g.add_edges_from(map(tuple, sats.links))
    rng = np.random.default_rng(1)
    src = rng.integers(0, sats.n_sats, 300)
    dst = rng.integers(0, sats.n_sats, 300)
    t = rng.integers(0, 3600, 300) * STEP_NS
    hops, dist, load, pos, step_idx = _walk(router, sats, src, dst, t)
    want = np.array([nx.shortest_path_length(g, int(a), int(b)) for a, b in zip(src, dst, strict=True)])
    np.testing.assert_array_equal(hops, want)
    # every hop crosses one link: the loads add up to the hops
    assert load.sum() == hops.sum()
    # path length is at least the straight line between the ends (triangle inequality)
    chord = np.linalg.norm(pos[src, step_idx] - pos[dst, step_idx], axis=1)
    assert np.all(dist >= chord - 1e-6)


def test_walk_hops_match_orbit_models_isl_network_with_a_latitude_cutoff():
    isl = pytest.importorskip("orbit_model.isl")
    spec = "walker-star:150/10/1:500:87"
    sats = SatelliteSet(spec, EPOCH)
    topo = topology_from_links(sats.n_sats, sats.links, sats.link_cross_plane)
    router = Router(sats, topo, 70.0, STEP_NS)
    net = isl.IslNetwork(sats._constellation, latitude_cutoff_deg=70.0, resolution_ns=STEP_NS)
    rng = np.random.default_rng(2)
    src = rng.integers(0, 150, 200)
    dst = rng.integers(0, 150, 200)
    t = rng.integers(0, 360, 200) * STEP_NS
    hops, dist, *_ = _walk(router, sats, src, dst, t)
    routes = net.route(src, dst, t)
    np.testing.assert_array_equal(hops, routes.hops)
    # theirs is the fastest of the fewest-hop paths, ours one of them
    assert np.all(dist / C_KM_S * 1e3 >= routes.delay_ms - 1e-6)


def test_one_in_plane_hop_is_the_chord_between_neighbouring_slots():
    sats = SatelliteSet("walker-star:150/10/1:500:87", EPOCH)
    topo = topology_from_links(sats.n_sats, sats.links, sats.link_cross_plane)
    router = Router(sats, topo, 90.0, 60 * 10**9)
    hops, dist, *_ = _walk(router, sats, np.array([0]), np.array([1]), np.array([0]))
    # circular orbit of radius a: chord between slots 24 deg apart = 2 a sin(12 deg)
    a_km = 6378.137 + 500.0
    assert hops[0] == 1
    assert dist[0] == pytest.approx(2 * a_km * np.sin(np.radians(12)), rel=5e-3)


def test_the_neighbour_table_holds_every_link_once_per_end():
    sats = SatelliteSet("walker:60/6/2:550:53", EPOCH)
    topo = topology_from_links(sats.n_sats, sats.links, sats.link_cross_plane)
    assert int(topo.link_exists().sum()) == sats.links.shape[0]
    assert int((topo.neighbours >= 0).sum()) == 2 * sats.links.shape[0]


def test_the_isl_schedule_lists_exactly_the_satellites_above_the_cutoff():
    from satpage.network import isl_schedule

    spec = "walker-star:150/10/1:500:87"
    sats = SatelliteSet(spec, EPOCH)
    topo = topology_from_links(sats.n_sats, sats.links, sats.link_cross_plane)
    step = 60 * 10**9
    router = Router(sats, topo, 60.0, step)
    doc = isl_schedule(router, spec, duration_ns=3 * 3600 * 10**9, chunk_snapshots=7)
    assert doc["format"] == "satpage-isl-schedule/1" and doc["constellation"] == spec
    assert doc["snapshots"] == 3 * 60 + 1 and doc["step_ns"] == step
    got = np.zeros((150, doc["snapshots"]), bool)
    for sat, k0, k1 in doc["high"]:
        assert 0 <= k0 < k1 <= doc["snapshots"]
        got[sat, k0:k1] = True
    # independently: each snapshot's positions on their own, latitude by atan2
    want = np.zeros_like(got)
    for k in range(doc["snapshots"]):
        p = sats.positions_km(np.array([k * step]))[:, 0]
        want[:, k] = np.degrees(np.abs(np.arctan2(p[:, 2], np.hypot(p[:, 0], p[:, 1])))) > 60.0
    np.testing.assert_array_equal(got, want)
    assert 0.1 < got.mean() < 0.5  # the cut-off really takes satellites out
    with pytest.raises(ValueError, match="time-invariant"):
        isl_schedule(Router(sats, topo, 90.0, step), spec, duration_ns=step)
