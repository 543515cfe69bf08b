"""Replay vectors: sessions, a strategy, R and a failure schedule in, the engine's counts
out, for the service to reproduce in-process without Python (the Go test
``ReplayVectors``, services/internal/clustertest/replayvectors_test.go, replays them the
way ``satpage.cluster.replayer`` does). services/testdata/make_replay_vectors.py writes
them; sim/tests/test_replay_vectors.py fails when the file is not what the engine
computes now.

Format ``satpage-replay-vectors/1`` (JSON):

- ``constellation``: the Walker spec of every case; ``table_pages``: page-table entries;
  ``sessions``: one list of sessions every case replays, each ``{"visits": [[satellite,
  start_ns], ...], "accesses": [[page, time_ns, write], ...], "end_ns"}``: accesses in
  order, each time clamped to its visit's start (what the replayer sends), ``write`` 1
  when it goes out as a WritePage in a case with ``writes`` (else every access is a read);
- ``cases``: ``{"name", "strategy": "on-demand" | "proactive" | "push-ahead" (without
  failures only), "replicas", "writes" (true at
  R > 1, so that the replicas are exercised), "failures":
  [[satellite, fail_ns], ...], "want": {...}}``; a failure kills the satellite (memory
  gone) while every session waits at that scenario time, and restarts it empty before
  the next request. ``want`` holds ``pages_lost``, ``sessions_hit`` and
  ``page_tables_lost``, and when nothing is lost (what is lost changes the counts of the
  sessions that lost it) ``replayer.COUNT_KEYS`` summed over the sessions: the failures
  then change no count.
"""

from __future__ import annotations

import json
from os import PathLike
from pathlib import Path

import numpy as np

__all__ = ["FORMAT", "replay_test_vectors", "write_replay_test_vectors"]

FORMAT = "satpage-replay-vectors/1"
#: the scenario the sessions come from (shipped default, kept small)
OVERRIDES = ["sessions.count=6", "workload.pages=40", "workload.access_rate_per_s=0.05",
             "time.duration_s=3600"]
SEED = 28
WRITE_SHARE = 0.25


def _sessions(ct, writes) -> list[dict]:
    tr = ct.trace
    out = []
    for s in range(tr.n_sessions):
        v0, v1 = int(tr.visit_offsets[s]), int(tr.visit_offsets[s + 1])
        a0, a1 = int(tr.access_offsets[v0]), int(tr.access_offsets[v1])
        starts = np.asarray(tr.visit_start_ns[v0:v1], np.int64)
        per = np.diff(np.asarray(tr.access_offsets[v0:v1 + 1], np.int64))
        t = np.maximum(np.asarray(tr.access_time_ns[a0:a1], np.int64), np.repeat(starts, per))
        out.append({"visits": [[int(a), int(b)] for a, b in zip(tr.visit_satellite[v0:v1], starts, strict=True)],
                    "accesses": [[int(p), int(x), int(w)] for p, x, w in
                                 zip(tr.access_page[a0:a1], t, writes[a0:a1], strict=True)],
                    "end_ns": max(int(ct.session_end_ns[s]), int(starts[-1]))})
    return out


def _kills(ct) -> list[list[int]]:
    """Two kills of past servers of the session with the most visits: its first
    satellite in the middle of its third visit, its second in the middle of its last.
    They hold the pages on-demand left behind there (lost at R = 1), and serve no session
    then (a server's death loses its sessions' tables at R = 1, and the engine counts the
    pages such a session would touch later as lost, which the replay cannot see)."""
    tr = ct.trace
    nv = np.diff(tr.visit_offsets)
    s = int(np.argmax(nv))
    v0, v1 = int(tr.visit_offsets[s]), int(tr.visit_offsets[s + 1])
    if v1 - v0 < 4:
        raise ValueError(f"the replay vectors' sessions have at most {v1 - v0} visits, want 4")
    picks = []
    for victim, v in ((v0, v0 + 2), (v0 + 1, v1 - 1)):
        a0, a1 = int(tr.access_offsets[v]), int(tr.access_offsets[v + 1])
        t = int(tr.access_time_ns[(a0 + a1) // 2]) if a1 > a0 else int(tr.visit_start_ns[v])
        picks.append([int(tr.visit_satellite[victim]), t])
    return picks


def replay_test_vectors() -> dict:
    """The vectors (module docstring): every strategy the service runs, at R = 1 and 2,
    without failures and with the kills of ``_kills``."""
    import pager
    from satpage.backend import EngineBackend
    from satpage.cluster.replayer import COUNT_KEYS, STRATEGIES
    from satpage.commands.compare import resolve_scenario
    from satpage.simulate import chunk_trace, prepare

    sc = resolve_scenario(None, OVERRIDES, seed=SEED)
    world = prepare(sc)
    if world.n_chunks != 1:
        raise ValueError(f"replay vectors come from one chunk, the scenario has {world.n_chunks}")
    ct = chunk_trace(world, 0)
    writes = pager.write_mask(ct.trace, WRITE_SHARE)
    kills = _kills(ct)
    strategies = sorted({n for n, code in STRATEGIES.items() if n != "ondemand"})
    cases = []
    for replicas in (1, 2):
        # reads only at R = 1 (movements are the same); writes exercise the replicas at R = 2
        w = writes if replicas > 1 else None
        eb = EngineBackend(world, replicas=replicas, recovery_ns=int(round(sc.faults.recovery_s * 1e9)))
        for name in strategies:
            # push-ahead without failures only: the gateway's failover keeps no record of
            # the pages used during a visit served by a stand-in
            for fail in ([], kills) if name != "push-ahead" else ([],):
                failures = pager.FailureSchedule(
                    np.array([k[0] for k in fail], np.int32), np.array([k[1] for k in fail], np.int64),
                    np.full(len(fail), pager.NEVER_NS, np.int64))
                got = eb.replay(ct, name, failures, writes=w)
                # what is lost changes what the sessions that lost it count
                want = {**({} if any(got.losses.values()) else {k: got.counts[k] for k in COUNT_KEYS}),
                        **got.losses}
                cases.append({"name": f"{name} R={replicas} {'kills' if fail else 'no failures'}",
                              "strategy": name, "replicas": replicas, "writes": w is not None,
                              "failures": fail, "want": want})
    return {"format": FORMAT, "rules": "sim/satpage/replayvectors.py; sim/satpage/cluster/replayer.py",
            "constellation": sc.constellation.spec, "table_pages": int(ct.trace.n_pages),
            "sessions": _sessions(ct, writes), "cases": cases}


def write_replay_test_vectors(path: str | PathLike) -> None:
    """Write ``replay_test_vectors()`` to path (one line per session and case)."""
    doc = replay_test_vectors()
    lines = [f'{{"format": {json.dumps(doc["format"])}, "rules": {json.dumps(doc["rules"])},',
             f' "constellation": {json.dumps(doc["constellation"])}, "table_pages": {doc["table_pages"]},',
             ' "sessions": [']
    lines += [f"  {json.dumps(s, separators=(',', ':'))}{',' if k + 1 < len(doc['sessions']) else ''}"
              for k, s in enumerate(doc["sessions"])]
    lines += [" ],", ' "cases": [']
    lines += [f"  {json.dumps(c)}{',' if k + 1 < len(doc['cases']) else ''}" for k, c in enumerate(doc["cases"])]
    lines += [" ]", "}", ""]
    text = "\n".join(lines)
    json.loads(text)  # one object, as written
    Path(path).write_text(text)
