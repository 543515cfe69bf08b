"""Scheduled reallocation (a controller reassigns every terminal at phase + k x interval)
against a plain per-step replay written here from the rule alone: at an instant the policy
picks afresh; between instants the assignment holds unless the serving satellite drops
below the mask (or none serves), then the policy picks at once and the entry is forced.

Both real catalogues (data/tle: Starlink, 3,023 satellites; OneWeb, 426 in near-polar
planes) and a sparse Walker shell with outages, where forced picks are common."""

from pathlib import Path

import numpy as np
import pytest

from orbit_model import (
    Constellation,
    GroundPoints,
    handover_schedule,
    reallocation_steps,
    session_schedule,
    step_times_ns,
)
from orbit_model.propagate import itrs_positions_km

S = 1_000_000_000
DATA = Path(__file__).resolve().parents[2] / "data" / "tle"
EPOCH = "2022-09-14T00:00:00Z"
STEP = 3 * S
INTERVAL, PHASE = 15 * S, 12 * S
#: Oslo, Jakarta, Quito, McMurdo, Honolulu, the antimeridian, Tromso, Cape Town
PLACES = [(59.9, 10.7), (-6.2, 106.8), (-0.2, -78.5), (-77.8, 166.7), (21.3, -157.9),
          (0.0, 180.0), (69.6, 18.9), (-33.9, 18.4)]
CASES = {  # constellation, minimum elevation (deg), minutes
    "starlink": (f"tle:{DATA / 'starlink-2022-09-14.tle'}", 25.0, 30),
    "oneweb": (f"tle:{DATA / 'oneweb-2022-09-14.tle'}", 25.0, 40),
    "walker": ("walker:24/4/1:700:55", 10.0, 60),
}


def geometry(name):
    spec, min_el, minutes = CASES[name]
    c = Constellation.from_spec(spec, epoch=EPOCH)
    points = GroundPoints.from_degrees([p[0] for p in PLACES], [p[1] for p in PLACES])
    t_ns = step_times_ns(minutes * 60 * S, STEP)
    pos = itrs_positions_km(c, t_ns, knot_ns=60 * S)  # (n_sats, n_t, 3), the kernel's knots
    d = pos[None] - points.itrs_km[:, None, None, :]
    rng_km = np.linalg.norm(d, axis=-1)
    with np.errstate(invalid="ignore"):
        sin_el = np.einsum("gstk,gk->gst", d, points.up) / rng_km
    visible = sin_el >= np.sin(np.radians(min_el))  # NaN (SGP4 failed): never visible
    return c, points, t_ns, min_el, sin_el, rng_km, visible


@pytest.fixture(scope="module", params=list(CASES))
def case(request):
    return request.param, geometry(request.param)


def replay(sin_el, rng_km, visible, policy, instant, first, last):
    """Per step from ``first`` to ``last`` (inclusive): the serving satellite under
    scheduled reallocation. Returns [(step, satellite, forced)] entries."""
    remaining = np.zeros(visible.shape, int)  # steps until it sets, within the window
    for j in range(last, first - 1, -1):
        remaining[:, j] = np.where(visible[:, j], 1 + (remaining[:, j + 1] if j < last else 0), 0)
    out, cur = [], -1
    for j in range(first, last + 1):
        up = np.flatnonzero(visible[:, j])
        if j == first or instant[j] or cur < 0 or not visible[cur, j]:
            forced = not (j == first or instant[j])
            if up.size == 0:
                choice = -1
            else:
                score = {"highest": sin_el[up, j], "nearest": -rng_km[up, j],
                         "longest": remaining[up, j]}[policy]
                choice = int(up[np.flatnonzero(score == score.max())[0]])  # ties: lowest index
        else:
            choice, forced = cur, False
        if choice != cur or j == first:
            out.append((j, choice, forced))
            cur = choice
    return out


def entries(schedule, g):
    times, sats = schedule.for_client(g)
    part = slice(schedule.offsets[g], schedule.offsets[g + 1])
    return list(zip((times // STEP).tolist(), sats.tolist(), schedule.forced[part].tolist(),
                    strict=True))


@pytest.mark.parametrize("policy", ["highest", "nearest", "longest"])
def test_scheduled_reallocation_equals_the_per_step_replay(case, policy):
    name, (c, points, t_ns, min_el, sin_el, rng_km, visible) = case
    instant = reallocation_steps(t_ns, INTERVAL, PHASE)
    assert (t_ns[instant] % INTERVAL == PHASE).all() and instant.sum() == (t_ns[-1] - PHASE) // INTERVAL + 1
    for sticky in (True, False):  # no effect under scheduled reallocation
        schedule = handover_schedule(c, points, t_ns, min_elevation_deg=min_el, policy=policy,
                                     sticky=sticky, interval_ns=INTERVAL, phase_ns=PHASE,
                                     chunk_steps=97)
        for g in range(len(points)):
            want = replay(sin_el[g], rng_km[g], visible[g], policy, instant, 0, t_ns.size - 1)
            assert entries(schedule, g) == want, (name, policy, sticky, PLACES[g])


def test_changes_happen_only_at_instants_except_forced_ones(case):
    name, (c, points, t_ns, min_el, *_, visible) = case
    instant = reallocation_steps(t_ns, INTERVAL, PHASE)
    for policy in ("highest", "nearest", "longest"):
        schedule = handover_schedule(c, points, t_ns, min_elevation_deg=min_el, policy=policy,
                                     interval_ns=INTERVAL, phase_ns=PHASE)
        for g in range(len(points)):
            steps = schedule.time_ns[schedule.offsets[g] + 1:schedule.offsets[g + 1]] // STEP
            forced = schedule.forced[schedule.offsets[g] + 1:schedule.offsets[g + 1]]
            assert instant[steps[~forced]].all()
            assert not instant[steps[forced]].any()
            # a forced entry replaces a server that set, or ends an outage
            prev = schedule.satellite[schedule.offsets[g]:schedule.offsets[g + 1] - 1][forced]
            assert all(p < 0 or not visible[g, p, k] for p, k in zip(prev, steps[forced], strict=True))
        assert not schedule.forced[schedule.offsets[:-1]].any()  # the first entry is a choice


@pytest.mark.parametrize("name, policy", [("oneweb", "nearest"), ("walker", "highest")])
def test_forced_handovers_occur(name, policy):
    """The properties above are not vacuous: OneWeb's nearest satellite (several shells)
    can set between instants, and the sparse Walker shell loses coverage; the schedule
    marks those picks (18 and 40 of them here)."""
    c, points, t_ns, min_el, *_ = geometry(name)
    schedule = handover_schedule(c, points, t_ns, min_elevation_deg=min_el, policy=policy,
                                 interval_ns=INTERVAL, phase_ns=PHASE)
    assert schedule.forced.sum() >= 10


@pytest.mark.slow  # the unit tier (make test-unit) leaves it to make test
def test_session_windows_start_with_a_fresh_pick_and_follow_the_replay():
    c, points, t_ns, min_el, sin_el, rng_km, visible = geometry("starlink")
    instant = reallocation_steps(t_ns, INTERVAL, PHASE)
    rng = np.random.default_rng(3)
    first = rng.integers(0, t_ns.size // 2, len(points))
    last = first + rng.integers(0, t_ns.size // 2, len(points))
    for policy in ("highest", "longest"):
        schedule = session_schedule(c, points, t_ns, first, last, min_elevation_deg=min_el,
                                    policy=policy, interval_ns=INTERVAL, phase_ns=PHASE)
        for g in range(len(points)):
            want = replay(sin_el[g], rng_km[g], visible[g], policy, instant, first[g], last[g])
            assert entries(schedule, g) == want


@pytest.mark.parametrize("policy", ["highest", "longest"])
def test_a_span_without_an_instant_holds_every_assignment_until_it_sets(policy):
    """An hour-long interval whose first instant lies past the span: no instant at all,
    yet the assignment holds (non-sticky or not) and every change is forced."""
    c, points, t_ns, min_el, sin_el, rng_km, visible = geometry("walker")
    interval, phase = 7200 * S, 7197 * S
    instant = reallocation_steps(t_ns, interval, phase)
    assert not instant.any()
    schedule = handover_schedule(c, points, t_ns, min_elevation_deg=min_el, policy=policy,
                                 sticky=False, interval_ns=interval, phase_ns=phase)
    for g in range(len(points)):
        want = replay(sin_el[g], rng_km[g], visible[g], policy, instant, 0, t_ns.size - 1)
        assert entries(schedule, g) == want
    rest = np.ones(schedule.forced.size, bool)
    rest[schedule.offsets[:-1]] = False
    assert schedule.forced[rest].all() and rest.any()


def test_without_an_interval_nothing_is_forced_and_the_schedule_is_unchanged():
    c, points, t_ns, min_el, *_ = geometry("walker")
    a = handover_schedule(c, points, t_ns, min_elevation_deg=min_el)
    b = handover_schedule(c, points, t_ns, min_elevation_deg=min_el, interval_ns=0, phase_ns=0)
    assert a.interval_ns == 0 and not a.forced.any()
    np.testing.assert_array_equal(a.time_ns, b.time_ns)
    np.testing.assert_array_equal(a.satellite, b.satellite)


@pytest.mark.parametrize("interval, phase, step, message", [
    (15 * S, 12 * S, 10 * S, r"12 s \+ k x 15 s are not all on the step grid \(step 10 s\)"),
    (15 * S, 15 * S, 3 * S, r"phase 15000000000 ns must be in \[0, interval"),
    (-15 * S, 0, 3 * S, "interval -15000000000 ns must be positive"),
    (0, 3 * S, 3 * S, "phase 3000000000 ns given without an interval"),
])
def test_bad_reallocation_settings_are_named(interval, phase, step, message):
    with pytest.raises(ValueError, match=message):
        reallocation_steps(step_times_ns(600 * S, step), interval, phase)
