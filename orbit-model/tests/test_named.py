"""Named constellations: the five-shell Starlink Gen1 filing.

Authorities: the filing's figures (FCC SAT-MOD-20190830-00087, SAT-MOD-20200417-00037
as granted by FCC 21-48; restated here from the filing, not from orbit_model.named),
Skyfield's EarthSatellite (altitude, inclination, positions) and networkx (+Grid per
shell, no links between shells, shortest paths)."""

import networkx as nx
import numpy as np
import pytest
from skyfield.api import EarthSatellite
from skyfield.framelib import itrs

from orbit_model import Constellation, IslNetwork, itrs_positions_km
from orbit_model.timebase import skyfield_times, timescale

EPOCH = "2022-09-14T00:00:00Z"
S = 1_000_000_000
MM_KM = 1e-6
EARTH_RADIUS_KM = 6378.137
# (planes, satellites per plane, altitude km, inclination deg), in the filing's order
FILING = [(72, 22, 550.0, 53.0), (72, 22, 540.0, 53.2), (36, 20, 570.0, 70.0),
          (6, 58, 560.0, 97.6), (4, 43, 560.0, 97.6)]
# SGP4's J2 terms move a circular orbit's radius by about 10 km around the revolution; its
# mean over two hours stays within 3 km of Re + altitude (half the 10 km between shells 0 and 1)
RADIUS_TOLERANCE_KM = 4.0
# the largest geocentric latitude reached, sampled every 10 s (0.6 deg of arc), is
# within 0.02 deg of the inclination
INCLINATION_TOLERANCE_DEG = 0.05


@pytest.fixture(scope="module")
def starlink():
    return Constellation.from_spec("starlink-gen1", epoch=EPOCH)


def test_the_five_shells_are_the_filings_4408_satellites_in_order(starlink):
    assert starlink.n_satellites == 4408 and starlink.spec == "starlink-gen1"
    first = 0
    for shell_id, (shell, (planes, per_plane, alt, inc)) in enumerate(
            zip(starlink.shells, FILING, strict=True)):
        assert (shell.n_planes, shell.sats_per_plane) == (planes, per_plane)
        assert (shell.altitude_km, shell.inclination_deg) == (alt, inc)
        assert shell.first_index == first and shell.n_satellites == planes * per_plane
        members = np.flatnonzero(starlink.shell == shell_id)
        np.testing.assert_array_equal(members, np.arange(first, first + planes * per_plane))
        first += planes * per_plane


@pytest.mark.slow  # the unit tier (make test-unit) leaves it to make test
@pytest.mark.parametrize("shell_id", range(5))
def test_skyfield_sees_each_shell_at_its_filed_altitude_and_inclination(starlink, shell_id):
    planes, per_plane, alt, inc = FILING[shell_id]
    shell = starlink.shells[shell_id]
    t_ns = np.arange(0, 2 * 3600 * S, 10 * S)  # more than one revolution
    times = skyfield_times(starlink.epoch, t_ns)
    ts = timescale()
    picks = shell.first_index + np.array([0, per_plane + 3, shell.n_satellites - 1])
    ours = itrs_positions_km(starlink, t_ns, knot_ns=None)
    for i in picks:
        pos = EarthSatellite.from_satrec(starlink.satrecs[i], ts).at(times).frame_xyz(itrs).km
        np.testing.assert_allclose(ours[i], pos.T, atol=MM_KM)
        radius = np.linalg.norm(pos, axis=0)
        assert abs(radius.mean() - EARTH_RADIUS_KM - alt) < RADIUS_TOLERANCE_KM
        max_lat = np.degrees(np.arcsin(np.abs(pos[2]) / radius)).max()
        assert max_lat == pytest.approx(min(inc, 180.0 - inc), abs=INCLINATION_TOLERANCE_DEG)


def plus_grid(planes, per_plane, phasing, first):
    """+Grid of one Walker delta shell (docs/orbit-model.md), as a networkx graph."""
    g = nx.Graph()
    for p in range(planes):
        for k in range(per_plane):
            a = first + p * per_plane + k
            g.add_edge(a, first + p * per_plane + (k + 1) % per_plane)
            q, kk = (p + 1, k) if p + 1 < planes else (0, (k + phasing) % per_plane)
            g.add_edge(a, first + q * per_plane + kk)
    return g


def test_each_shell_is_its_own_plus_grid_and_no_link_joins_two_shells(starlink):
    network = IslNetwork(starlink)
    got = nx.Graph(network.links.endpoints.tolist())
    want = nx.union_all([plus_grid(sh.n_planes, sh.sats_per_plane, 1, sh.first_index)
                         for sh in starlink.shells])
    assert set(map(frozenset, got.edges)) == set(map(frozenset, want.edges))
    components = sorted(sorted(c) for c in nx.connected_components(got))
    assert [(c[0], len(c)) for c in components] == [
        (sh.first_index, sh.n_satellites) for sh in starlink.shells]
    assert all(d == 4 for _, d in got.degree)


@pytest.mark.slow  # the unit tier (make test-unit) leaves it to make test
def test_routes_stay_inside_a_shell_and_are_networkx_shortest_paths(starlink):
    network = IslNetwork(starlink)
    graph = nx.Graph(network.links.endpoints.tolist())
    rng = np.random.default_rng(19)
    src, dst = rng.integers(0, 4408, 200), rng.integers(0, 4408, 200)
    routes = network.route(src, dst, 0)
    for s, d, h in zip(src.tolist(), dst.tolist(), routes.hops.tolist(), strict=True):
        same_shell = starlink.shell[s] == starlink.shell[d]
        assert h == (nx.shortest_path_length(graph, s, d) if same_shell else -1)


def test_an_unknown_name_is_an_error_listing_the_known_ones():
    with pytest.raises(ValueError, match=r"'starlink-gen9'.*starlink-gen1"):
        Constellation.from_spec("starlink-gen9", epoch=EPOCH)
