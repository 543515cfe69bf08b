"""Handover schedules for many ground clients, streamed over time in chunks.

For every client and every time step the kernel finds the satellites above the
minimum elevation (a latitude/longitude cell index over the satellites keeps
this to the few hundred near each client), tracks visibility passes at step
resolution, and applies the policy:

- ``highest``: the satellite with the highest elevation;
- ``nearest``: the satellite with the shortest slant range;
- ``longest``: the satellite that stays above the minimum elevation longest
  (needs the future: decided after the sweep from the passes).

``sticky=True`` (default) keeps the serving satellite until it drops below the
minimum elevation and only then applies the policy (a handover happens when it
must); ``sticky=False`` re-applies the policy at every step. Ties go to the
lowest satellite index. Times are the step times: a handover at ``time_ns``
means the new satellite serves from that step on; -1 means no satellite is
above the minimum elevation (an outage) from that step on.

Scheduled reallocation (``interval_ns``, ``phase_ns``): a central controller
reassigns every terminal at the instants ``phase_ns + k * interval_ns`` from the
epoch (Starlink's 15 s cadence, docs/orbit-model.md). At each instant the policy
is applied afresh (never sticky there); between instants the assignment holds
(whatever ``sticky`` says) unless the serving satellite drops below the minimum
elevation or none serves: then the policy picks at once, and that entry is
``forced``. The instants must lie on the step grid.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numba
import numpy as np

from orbit_model.constants import WGS84_A_KM, WGS84_B_KM
from orbit_model.constellation import Constellation
from orbit_model.propagate import BLOCK_STEPS, DEFAULT_KNOT_NS, _as_times, teme_block_km
from orbit_model.timebase import NS_PER_S
from orbit_model.visibility import GroundPoints

__all__ = ["HandoverSchedule", "handover_schedule", "session_schedule", "POLICIES",
           "STEP_PASS_DTYPE", "reallocation_steps", "reallocation_step_ns"]

log = logging.getLogger(__name__)

POLICIES = ("highest", "longest", "nearest")
_POLICY_CODE = {"highest": 0, "nearest": 1, "longest": 2}

STEP_PASS_DTYPE = np.dtype([
    ("client", np.int32),
    ("satellite", np.int32),
    ("rise_step", np.int32),  # first step above the minimum elevation
    ("set_step", np.int32),  # first step below it again (n_steps when still up at the end)
    ("max_elevation_deg", np.float32),
])


@dataclass(frozen=True)
class HandoverSchedule:
    """Serving satellite over time for each client, in CSR layout.

    Client ``c``'s entries are ``offsets[c]:offsets[c+1]`` of ``time_ns`` (int64,
    ascending, the first is 0) and ``satellite`` (int32, -1 = none visible).
    ``t_ns`` are the step times the schedule was computed on. Under scheduled
    reallocation (``interval_ns`` > 0) ``forced`` (bool, per entry) marks the entries
    decided between two instants because the serving satellite set (or a satellite
    rose after an outage); without it every entry has ``forced`` False.
    """

    offsets: np.ndarray
    time_ns: np.ndarray
    satellite: np.ndarray
    t_ns: np.ndarray
    policy: str
    min_elevation_deg: float
    sticky: bool
    forced: np.ndarray | None = None
    interval_ns: int = 0
    phase_ns: int = 0

    def __post_init__(self):
        if self.forced is None:
            object.__setattr__(self, "forced", np.zeros(self.satellite.size, bool))

    @property
    def n_clients(self) -> int:
        return int(self.offsets.size - 1)

    def for_client(self, client: int) -> tuple[np.ndarray, np.ndarray]:
        """(time_ns, satellite) of one client's schedule."""
        if not 0 <= client < self.n_clients:
            raise ValueError(f"client {client} is outside 0..{self.n_clients - 1}")
        part = slice(self.offsets[client], self.offsets[client + 1])
        return self.time_ns[part], self.satellite[part]

    @property
    def n_handovers(self) -> np.ndarray:
        """Per client: changes from one satellite to another (outages excluded: a gap
        between two satellites counts once, when the new one takes over)."""
        return _count_handovers(self.offsets, self.satellite)

    def serving_at(self, client, t_ns) -> np.ndarray:
        """Serving satellite of ``client[i]`` at ``t_ns[i]`` (broadcast; -1 = none)."""
        client, t_ns = np.broadcast_arrays(np.asarray(client, np.int64), _as_times(t_ns))
        if client.size and (client.min() < 0 or client.max() >= self.n_clients):
            raise ValueError(f"client index outside 0..{self.n_clients - 1}")
        out = np.empty(client.shape, np.int32)
        _serving_at(self.offsets, self.time_ns, self.satellite, client.ravel(), t_ns.ravel(),
                    out.reshape(-1))
        return out


@numba.njit(cache=True)
def _count_handovers(offsets, satellite):
    out = np.zeros(offsets.size - 1, np.int64)
    for c in range(offsets.size - 1):
        last = -1
        for i in range(offsets[c], offsets[c + 1]):
            s = satellite[i]
            if s >= 0:
                if last >= 0 and s != last:
                    out[c] += 1
                last = s
    return out


@numba.njit(cache=True)
def _serving_at(offsets, time_ns, satellite, client, t_ns, out):
    for q in range(client.size):
        lo, hi = offsets[client[q]], offsets[client[q] + 1]
        i = np.searchsorted(time_ns[lo:hi], t_ns[q], side="right") - 1
        out[q] = satellite[lo + i] if i >= 0 else -1


def _cap_angle_rad(min_elevation_deg: float, max_radius_km: float) -> float:
    """Largest Earth-central angle between a client and a satellite it sees above the minimum
    elevation, made conservative: smallest Earth radius (the pole, less 1 km), 0.25 deg
    allowance for geodetic vs geocentric vertical, the highest satellite."""
    elevation = math.radians(min_elevation_deg - 0.25)
    ground_km = WGS84_B_KM - 1.0
    ratio = ground_km * math.cos(elevation) / max_radius_km
    if ratio >= 1.0:
        return 0.0
    return min(math.pi, math.acos(ratio) - elevation)


@numba.njit(cache=True)
def _grow(a, n):
    b = np.empty(max(2 * a.size, n), a.dtype)
    b[:a.size] = a
    return b


@numba.njit(cache=True)
def _end_pass(g, i, set_step, max_el, pass_start, p_client, p_sat, p_rise, p_set, p_max, n_pass):
    """Append the pass of satellite ``i`` over point ``g`` that ends at ``set_step``;
    False when the output is full (the caller replays the chunk with more room)."""
    if n_pass[0] >= p_sat.size:
        return False
    p = n_pass[0]
    p_client[p], p_sat[p], p_rise[p] = g, i, pass_start[g, i]
    p_set[p], p_max[p] = set_step, max_el
    n_pass[0] += 1
    return True


@numba.njit(cache=True)
def _sweep(position, theta, step0, n_steps_total, g_first, g_last, g_xyz, g_up, g_row_lo,
           g_row_hi, g_col_lo, g_col_n, cell_lat, cell_lon, n_rows, n_cols, sin_min, policy, sticky,
           instant, last_seen, pass_start, pass_max, vis, n_vis, serving,
           p_client, p_sat, p_rise, p_set, p_max, n_pass,
           h_client, h_step, h_sat, h_forced, n_hand, vis_cap, keep_passes):
    """One time chunk. position: TEME (n_sats, n_c, 3); theta: GMST per step.

    Point ``g`` is followed at steps ``g_first[g] .. g_last[g]`` only (a session's
    window; the whole span for ``handover_schedule``): its state starts fresh at
    ``g_first`` and its open passes end at ``g_last + 1``.

    State carried between chunks: last_seen / pass_start / pass_max (n_g, n_sats),
    the visible list per client (vis, n_vis), the serving satellite.
    Appends passes that ended and handovers to the growable output arrays.

    ``instant`` (uint8, one per step of the whole grid; empty = no scheduled
    reallocation) marks the reallocation instants (module docstring).

    Without ``keep_passes`` no pass is recorded, so the (point, satellite) state and the
    visible lists are neither read nor written (the caller may pass 1 x 1 arrays): a
    sticky server's visibility is known from the step's own scan. That state is the
    sweep's memory traffic (12 bytes per pair, 53 MB for 1,000 sessions on a 4,408-
    satellite constellation), and two processes sweeping at once shared its bandwidth.
    """
    n_sats, n_c = position.shape[0], position.shape[1]
    n_g = g_xyz.shape[0]
    n_cells = n_rows * n_cols
    cell_count = np.zeros(n_cells + 1, np.int64)
    cell_of = np.empty(n_sats, np.int64)
    cell_sats = np.empty(n_sats, np.int64)
    sat_xyz = np.empty((n_sats, 3))
    new_vis = np.empty(vis_cap, np.int32)
    sin_min2 = sin_min * sin_min
    overflow = False
    for j in range(n_c):
        step = step0 + j
        c, s = np.cos(theta[j]), np.sin(theta[j])
        cell_count[:] = 0
        for i in range(n_sats):
            x, y, z = position[i, j, 0], position[i, j, 1], position[i, j, 2]
            xe, ye = c * x + s * y, -s * x + c * y
            sat_xyz[i, 0], sat_xyz[i, 1], sat_xyz[i, 2] = xe, ye, z
            if not np.isfinite(xe + ye + z):
                cell_of[i] = -1
                continue
            lat = np.arctan2(z, np.sqrt(xe * xe + ye * ye))
            lon = np.arctan2(ye, xe)
            r = min(int((lat + np.pi / 2) / cell_lat), n_rows - 1)
            q = min(int((lon + np.pi) / cell_lon), n_cols - 1)
            cell_of[i] = r * n_cols + q
            cell_count[r * n_cols + q + 1] += 1
        for k in range(n_cells):
            cell_count[k + 1] += cell_count[k]
        fill = cell_count[:-1].copy()
        for i in range(n_sats):
            if cell_of[i] >= 0:
                cell_sats[fill[cell_of[i]]] = i
                fill[cell_of[i]] += 1
        for g in range(n_g):
            if step < g_first[g]:
                continue
            if step > g_last[g]:
                # the window ended at the previous step: close its passes there
                if keep_passes:
                    for k in range(n_vis[g]):
                        i = vis[g, k]
                        if not _end_pass(g, i, step, pass_max[g, i], pass_start, p_client,
                                         p_sat, p_rise, p_set, p_max, n_pass):
                            return 1
                n_vis[g] = 0
                continue
            gx, gy, gz = g_xyz[g, 0], g_xyz[g, 1], g_xyz[g, 2]
            ux, uy, uz = g_up[g, 0], g_up[g, 1], g_up[g, 2]
            m = 0
            best, best_val = -1, -np.inf
            cur = serving[g]
            cur_seen = False
            for r in range(g_row_lo[g], g_row_hi[g] + 1):
                for qq in range(g_col_n[g, r]):
                    q = (g_col_lo[g, r] + qq) % n_cols
                    cell = r * n_cols + q
                    for t in range(cell_count[cell], cell_count[cell + 1]):
                        i = cell_sats[t]
                        dx, dy, dz = sat_xyz[i, 0] - gx, sat_xyz[i, 1] - gy, sat_xyz[i, 2] - gz
                        up_km = dx * ux + dy * uy + dz * uz
                        # sin(el) >= sin_min without a square root for the many that fail
                        if sin_min >= 0.0 and up_km < 0.0:
                            continue
                        d2 = dx * dx + dy * dy + dz * dz
                        if sin_min >= 0.0 and up_km * up_km < sin_min2 * d2:
                            continue
                        rng = np.sqrt(d2)
                        sin_el = up_km / rng
                        if sin_el < sin_min:
                            continue
                        if m >= vis_cap:
                            overflow = True
                            continue
                        if keep_passes:
                            new_vis[m] = i
                            if last_seen[g, i] != step - 1:
                                pass_start[g, i] = step
                                pass_max[g, i] = -90.0
                            last_seen[g, i] = step
                            el = np.float32(np.degrees(np.arcsin(min(sin_el, 1.0))))
                            if el > pass_max[g, i]:
                                pass_max[g, i] = el
                        m += 1
                        cur_seen = cur_seen or i == cur
                        val = sin_el if policy == 0 else -rng
                        if val > best_val or (val == best_val and i < best):
                            best, best_val = i, val
            if keep_passes:
                # passes that ended: visible at step-1, not now
                for k in range(n_vis[g]):
                    i = vis[g, k]
                    if last_seen[g, i] != step and not _end_pass(
                            g, i, step, pass_max[g, i], pass_start, p_client, p_sat, p_rise,
                            p_set, p_max, n_pass):
                        return 1
                for k in range(m):
                    vis[g, k] = new_vis[k]
            n_vis[g] = m
            if policy == 2:
                continue  # "longest" is decided from the passes after the sweep
            forced = False
            if instant.size == 0:
                choice = cur if sticky and cur >= 0 and cur_seen else best
            elif step == g_first[g] or instant[step]:
                choice = best  # afresh at an instant: not sticky there
            elif cur >= 0 and cur_seen:
                choice = cur  # the assignment holds between instants
            else:
                choice, forced = best, True  # the server set (or none served): pick at once
            if choice != cur or step == g_first[g]:
                if n_hand[0] >= h_sat.size:
                    return 2
                h = n_hand[0]
                h_client[h], h_step[h], h_sat[h] = g, step, choice
                h_forced[h] = forced and step != g_first[g]
                n_hand[0] += 1
                serving[g] = choice
    if step0 + n_c == n_steps_total and keep_passes:  # close the passes still up at the end
        for g in range(n_g):
            for k in range(n_vis[g]):
                i = vis[g, k]
                if not _end_pass(g, i, min(n_steps_total, g_last[g] + 1), pass_max[g, i],
                                 pass_start, p_client, p_sat, p_rise, p_set, p_max, n_pass):
                    return 1
            n_vis[g] = 0
    return 3 if overflow else 0


@numba.njit(cache=True)
def _longest(offsets, p_sat, p_rise, p_set, g_first, g_last, sticky, scheduled, instant_steps,
             h_client, h_step, h_sat, h_forced):
    """Schedule under "longest remaining visibility" from step-resolution passes.

    Passes of each client are sorted by rise; at each decision step the candidates
    are the passes with rise <= step < set, the choice the latest set (lowest
    index on ties). Sticky: decide only when the serving pass ends; otherwise
    also whenever a pass rises. ``scheduled``: decide at every instant of
    ``instant_steps`` (ascending step indices; there may be none in the span), and
    between them only when the serving pass ends or (none serving) a pass rises: forced.
    """
    n = 0
    active = np.empty(p_sat.size, np.int64)
    for c in range(offsets.size - 1):
        lo, hi = offsets[c], offsets[c + 1]
        nxt = lo  # next pass to become active
        n_act = 0
        cur, cur_set = -1, -1
        step = g_first[c]
        n_steps = g_last[c] + 1
        first = True
        k_inst = np.searchsorted(instant_steps, step)  # next instant at or after step
        while step < n_steps:
            while k_inst < instant_steps.size and instant_steps[k_inst] < step:
                k_inst += 1
            at_instant = k_inst < instant_steps.size and instant_steps[k_inst] == step
            while nxt < hi and p_rise[nxt] <= step:
                active[n_act] = nxt
                n_act += 1
                nxt += 1
            k = 0
            for a in range(n_act):  # drop ended passes
                if p_set[active[a]] > step:
                    active[k] = active[a]
                    k += 1
            n_act = k
            holds = cur >= 0 and cur_set > step
            if scheduled:
                decide = first or at_instant or not holds
            else:
                decide = not (sticky and holds)
            if decide:
                best, best_set = -1, -1
                for a in range(n_act):
                    p = active[a]
                    if p_set[p] > best_set or (p_set[p] == best_set and p_sat[p] < best):
                        best, best_set = p_sat[p], p_set[p]
                if best != cur or first:
                    h_client[n], h_step[n], h_sat[n] = c, step, best
                    h_forced[n] = scheduled and not (first or at_instant)
                    n += 1
                    cur, cur_set = best, best_set
                first = False
            # next decision: the serving pass ends, or (not sticky / no satellite) a pass
            # rises, or (scheduled) the next instant
            nxt_step = n_steps
            if cur >= 0:
                nxt_step = cur_set
            if ((not sticky and not scheduled) or cur < 0) and nxt < hi:
                nxt_step = min(nxt_step, p_rise[nxt])
            if scheduled:
                k = k_inst
                while k < instant_steps.size and instant_steps[k] <= step:
                    k += 1
                if k < instant_steps.size:
                    nxt_step = min(nxt_step, instant_steps[k])
            if cur < 0 and nxt >= hi:
                break  # nothing rises any more: every later decision is "none"
            step = max(nxt_step, step + 1)
    return n


def _column_ranges(glat, glon, cap, n_rows, n_cols, cell_lat, cell_lon):
    """Per (point, grid row): first column and number of columns that the point's visibility
    cap (centre glat/glon, radius ``cap``, radians) can reach within that row's latitudes."""
    n_g = glat.size
    col_lo = np.zeros((n_g, n_rows), np.int64)
    col_n = np.zeros((n_g, n_rows), np.int64)
    lo_edge = -np.pi / 2 + cell_lat * np.arange(n_rows)
    hi_edge = lo_edge + cell_lat
    for r in range(n_rows):
        a = np.maximum(lo_edge[r], glat - cap)  # the row's part of the cap, in latitude
        b = np.minimum(hi_edge[r], glat + cap)
        inside = a <= b
        # the cap is widest in longitude at sin(phi) = sin(glat) / cos(cap); clamp into [a, b]
        widest = np.arcsin(np.clip(np.sin(glat) / np.cos(cap), -1, 1))
        phi = np.clip(widest, a, b)
        cos_phi = np.cos(phi)
        with np.errstate(invalid="ignore", divide="ignore"):
            cos_dlon = (np.cos(cap) - np.sin(glat) * np.sin(phi)) / (np.cos(glat) * cos_phi)
        dlon = np.arccos(np.clip(np.nan_to_num(cos_dlon, nan=-1.0), -1, 1))
        # a pole inside the cap, or a row touching a pole: every column
        full = (np.abs(glat) + cap >= np.pi / 2 - 1e-9) | (cos_phi < 1e-9) | (dlon >= np.pi - 1e-12)
        dlon = dlon + 1e-9  # cell edges: never lose a satellite to rounding
        first = np.floor((glon - dlon + np.pi) / cell_lon).astype(np.int64)
        last = np.floor((glon + dlon + np.pi) / cell_lon).astype(np.int64)
        col_lo[:, r] = np.where(full, 0, first % n_cols)
        col_n[:, r] = np.where(inside, np.where(full, n_cols, np.minimum(last - first + 1, n_cols)), 0)
    return col_lo, col_n


def handover_schedule(constellation: Constellation, ground: GroundPoints, t_ns,
                      min_elevation_deg: float = 25.0, policy: str = "highest", sticky: bool = True,
                      chunk_steps: int = BLOCK_STEPS, knot_ns: int | None = DEFAULT_KNOT_NS,
                      return_passes: bool = False, progress=None, max_state_pairs: int = 40_000_000,
                      interval_ns: int = 0, phase_ns: int = 0, _initial_capacity: int = 0):
    """The serving satellite of each ground point over ``t_ns`` (evenly spaced steps from 0).

    Works in chunks of ``chunk_steps`` time steps: memory is about
    n_sats x chunk_steps x 48 bytes for positions plus, for the passes (returned, or
    the "longest" policy), 12 bytes per (client, satellite) of pass state; above
    ``max_state_pairs`` (client,
    satellite) pairs (480 MB of state) the clients are split into batches, each
    swept over the whole window (propagation repeats per batch). Returns a
    ``HandoverSchedule``, and with ``return_passes`` also the step-resolution
    passes (``STEP_PASS_DTYPE``). ``progress(done_steps, total_steps)`` is
    called after each chunk. ``interval_ns`` > 0 turns on scheduled reallocation at
    ``phase_ns + k * interval_ns`` (module docstring; ``reallocation_steps``).
    """
    t_ns = _check_times(t_ns)
    n = len(ground)
    return _batched(constellation, ground, t_ns, np.zeros(n, np.int64),
                    np.full(n, t_ns.size - 1, np.int64), min_elevation_deg, policy, sticky,
                    chunk_steps, knot_ns, return_passes, progress, max_state_pairs,
                    _initial_capacity, interval_ns, phase_ns)


def session_schedule(constellation: Constellation, ground: GroundPoints, t_ns, first_step,
                     last_step, min_elevation_deg: float = 25.0, policy: str = "highest",
                     sticky: bool = True, chunk_steps: int = BLOCK_STEPS,
                     knot_ns: int | None = DEFAULT_KNOT_NS, max_state_pairs: int = 40_000_000,
                     interval_ns: int = 0, phase_ns: int = 0) -> HandoverSchedule:
    """The serving satellite of client ``i`` over its own window of steps
    ``first_step[i] .. last_step[i]`` (inclusive indices into ``t_ns``, the scenario's
    evenly spaced steps from 0): a session's handover schedule.

    The same sweep as ``handover_schedule`` on the same step grid: a client's first
    entry is at ``t_ns[first_step[i]]`` (its state starts fresh there: nothing served
    before), ``-1`` marks an outage, and for "highest" and "nearest" without
    ``sticky`` every entry equals ``handover_schedule``'s over the whole span, limited
    to the window (tests/test_handover.py). Only the time chunks that the windows
    touch are propagated, so a chunk of sessions that starts close together (sim
    sorts sessions by start) costs its own time span. Only "longest" keeps pass state
    (``len(ground) x n_sats``, batched above ``max_state_pairs``). Under scheduled
    reallocation (``interval_ns``) a session's first entry is a fresh choice (the
    terminal connects), whether or not its first step is an instant.
    """
    t_ns = _check_times(t_ns)
    first = np.asarray(first_step, np.int64).reshape(-1)
    last = np.asarray(last_step, np.int64).reshape(-1)
    if first.size != len(ground) or last.size != len(ground):
        raise ValueError(f"{len(ground)} clients but {first.size} first and {last.size} last "
                         "steps")
    bad = (first < 0) | (last < first) | (last >= t_ns.size)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"client {i}: window of steps {first[i]}..{last[i]} is not inside "
                         f"0..{t_ns.size - 1}")
    return _batched(constellation, ground, t_ns, first, last, min_elevation_deg, policy, sticky,
                    chunk_steps, knot_ns, False, None, max_state_pairs, 0, interval_ns, phase_ns)


def reallocation_steps(t_ns, interval_ns: int, phase_ns: int = 0) -> np.ndarray:
    """Which steps of ``t_ns`` are reallocation instants ``phase_ns + k * interval_ns``
    (bool, one per step; all False when ``interval_ns`` is 0: no scheduled reallocation).

    ``0 <= phase_ns < interval_ns``; every instant inside ``t_ns[0]..t_ns[-1]`` must be
    one of the steps (a step of 3 s serves a 15 s interval at phase 12 s; 10 s does
    not), else ``ValueError`` naming the values."""
    t_ns = _as_times(t_ns)
    interval_ns, phase_ns = int(interval_ns), int(phase_ns)
    if interval_ns == 0:
        if phase_ns:
            raise ValueError(f"reallocation phase {phase_ns} ns given without an interval")
        return np.zeros(t_ns.size, bool)
    if interval_ns < 0:
        raise ValueError(f"reallocation interval {interval_ns} ns must be positive")
    if not 0 <= phase_ns < interval_ns:
        raise ValueError(f"reallocation phase {phase_ns} ns must be in [0, interval "
                         f"{interval_ns} ns)")
    at = (t_ns - phase_ns) % interval_ns == 0
    lo, hi = int(t_ns[0]), int(t_ns[-1])
    first_k = -(-(lo - phase_ns) // interval_ns)
    want = max(0, (hi - phase_ns) // interval_ns - first_k + 1)
    if int(at.sum()) != want:
        step = int(t_ns[1] - t_ns[0]) if t_ns.size > 1 else 0
        raise ValueError(f"reallocation instants {phase_ns / NS_PER_S:g} s + k x "
                         f"{interval_ns / NS_PER_S:g} s are not all on the step grid (step "
                         f"{step / NS_PER_S:g} s): use a step that divides both")
    return at


def reallocation_step_ns(interval_ns: int, phase_ns: int = 0, max_step_ns: int = 10 * NS_PER_S) -> int:
    """The default handover step: ``max_step_ns`` (10 s), or under scheduled reallocation
    the largest whole second up to it on which every instant lies (3 s for 15 s at phase
    12 s; 5 s for 15 s at phase 0). ``ValueError`` when the instants are not whole seconds."""
    if not interval_ns:
        return int(max_step_ns)
    if interval_ns % NS_PER_S or phase_ns % NS_PER_S:
        raise ValueError(f"reallocation interval {interval_ns} ns and phase {phase_ns} ns are "
                         "not whole seconds: give the step")
    g = math.gcd(int(interval_ns) // NS_PER_S, int(phase_ns) // NS_PER_S)
    return max(d for d in range(1, max(1, int(max_step_ns) // NS_PER_S) + 1) if g % d == 0) * NS_PER_S


def _check_times(t_ns) -> np.ndarray:
    t_ns = _as_times(t_ns)
    if t_ns.size == 0 or t_ns[0] != 0 or (t_ns.size > 1 and np.any(np.diff(t_ns) <= 0)):
        raise ValueError("handover times must start at 0 and increase")
    return t_ns


def _batched(constellation, ground, t_ns, first, last, min_elevation_deg, policy, sticky,
             chunk_steps, knot_ns, return_passes, progress, max_state_pairs, _initial_capacity,
             interval_ns, phase_ns):
    """Clients in batches of at most ``max_state_pairs`` (client, satellite) pairs."""
    instant = reallocation_steps(t_ns, interval_ns, phase_ns)
    scheduled = (instant.astype(np.uint8) if interval_ns else np.zeros(0, np.uint8),
                 int(interval_ns), int(phase_ns))
    per_batch = max(1, max_state_pairs // max(constellation.n_satellites, 1))
    if len(ground) <= per_batch:
        return _schedule(constellation, ground, t_ns, first, last, min_elevation_deg, policy,
                         sticky, chunk_steps, knot_ns, return_passes, progress,
                         _initial_capacity, scheduled)
    schedules, pass_parts = [], []
    for lo in range(0, len(ground), per_batch):
        part = GroundPoints(ground.latitude_deg[lo:lo + per_batch],
                            ground.longitude_deg[lo:lo + per_batch],
                            ground.elevation_m[lo:lo + per_batch])
        schedule, passes = _schedule(constellation, part, t_ns, first[lo:lo + per_batch],
                                     last[lo:lo + per_batch], min_elevation_deg, policy, sticky,
                                     chunk_steps, knot_ns, True, progress, _initial_capacity,
                                     scheduled)
        schedules.append(schedule)
        passes = passes if return_passes else passes[:0]
        passes["client"] += lo
        pass_parts.append(passes)
    head = schedules[0]
    sizes = np.cumsum([0] + [s.time_ns.size for s in schedules])
    offsets = np.concatenate([[0]] + [s.offsets[1:] + sizes[k] for k, s in enumerate(schedules)])
    schedule = HandoverSchedule(
        offsets=offsets.astype(np.int64), time_ns=np.concatenate([s.time_ns for s in schedules]),
        satellite=np.concatenate([s.satellite for s in schedules]), t_ns=head.t_ns,
        policy=head.policy, min_elevation_deg=head.min_elevation_deg, sticky=head.sticky,
        forced=np.concatenate([s.forced for s in schedules]), interval_ns=head.interval_ns,
        phase_ns=head.phase_ns)
    return (schedule, np.concatenate(pass_parts)) if return_passes else schedule


def _schedule(constellation, ground, t_ns, first, last, min_elevation_deg, policy, sticky,
              chunk_steps, knot_ns, return_passes, progress, _initial_capacity, scheduled):
    instant, interval_ns, phase_ns = scheduled
    if policy not in POLICIES:
        raise ValueError(f"handover policy {policy!r} is not one of {', '.join(POLICIES)}")
    if not -90.0 <= min_elevation_deg < 90.0:
        raise ValueError(f"minimum elevation {min_elevation_deg} deg is outside -90..90")
    n_g, n_sats, n_steps = len(ground), constellation.n_satellites, t_ns.size
    max_radius = WGS84_A_KM + max(constellation.max_altitude_km, 100.0) + 50.0
    cap = _cap_angle_rad(min_elevation_deg, max_radius)
    cell_rad = max(cap / 3, math.radians(1.0))
    # cells tile the sphere exactly (so column indices wrap at the antimeridian)
    n_rows = int(math.ceil(math.pi / cell_rad))
    n_cols = int(math.ceil(2 * math.pi / cell_rad))
    cell_lat, cell_lon = math.pi / n_rows, 2 * math.pi / n_cols
    xyz = np.ascontiguousarray(ground.itrs_km)
    up = np.ascontiguousarray(ground.up)
    glat = np.arctan2(xyz[:, 2], np.hypot(xyz[:, 0], xyz[:, 1]))
    glon = np.arctan2(xyz[:, 1], xyz[:, 0])
    row_lo = np.clip(np.floor((glat - cap + np.pi / 2) / cell_lat).astype(np.int64), 0, n_rows - 1)
    row_hi = np.clip(np.floor((glat + cap + np.pi / 2) / cell_lat).astype(np.int64), 0, n_rows - 1)
    col_lo, col_n = _column_ranges(glat, glon, cap, n_rows, n_cols, cell_lat, cell_lon)

    # above the horizon no more than about half the satellites are up at once; a mask
    # below it (the below-the-mask fallback of sim: -90 deg) can see every satellite
    vis_cap = n_sats if min_elevation_deg < 0.0 else min(n_sats, 2048)
    keep_passes = bool(return_passes or policy == "longest")  # else memory stays per chunk
    # the pass state is only kept for the passes (_sweep's docstring says why)
    n_pg, n_ps, n_pv = (n_g, n_sats, vis_cap) if keep_passes else (1, 1, 1)
    last_seen = np.full((n_pg, n_ps), -2, np.int32)
    pass_start = np.zeros((n_pg, n_ps), np.int32)
    pass_max = np.zeros((n_pg, n_ps), np.float32)
    vis = np.zeros((n_pg, n_pv), np.int32)
    n_vis = np.zeros(n_g, np.int64)
    serving = np.full(n_g, -1, np.int32)
    # room for one chunk's output: about one pass end per point per step, rarely outgrown
    # (then the chunk replays with twice the room)
    cap0 = _initial_capacity or max(1024, n_g * min(chunk_steps, n_steps) // 2)
    p_arrays = [np.empty(cap0, np.int32), np.empty(cap0, np.int32), np.empty(cap0, np.int32),
                np.empty(cap0, np.int32), np.empty(cap0, np.float32)]
    h_arrays = [np.empty(cap0, np.int32), np.empty(cap0, np.int32), np.empty(cap0, np.int32),
                np.empty(cap0, np.bool_)]
    n_pass = np.zeros(1, np.int64)
    n_hand = np.zeros(1, np.int64)
    code = {"highest": 0, "nearest": 1, "longest": 2}[policy]
    sin_min = math.sin(math.radians(min_elevation_deg))
    pass_parts, hand_parts = [], []
    # chunks on the fixed grid 0, chunk_steps, ...: a step's positions do not depend on
    # which windows are asked for (knots of the interpolation lie within a chunk)
    first_step = int(first.min()) if n_g else 0
    last_step = int(last.max()) if n_g else -1
    for start in range(first_step - first_step % chunk_steps, last_step + 1, chunk_steps):
        part = t_ns[start:start + chunk_steps]
        position, theta = teme_block_km(constellation, part, knot_ns)
        while True:
            # snapshot the state so a chunk can be replayed after growing the outputs
            saved = (last_seen.copy(), pass_start.copy(), pass_max.copy(), vis.copy(),
                     n_vis.copy(), serving.copy(), int(n_pass[0]), int(n_hand[0]))
            status = _sweep(position, theta, start, n_steps, first, last, xyz, up, row_lo, row_hi, col_lo,
                                  col_n, cell_lat, cell_lon, n_rows, n_cols, sin_min, code, sticky,
                                  instant, last_seen, pass_start, pass_max, vis, n_vis, serving,
                                  *p_arrays, n_pass, *h_arrays, n_hand, vis_cap, keep_passes)
            if status in (0, 3):
                if status == 3:
                    raise ValueError(f"more than {vis_cap} satellites visible from one point: "
                                     "raise the minimum elevation")
                break
            (last_seen, pass_start, pass_max, vis, n_vis, serving) = saved[:6]
            n_pass[0], n_hand[0] = saved[6], saved[7]
            if status == 1:
                p_arrays = [_grow(a, 0) for a in p_arrays]
            else:
                h_arrays = [_grow(a, 0) for a in h_arrays]
        # move this chunk's output out of the working arrays: they only ever hold one chunk
        np_, nh_ = int(n_pass[0]), int(n_hand[0])
        pass_parts.append(tuple(a[:np_].copy() for a in p_arrays))
        hand_parts.append(tuple(a[:nh_].copy() for a in h_arrays))
        n_pass[0] = n_hand[0] = 0
        if progress is not None:
            progress(min(start + chunk_steps, last_step + 1), last_step + 1)
    if keep_passes and n_vis.any():
        # windows that end before the span does and were not swept past: close their
        # passes at the step after the window, as the sweep would have
        g_open = np.repeat(np.arange(n_g), n_vis)
        k_open = np.concatenate([np.arange(k) for k in n_vis]).astype(np.int64)
        sat_open = vis[g_open, k_open]
        pass_parts.append((g_open.astype(np.int32), sat_open.astype(np.int32),
                           pass_start[g_open, sat_open], (last[g_open] + 1).astype(np.int32),
                           pass_max[g_open, sat_open]))

    passes = np.zeros(sum(part[0].size for part in pass_parts), STEP_PASS_DTYPE)
    for k, name in enumerate(STEP_PASS_DTYPE.names):
        passes[name] = np.concatenate([part[k] for part in pass_parts])
    del pass_parts
    passes = passes[np.lexsort((passes["satellite"], passes["rise_step"], passes["client"]))]
    if policy == "longest":
        offsets = np.searchsorted(passes["client"], np.arange(n_g + 1)).astype(np.int64)
        instant_steps = np.flatnonzero(instant).astype(np.int64)
        # an entry per pass end, pass rise (outages) and instant inside the window at most
        in_window = (np.searchsorted(instant_steps, last, side="right")
                     - np.searchsorted(instant_steps, first)).sum()
        size = 2 * passes.size + 2 * n_g + 1 + int(in_window)
        h_client, h_step, h_sat = (np.empty(size, np.int32) for _ in range(3))
        h_forced = np.empty(size, np.bool_)
        nh = _longest(offsets, passes["satellite"], passes["rise_step"], passes["set_step"],
                      first, last, sticky, interval_ns > 0, instant_steps, h_client, h_step,
                      h_sat, h_forced)
        h_client, h_step, h_sat, h_forced = h_client[:nh], h_step[:nh], h_sat[:nh], h_forced[:nh]
    else:
        h_client, h_step, h_sat, h_forced = (np.concatenate([part[k] for part in hand_parts])
                                             for k in range(4))
        order = np.argsort(h_client, kind="stable")  # emitted in time order within a client
        h_client, h_step, h_sat = h_client[order], h_step[order], h_sat[order]
        h_forced = h_forced[order]
    offsets = np.searchsorted(h_client, np.arange(n_g + 1)).astype(np.int64)
    schedule = HandoverSchedule(offsets=offsets, time_ns=t_ns[h_step], satellite=h_sat.astype(np.int32),
                                t_ns=t_ns, policy=policy, min_elevation_deg=float(min_elevation_deg),
                                sticky=bool(sticky), forced=h_forced.astype(bool),
                                interval_ns=interval_ns, phase_ns=phase_ns)
    return (schedule, passes) if return_passes else schedule


def step_times_ns(duration_ns: int, step_ns: int = 10 * NS_PER_S) -> np.ndarray:
    """0, step, 2 step, ... up to and including ``duration_ns`` when it is a multiple."""
    if duration_ns <= 0 or step_ns <= 0:
        raise ValueError(f"duration {duration_ns} ns and step {step_ns} ns must be positive")
    return np.arange(0, duration_ns + 1, step_ns, dtype=np.int64)
