"""Plain scalar implementation of the paging model, written from docs/design.md section 1
without the engine's code: the authority for the engine's parity tests, and the
baseline of bench/bench_pager.py.

One Python loop per access, dicts and lists only; the random stream is the
xoroshiro128++ / SplitMix64 / alias-table recipe of docs/paging-model.md redone
with Python integers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

M64 = (1 << 64) - 1
GAMMA = 0x9E3779B97F4A7C15
NOWHERE, GROUND = -1, -2
FAULT, HANDOVER, PUSH, REMOTE, CREATE = 0, 1, 2, 3, 4


def splitmix(x: int) -> int:
    z = x & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def rotl(x: int, k: int) -> int:
    return ((x << k) | (x >> (64 - k))) & M64


class Stream:
    """xoroshiro128++ seeded for (key, session) by SplitMix64."""

    def __init__(self, key: int, session: int):
        x = (key + 2 * session * GAMMA) & M64
        self.s0 = splitmix(x + GAMMA)
        self.s1 = splitmix(x + 2 * GAMMA)

    def next(self) -> int:
        s0, s1 = self.s0, self.s1
        result = (rotl((s0 + s1) & M64, 17) + s0) & M64
        s1 ^= s0
        self.s0 = rotl(s0, 49) ^ s1 ^ ((s1 << 21) & M64)
        self.s1 = rotl(s1, 28)
        return result


def draw(u: int, threshold: list[int], alias: list[int]) -> int:
    col = ((u >> 32) * len(threshold)) >> 32
    return col if (u & 0xFFFFFFFF) < threshold[col] else alias[col]


def paper_pages(key: int, session: int, n_draws: int, threshold, alias) -> list[int]:
    stream = Stream(key, session)
    th, al = [int(t) for t in threshold], [int(a) for a in alias]
    return [draw(stream.next(), th, al) for _ in range(n_draws)]


@dataclass
class SessionResult:
    counters: dict[str, int]
    held_at_end: list[int]
    pages_at_visit_end: list[int]
    snapshots: list[list[int]]  # per visit k: held by visits 0..k at its end
    events: list[tuple] = field(default_factory=list)  # (page, from, to, time, kind), local


COUNTERS = ("accesses", "hits", "created", "created_on_ground", "fault_moves",
            "handover_moves", "push_moves", "remote_accesses", "ground_transfers",
            "trail_hops", "remote_trail_hops")


def replay_session(n_pages, visits, *, sats=None, move_on_fault=True, create_on_ground=False,
                   select=None, push=False, lead_ns=0, log_creations=False) -> SessionResult:
    """``visits``: list of (start_ns, [(page, time_ns), ...]); ``sats``: the serving
    satellite of each visit (None: a new one each visit, the paper's trail). The page
    table names satellites, so a page held by an earlier visit of the satellite serving
    now is where it is used: a hit, or a handover that moves nothing. ``select(owner,
    uses, last_use, new_pos) -> pages`` is the handover rule (None: nothing moves).
    Event from/to are trail positions."""
    sats = list(range(len(visits))) if sats is None else list(sats)
    c = dict.fromkeys(COUNTERS, 0)
    owner = [NOWHERE] * n_pages
    uses = [0] * n_pages
    last = [-1] * n_pages
    nv = len(visits)
    held = [0] * nv
    pages_end, snaps, events = [], [], []
    for pos, (start_ns, accesses) in enumerate(visits):
        if pos > 0 and select is not None:
            for p in select(list(owner), list(uses), list(last), pos):
                o = owner[p]
                if o == pos or o == NOWHERE:
                    continue
                owner[p] = pos
                held[pos] += 1
                if o >= 0:
                    held[o] -= 1
                if o >= 0 and sats[o] == sats[pos]:  # there already: nothing moves
                    continue
                if o >= 0:
                    c["trail_hops"] += pos - o
                else:
                    c["ground_transfers"] += 1
                c["push_moves" if push else "handover_moves"] += 1
                events.append((p, o, pos, start_ns - lead_ns if push else start_ns,
                               PUSH if push else HANDOVER))
        for p, t in accesses:
            c["accesses"] += 1
            uses[p] += 1
            last[p] = pos
            o = owner[p]
            if o == pos:
                c["hits"] += 1
            elif o >= 0 and sats[o] == sats[pos]:  # left here by an earlier visit
                c["hits"] += 1
                if move_on_fault:
                    owner[p] = pos
                    held[o] -= 1
                    held[pos] += 1
            elif o == NOWHERE:
                if create_on_ground:
                    owner[p] = GROUND
                    c["created_on_ground"] += 1
                    c["remote_accesses"] += 1
                    c["ground_transfers"] += 1
                    events.append((p, GROUND, pos, t, REMOTE))
                else:
                    owner[p] = pos
                    held[pos] += 1
                    c["created"] += 1
                    if log_creations:
                        events.append((p, NOWHERE, pos, t, CREATE))
            elif move_on_fault:
                owner[p] = pos
                held[pos] += 1
                c["fault_moves"] += 1
                if o >= 0:
                    held[o] -= 1
                    c["trail_hops"] += pos - o
                else:
                    c["ground_transfers"] += 1
                events.append((p, o, pos, t, FAULT))
            else:
                c["remote_accesses"] += 1
                if o >= 0:
                    c["remote_trail_hops"] += pos - o
                else:
                    c["ground_transfers"] += 1
                events.append((p, o, pos, t, REMOTE))
        pages_end.append(c["created"] + c["created_on_ground"])
        snaps.append(held[: pos + 1])
    return SessionResult(c, list(held), pages_end, snaps, events)


def trace_sessions(trace):
    """A Trace as a list of sessions in ``replay_session``'s input form (their
    satellites: ``trace_satellites``)."""
    out = []
    vo, ao = trace.visit_offsets.tolist(), trace.access_offsets.tolist()
    pages, times = trace.access_page.tolist(), trace.access_time_ns.tolist()
    starts = trace.visit_start_ns.tolist()
    for s in range(trace.n_sessions):
        visits = []
        for g in range(vo[s], vo[s + 1]):
            visits.append((starts[g], list(zip(pages[ao[g]:ao[g + 1]], times[ao[g]:ao[g + 1]],
                                               strict=True))))
        out.append(visits)
    return out


def trace_satellites(trace):
    """Per session of a Trace: the serving satellite of each visit."""
    vo, sats = trace.visit_offsets.tolist(), trace.visit_satellite.tolist()
    return [sats[vo[s]:vo[s + 1]] for s in range(trace.n_sessions)]


def select_all(owner, uses, last, new_pos):
    return [p for p, o in enumerate(owner) if o >= 0]


def paper_session(key, session, n_pages, accesses, handovers, threshold, alias):
    """One paper run, scalar: (rows, ondemand moves, ondemand hops, proactive moves,
    proactive hops) from the scalar sampler and the scalar replay."""
    v = handovers + 1
    pages = paper_pages(key, session, v * accesses, threshold, alias)
    visits = [(0, [(p, 0) for p in pages[k * accesses:(k + 1) * accesses]]) for k in range(v)]
    od = replay_session(n_pages, visits)
    pr = replay_session(n_pages, visits, select=select_all)
    rows = [snap + [0] * (v - len(snap)) for snap in od.snapshots]
    return (rows, od.counters["fault_moves"], od.counters["trail_hops"],
            pr.counters["handover_moves"], pr.counters["trail_hops"])


def paper_session_independent(rng, n_pages, accesses, handovers, zipf_s):
    """One paper run with its own random stream (``random.Random``, inverse-CDF
    sampling): an implementation that shares nothing with the engine. Returns
    (totals, last_row, ondemand moves, ondemand hops, proactive moves, proactive hops)."""
    weights = [1.0 / (r ** zipf_s) for r in range(1, n_pages + 1)]
    v = handovers + 1
    pages = rng.choices(range(n_pages), weights=weights, k=v * accesses)
    visits = [(0, [(p, 0) for p in pages[k * accesses:(k + 1) * accesses]]) for k in range(v)]
    od = replay_session(n_pages, visits)
    pr = replay_session(n_pages, visits, select=select_all)
    return (od.pages_at_visit_end, od.held_at_end, od.counters["fault_moves"],
            od.counters["trail_hops"], pr.counters["handover_moves"], pr.counters["trail_hops"])
