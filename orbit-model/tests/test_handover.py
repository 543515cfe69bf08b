"""Handover schedules against an independent brute-force replay of the policies over the
full elevation matrix (every satellite from every point at every step)."""

import numpy as np
import pytest

from orbit_model import (
    Constellation,
    GroundPoints,
    elevations_deg,
    handover_schedule,
    session_schedule,
    step_times_ns,
)
from orbit_model.propagate import itrs_positions_km

EPOCH = "2022-09-14T00:00:00Z"
S = 1_000_000_000
MIN_EL = 10.0


@pytest.fixture(scope="module")
def case():
    c = Constellation.from_spec("walker-star:150/10/1:500:87", epoch=EPOCH)
    rng = np.random.default_rng(7)
    lat = np.concatenate([rng.uniform(-85, 85, 10), [89.9, -89.0, 0.0]])
    lon = np.concatenate([rng.uniform(-180, 180, 10), [0.0, 179.9, -179.99]])
    points = GroundPoints.from_degrees(lat, lon)
    t_ns = step_times_ns(2 * 3600 * S, 10 * S)
    el = elevations_deg(c, points, t_ns, knot_ns=60 * S)
    rng_km = np.linalg.norm(itrs_positions_km(c, t_ns)[None] - points.itrs_km[:, None, None, :], axis=-1)
    return c, points, t_ns, el, rng_km


def reference(el, rng_km, policy, sticky):
    """Scalar replay: at each step keep the serving satellite (sticky) while it is visible,
    else pick by the policy; ties to the lowest index."""
    vis = el >= MIN_EL
    n_sats, n_t = vis.shape
    remaining = np.zeros_like(el, dtype=int)  # steps until set
    for j in range(n_t - 1, -1, -1):
        remaining[:, j] = np.where(vis[:, j], 1 + (remaining[:, j + 1] if j + 1 < n_t else 0), 0)
    out, cur = [], -1
    for j in range(n_t):
        visible = np.flatnonzero(vis[:, j])
        if sticky and cur >= 0 and vis[cur, j]:
            choice = cur
        elif visible.size == 0:
            choice = -1
        else:
            value = {"highest": el[visible, j], "nearest": -rng_km[visible, j],
                     "longest": remaining[visible, j]}[policy]
            choice = int(visible[np.flatnonzero(value == value.max())[0]])
        if choice != cur or j == 0:
            out.append((j, choice))
            cur = choice
    return out


@pytest.mark.parametrize("sticky", [True, False])
@pytest.mark.parametrize("policy", ["highest", "nearest", "longest"])
def test_schedules_equal_the_brute_force_replay(case, policy, sticky):
    c, points, t_ns, el, rng_km = case
    schedule = handover_schedule(c, points, t_ns, min_elevation_deg=MIN_EL, policy=policy,
                                 sticky=sticky, chunk_steps=97)
    for g in range(len(points)):
        times, sats = schedule.for_client(g)
        expected = reference(el[g], rng_km[g], policy, sticky)
        assert list(zip((times // (10 * S)).tolist(), sats.tolist(), strict=True)) == expected


def test_step_passes_equal_the_runs_of_the_elevation_matrix(case):
    c, points, t_ns, el, _ = case
    _, passes = handover_schedule(c, points, t_ns, min_elevation_deg=MIN_EL, return_passes=True,
                                  _initial_capacity=4)  # forces the output arrays to grow
    expected = []
    for g in range(len(points)):
        above = np.pad(el[g] >= MIN_EL, ((0, 0), (1, 1)))
        for s in range(c.n_satellites):
            edges = np.diff(above[s].astype(int))
            for r, e in zip(np.flatnonzero(edges == 1), np.flatnonzero(edges == -1), strict=True):
                expected.append((g, s, r, e, el[g, s, r:e].max()))
    expected.sort()
    got = sorted(zip(passes["client"].tolist(), passes["satellite"].tolist(),
                     passes["rise_step"].tolist(), passes["set_step"].tolist(),
                     passes["max_elevation_deg"].tolist(), strict=True))
    assert [x[:4] for x in got] == [x[:4] for x in expected]
    np.testing.assert_allclose([x[4] for x in got], [x[4] for x in expected], atol=1e-4)


def test_chunking_does_not_change_the_schedule(case):
    c, points, t_ns, _, _ = case
    a = handover_schedule(c, points, t_ns, min_elevation_deg=MIN_EL, chunk_steps=5)
    b = handover_schedule(c, points, t_ns, min_elevation_deg=MIN_EL, chunk_steps=10_000)
    assert (a.offsets == b.offsets).all() and (a.time_ns == b.time_ns).all()
    assert (a.satellite == b.satellite).all()


def test_serving_at_and_handover_counts_follow_the_schedule(case):
    c, points, t_ns, _, _ = case
    schedule = handover_schedule(c, points, t_ns, min_elevation_deg=MIN_EL)
    for g in range(len(points)):
        times, sats = schedule.for_client(g)
        assert times[0] == 0
        probe = np.array([0, times[-1], times[-1] + 5 * S, 3 * S])
        expected = [sats[np.searchsorted(times, p, side="right") - 1] for p in probe]
        assert schedule.serving_at(np.full(4, g), probe).tolist() == expected
        served = sats[sats >= 0]
        assert schedule.n_handovers[g] == int(np.count_nonzero(served[1:] != served[:-1]))


def test_bad_policies_and_times_name_the_value(case):
    c, points, t_ns, _, _ = case
    with pytest.raises(ValueError, match="policy 'closest'"):
        handover_schedule(c, points, t_ns, policy="closest")
    with pytest.raises(ValueError, match="start at 0"):
        handover_schedule(c, points, t_ns + 1)


def test_clients_split_into_batches_give_the_same_schedule_and_passes(case):
    c, points, t_ns, _, _ = case
    whole, passes = handover_schedule(c, points, t_ns, min_elevation_deg=MIN_EL, policy="longest",
                                      return_passes=True)
    split, split_passes = handover_schedule(c, points, t_ns, min_elevation_deg=MIN_EL, policy="longest",
                                            return_passes=True, max_state_pairs=4 * c.n_satellites)
    assert (whole.offsets == split.offsets).all() and (whole.time_ns == split.time_ns).all()
    assert (whole.satellite == split.satellite).all()
    assert (passes == split_passes).all()


def windows(n, n_steps, seed=3):
    """Session windows of steps: random starts and lengths, one the whole span."""
    rng = np.random.default_rng(seed)
    first = rng.integers(0, n_steps - 1, n)
    last = np.minimum(first + rng.integers(0, n_steps // 2, n), n_steps - 1)
    first[0], last[0] = 0, n_steps - 1
    return first, last


@pytest.mark.parametrize("sticky", [True, False])
@pytest.mark.parametrize("policy", ["highest", "nearest", "longest"])
def test_session_windows_equal_the_brute_force_replay_of_each_window(case, policy, sticky):
    c, points, t_ns, el, rng_km = case
    first, last = windows(len(points), t_ns.size)
    schedule = session_schedule(c, points, t_ns, first, last, min_elevation_deg=MIN_EL,
                                policy=policy, sticky=sticky, chunk_steps=97)
    for g in range(len(points)):
        times, sats = schedule.for_client(g)
        part = slice(first[g], last[g] + 1)
        expected = [(j + first[g], s) for j, s in reference(el[g][:, part], rng_km[g][:, part],
                                                            policy, sticky)]
        assert list(zip((times // (10 * S)).tolist(), sats.tolist(), strict=True)) == expected


@pytest.mark.parametrize("policy", ["highest", "nearest"])
def test_memoryless_session_schedules_are_the_whole_span_schedule_cut_to_the_window(case, policy):
    """The same sweep on the same step grid: equal, not close."""
    c, points, t_ns, _, _ = case
    first, last = windows(len(points), t_ns.size, seed=4)
    whole = handover_schedule(c, points, t_ns, min_elevation_deg=MIN_EL, policy=policy,
                              sticky=False)
    part = session_schedule(c, points, t_ns, first, last, min_elevation_deg=MIN_EL,
                            policy=policy, sticky=False)
    for g in range(len(points)):
        steps = np.arange(first[g], last[g] + 1)
        want = whole.serving_at(np.full(steps.size, g), t_ns[steps])
        got = part.serving_at(np.full(steps.size, g), t_ns[steps])
        np.testing.assert_array_equal(got, want)
        assert part.for_client(g)[0][0] == t_ns[first[g]]


def test_session_windows_in_batches_give_the_same_schedule(case):
    c, points, t_ns, _, _ = case
    first, last = windows(len(points), t_ns.size, seed=5)
    a = session_schedule(c, points, t_ns, first, last, min_elevation_deg=MIN_EL, policy="longest")
    b = session_schedule(c, points, t_ns, first, last, min_elevation_deg=MIN_EL, policy="longest",
                         max_state_pairs=3 * c.n_satellites)
    assert (a.offsets == b.offsets).all() and (a.time_ns == b.time_ns).all()
    assert (a.satellite == b.satellite).all()


def test_a_window_outside_the_steps_is_named(case):
    c, points, t_ns, _, _ = case
    n = len(points)
    with pytest.raises(ValueError, match="client 0: window of steps 5..4"):
        session_schedule(c, points, t_ns, np.full(n, 5), np.full(n, 4))
    with pytest.raises(ValueError, match=f"not inside 0..{t_ns.size - 1}"):
        session_schedule(c, points, t_ns, np.zeros(n, int), np.full(n, t_ns.size))


def test_a_mask_below_the_horizon_sees_every_satellite_of_a_large_constellation():
    """-90 deg (sim's fallback for a window that sees no satellite above the mask) makes
    every satellite visible: more than the 2,048 the visible list held at most, which
    failed the Starlink TLE catalogue (3,023 satellites). The highest is chosen, as the
    brute-force elevations say."""
    c = Constellation.from_spec("walker-star:2400/40/1:550:53", epoch=EPOCH)
    points = GroundPoints.from_degrees(np.array([65.0]), np.array([-150.0]))
    t_ns = step_times_ns(60 * S, 10 * S)
    schedule = handover_schedule(c, points, t_ns, min_elevation_deg=-90.0, policy="highest",
                                 sticky=False)
    el = elevations_deg(c, points, t_ns)[0]
    times, sats = schedule.for_client(0)
    served = sats[np.searchsorted(times, t_ns, side="right") - 1]
    assert served.tolist() == np.argmax(el, axis=0).tolist()
