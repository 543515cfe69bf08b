"""+Grid ISLs: links from the rules written out independently here, hops and delays against
networkx shortest paths, the latitude cut-off against scalar SGP4 latitudes."""

import json
import math
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
from sgp4.api import jday

from orbit_model import Constellation, IslNetwork, RoutingSnapshots
from orbit_model.io import isl_test_vectors
from orbit_model.propagate import itrs_positions_km

EPOCH = "2022-09-14T00:00:00Z"
S = 1_000_000_000
C_KM_S = 299_792.458
VECTORS = Path(__file__).parent / "data" / "isl_vectors.json"


def rule_edges(planes, per_plane, phasing, star):
    """The +Grid rules of docs/orbit-model.md, written out pair by pair."""
    edges = set()
    for p in range(planes):
        for k in range(per_plane):
            a = p * per_plane + k
            if per_plane >= 2:
                edges.add(frozenset((a, p * per_plane + (k + 1) % per_plane)))
            if p + 1 < planes:
                edges.add(frozenset((a, (p + 1) * per_plane + k)))
            elif not star and planes >= 3:
                edges.add(frozenset((a, (k + phasing) % per_plane)))
    return {tuple(sorted(e)) for e in edges if len(e) == 2}


def scalar_positions(constellation, t_ns):
    jd, fr = jday(2022, 9, 14, 0, 0, 0)
    out = []
    for satrec in constellation.satrecs:
        err, r, _ = satrec.sgp4(jd, fr + t_ns / (86_400 * S))
        assert err == 0
        out.append(r)
    return np.array(out)


@pytest.mark.parametrize(("spec", "star"), [("walker-star:150/10/1:500:87", True),
                                            ("walker:60/6/2:550:53", False),
                                            ("walker:12/2/1:800:60", False),
                                            ("walker:5/5/3:1000:45", False)])
def test_links_follow_the_grid_rules(spec, star):
    c = Constellation.from_spec(spec, epoch=EPOCH)
    shell = c.shells[0]
    network = IslNetwork(c)
    got = {tuple(e) for e in network.links.endpoints.tolist()}
    assert got == rule_edges(shell.n_planes, shell.sats_per_plane, shell.phasing, star)


def test_every_cross_link_of_a_delta_shell_has_the_same_phase_offset_across_the_wrap_too():
    """Why (P-1, k) links to (0, (k+F) mod S): with plane 0 seen as plane P, every cross
    link joins satellites whose mean anomalies differ by 360 F / T (docs/conventions.md elements)."""
    c = Constellation.from_spec("walker:60/6/2:550:53", epoch=EPOCH)
    network = IslNetwork(c)
    mean_anomaly = np.degrees([s.mo for s in c.satrecs])
    offsets = set()
    for a, b in network.links.endpoints[network.links.cross_plane].tolist():
        lo, hi = (a, b) if (c.plane[b] - c.plane[a]) % 6 == 1 else (b, a)
        offsets.add(round((mean_anomaly[hi] - mean_anomaly[lo]) % 360.0, 9))
    assert offsets == {round(360.0 * 2 / 60, 9)}


@pytest.mark.parametrize("spec", ["walker-star:150/10/1:500:87", "walker:60/6/2:550:53"])
def test_hops_and_delays_equal_networkx_shortest_paths(spec):
    c = Constellation.from_spec(spec, epoch=EPOCH)
    network = IslNetwork(c, per_hop_processing_ms=0.25)
    t_ns = 1230 * S  # a multiple of the 10 s resolution: no rounding
    r = scalar_positions(c, t_ns)
    graph = nx.Graph()
    for a, b in network.links.endpoints.tolist():
        graph.add_edge(a, b, ms=np.linalg.norm(r[a] - r[b]) / C_KM_S * 1e3)
    hops_nx = dict(nx.all_pairs_shortest_path_length(graph))
    matrix = network.hop_matrix(t_ns)
    n = c.n_satellites
    assert all(matrix[i, j] == hops_nx[i][j] for i in range(n) for j in range(n))
    rng = np.random.default_rng(5)
    src, dst = rng.integers(0, n, 60), rng.integers(0, n, 60)
    routes = network.route(src, dst, t_ns)
    for s, d, h, ms in zip(src, dst, routes.hops, routes.delay_ms, strict=True):
        assert h == hops_nx[s][d]
        best = min(sum(graph.edges[u, v]["ms"] for u, v in zip(path, path[1:], strict=False))
                   for path in nx.all_shortest_paths(graph, s, d))
        assert ms == pytest.approx(best + 0.25 * h, abs=1e-9)  # 1 ps


def test_the_path_is_a_fewest_hop_path_with_the_route_delay():
    c = Constellation.from_spec("walker-star:150/10/1:500:87", epoch=EPOCH)
    network = IslNetwork(c, latitude_cutoff_deg=70.0, per_hop_processing_ms=0.5)
    t_ns = 300 * S
    r = scalar_positions(c, t_ns)
    links = {tuple(e) for e in network.links.endpoints[network.active_links(t_ns)].tolist()}
    for s, d in [(0, 77), (3, 140), (10, 10), (14, 135)]:
        path = network.path(s, d, t_ns).tolist()
        route = network.route(s, d, t_ns)
        assert path[0] == s and path[-1] == d and len(path) - 1 == route.hops
        assert all(tuple(sorted(pair)) in links for pair in zip(path, path[1:], strict=False))
        light_ms = sum(np.linalg.norm(r[a] - r[b]) / C_KM_S * 1e3 for a, b in zip(path, path[1:], strict=False))
        assert light_ms + 0.5 * route.hops == pytest.approx(float(route.delay_ms), abs=1e-9)


def test_the_latitude_cut_off_drops_exactly_the_cross_links_of_high_satellites():
    c = Constellation.from_spec("walker-star:150/10/1:500:87", epoch=EPOCH)
    network = IslNetwork(c, latitude_cutoff_deg=70.0)
    t_ns = 600 * S
    r = scalar_positions(c, t_ns)
    high = np.degrees(np.abs(np.arcsin(r[:, 2] / np.linalg.norm(r, axis=1)))) > 70.0
    a, b = network.links.endpoints.T
    expected = ~(network.links.cross_plane & (high[a] | high[b]))
    active = network.active_links(t_ns)
    assert (active == expected).all() and (~active).sum() > 0
    graph = nx.Graph()
    graph.add_nodes_from(range(c.n_satellites))
    graph.add_edges_from(network.links.endpoints[active].tolist())
    lengths = dict(nx.all_pairs_shortest_path_length(graph))
    rng = np.random.default_rng(9)
    src, dst = rng.integers(0, 150, 300), rng.integers(0, 150, 300)
    hops = network.hops(src, dst, t_ns)
    assert [lengths[s].get(d, -1) for s, d in zip(src, dst, strict=True)] == hops.tolist()


def test_batched_routes_follow_the_topology_over_time():
    """Many (src, dst, t) at once equal one hop matrix per (rounded) time."""
    c = Constellation.from_spec("walker-star:150/10/1:500:87", epoch=EPOCH)
    network = IslNetwork(c, latitude_cutoff_deg=60.0, resolution_ns=10 * S, bins_per_chunk=3)
    rng = np.random.default_rng(11)
    times = rng.integers(0, 6000, 8) * 10 * S
    src, dst = rng.integers(0, 150, 400), rng.integers(0, 150, 400)
    t = times[rng.integers(0, 8, 400)] + rng.integers(-4, 5, 400) * S  # rounds to the bin
    routes = network.route(src, dst, t)
    expected = np.empty(400, np.int32)
    for tb in times:
        sel = np.abs(t - tb) < 5 * S
        expected[sel] = network.hop_matrix(int(tb))[src[sel], dst[sel]]
    assert (routes.hops == expected).all()
    assert len({tuple(network.active_links(int(tb))) for tb in times}) > 1  # it does change


def test_the_static_fast_path_equals_the_full_search():
    c = Constellation.from_spec("walker:60/6/2:550:53", epoch=EPOCH)
    rng = np.random.default_rng(2)
    src, dst, t = rng.integers(0, 60, 500), rng.integers(0, 60, 500), rng.integers(0, 10**14, 500)
    fast = IslNetwork(c).route(src, dst, t)
    full = IslNetwork(c, latitude_cutoff_deg=90.0).route(src, dst, t)  # cut-off never applies
    assert (fast.hops == full.hops).all()
    np.testing.assert_allclose(fast.delay_ms, full.delay_ms, rtol=0, atol=1e-12)


def test_two_satellites_of_different_shells_are_not_connected():
    c = Constellation.from_spec("walker:6/2/1:500:50+walker:6/2/1:900:70", epoch=EPOCH)
    routes = IslNetwork(c).route([0, 0], [5, 6], 0)
    assert routes.hops.tolist()[1] == -1 and math.isinf(routes.delay_ms[1])
    assert routes.hops[0] > 0


def test_bad_queries_name_the_value():
    network = IslNetwork(Constellation.from_spec("walker:6/2/1:500:50", epoch=EPOCH))
    with pytest.raises(ValueError, match="destination satellite 6 is outside 0..5"):
        network.route(0, 6, 0)
    with pytest.raises(ValueError, match="latitude cut-off 95"):
        IslNetwork(network.constellation, latitude_cutoff_deg=95)


def test_the_shared_test_vectors_are_current():
    """The Go daemon reads this file: it must be what the code produces
    (regenerate with `satpage orbit isl-vectors orbit-model/tests/data/isl_vectors.json`)."""
    assert json.loads(VECTORS.read_text()) == json.loads(json.dumps(isl_test_vectors()))


# ------------------------------------------------------------ routing snapshots
@pytest.mark.parametrize(("spec", "cutoff"), [("walker-star:150/10/1:500:87", None),
                                              ("walker-star:150/10/1:500:87", 70.0),
                                              ("walker:60/6/2:550:53", 55.0)])
def test_walked_routes_are_the_networks_fastest_fewest_hop_paths(spec, cutoff):
    """Each walked route crosses links that are up at its snapshot, as many as
    networkx's fewest hops, and its light time is the network's route delay."""
    c = Constellation.from_spec(spec, epoch=EPOCH)
    step = 60 * S
    network = IslNetwork(c, latitude_cutoff_deg=cutoff, resolution_ns=step)
    routing = RoutingSnapshots(network, step)
    rng = np.random.default_rng(4)
    n = c.n_satellites
    src, dst = rng.integers(0, n, 400), rng.integers(0, n, 400)
    t = rng.integers(0, 3 * 3600, 400) * S
    snap_t = routing.snapshot_index(t) * step if cutoff else np.zeros_like(t)
    times = np.unique(snap_t)
    pos = itrs_positions_km(c, times, knot_ns=None)
    walk = routing.walk(src, dst, t, pos, np.searchsorted(times, snap_t))
    np.testing.assert_array_equal(walk.hops, network.hops(src, dst, snap_t))
    np.testing.assert_array_equal(walk.hops, routing.hops(src, dst, t))
    routes = network.route(src, dst, snap_t)
    ends = network.links.endpoints
    for i in range(src.size):
        links = walk.links[walk.offsets[i]:walk.offsets[i + 1]]
        assert links.size == max(walk.hops[i], 0)
        active = network.active_links(int(snap_t[i]))
        assert active[links].all()
        graph = nx.Graph(ends[active].tolist())
        graph.add_nodes_from(range(n))
        want = nx.shortest_path_length(graph, int(src[i]), int(dst[i])) \
            if nx.has_path(graph, int(src[i]), int(dst[i])) else -1
        assert walk.hops[i] == want
        # the links chain from dst back to src
        cur = int(dst[i])
        for e in links:
            a, b = ends[e]
            assert cur in (a, b)
            cur = int(b if cur == a else a)
        assert cur == src[i] or walk.hops[i] < 0
    ok = walk.hops >= 0
    np.testing.assert_allclose(walk.length_km[ok] / C_KM_S * 1e3, routes.delay_ms[ok],
                               rtol=0, atol=1e-6)


def test_one_in_plane_hop_is_the_chord_between_neighbouring_slots():
    c = Constellation.from_spec("walker-star:150/10/1:500:87", epoch=EPOCH)
    routing = RoutingSnapshots(IslNetwork(c), 60 * S)
    walk = routing.walk([0], [1], [0], itrs_positions_km(c, np.array([0]), knot_ns=None), [0])
    a_km = 6378.137 + 500.0      # circular orbit: slots 24 deg apart, chord 2 a sin(12 deg)
    assert walk.hops[0] == 1
    assert walk.length_km[0] == pytest.approx(2 * a_km * np.sin(np.radians(12)), rel=5e-3)


def test_the_isl_schedule_lists_exactly_the_satellites_above_the_cutoff():
    spec = "walker-star:150/10/1:500:87"
    c = Constellation.from_spec(spec, epoch=EPOCH)
    step = 60 * S
    routing = RoutingSnapshots(IslNetwork(c, latitude_cutoff_deg=60.0), step)
    doc = routing.isl_schedule(spec, duration_ns=3 * 3600 * S, chunk_snapshots=7)
    assert doc["format"] == "satpage-isl-schedule/1" and doc["constellation"] == spec
    assert doc["snapshots"] == 3 * 60 + 1 and doc["step_ns"] == step
    got = np.zeros((150, doc["snapshots"]), bool)
    for sat, k0, k1 in doc["high"]:
        assert 0 <= k0 < k1 <= doc["snapshots"]
        got[sat, k0:k1] = True
    # independently: scalar SGP4 at each snapshot, latitude by atan2
    want = np.zeros_like(got)
    for k in range(0, doc["snapshots"], 9):
        r = scalar_positions(c, k * step)
        want[:, k] = np.degrees(np.abs(np.arctan2(r[:, 2], np.hypot(r[:, 0], r[:, 1])))) > 60.0
    np.testing.assert_array_equal(got[:, ::9], want[:, ::9])
    assert 0.1 < got.mean() < 0.5  # the cut-off really takes satellites out
    # and the schedule is what the routing tables apply: cross links of high satellites down
    k = 40
    active = routing.network.active_links(k * step)
    a, b = routing.links.endpoints.T
    np.testing.assert_array_equal(active, ~(routing.links.cross_plane & (got[a, k] | got[b, k])))
    with pytest.raises(ValueError, match="time-invariant"):
        RoutingSnapshots(IslNetwork(c), step).isl_schedule(spec, duration_ns=step)
