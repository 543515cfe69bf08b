"""Satellite failures and replication (docs/faults.md): pager.FaultModel against a plain
per-event Python model of ownership, holders and failures, and the figures of
`satpage compare` with a [faults] section."""

from __future__ import annotations

import heapq
import json
import subprocess
import sys

import numpy as np
import pytest

import pager
from pager import EventKind
from satpage.scenario import load_scenario, shipped_scenario, with_overrides
from satpage.simulate import failure_schedule, prepare, run_scenario

NEVER = pager.NEVER_NS
OWNERSHIP = {EventKind.CREATE, EventKind.FAULT, EventKind.HANDOVER, EventKind.PUSH}


# -- the plain model -------------------------------------------------------------------------

class PlainRing:
    """Planes of ``per_plane`` satellites, index p * per_plane + k."""

    def __init__(self, planes: int, per_plane: int) -> None:
        self.planes, self.per = planes, per_plane

    def behind(self, s: int) -> int:
        p, k = divmod(s, self.per)
        return p * self.per + (k - 1) % self.per

    def hops(self, a: int, b: int) -> int:
        d = (a % self.per - b % self.per) % self.per
        return min(d, self.per - d)


def plain_down(fails: list[tuple[int, int, int]], s: int, t: int) -> bool:
    return any(sat == s and f <= t < r for sat, f, r in fails)


def plain_page(stores, end, writes, fails, ring, r, recovery, extra_of):
    """One page of one session, event by event. ``stores``: [(time, satellite, visit)]
    in log order; ``writes``: times; ``extra_of(visit)``: replicate-next's next server or
    None. Returns (lost, copies, hops, recopies, rehops)."""
    lost = copies = hops = recopies = rehops = 0
    # a store to the satellite that already owns the page is no store
    ivs = []
    for t, s, v in stores:
        if ivs:
            t = max(t, ivs[-1][0])
            if s == ivs[-1][1]:
                ivs[-1] = (ivs[-1][0], s, v)
                continue
        ivs.append((t, s, v))
    for i, (t0, s, v) in enumerate(ivs):
        t1 = ivs[i + 1][0] if i + 1 < len(ivs) else end
        holders = []  # [satellite, is_ring]
        c, tail = s, s
        for _ in range(ring.per):
            if len(holders) == r:
                break
            if not plain_down(fails, c, t0):
                holders.append([c, True])
            tail = c
            c = ring.behind(c)
        x = extra_of(v)
        if x is not None and not plain_down(fails, x, t0) and x not in [h[0] for h in holders]:
            holders.append([x, False])
        if not holders:
            lost = 1
            continue
        ringh = [h[0] for h in holders if h[1]]
        copies += len(ringh) - 1
        hops += sum(ring.hops(ringh[0], h) for h in ringh[1:])
        # time-ordered events: (time, order, kind, data); writes, then failures, then
        # replacements at one instant
        q = [(tw, 0, "w", None) for tw in writes if t0 <= tw < t1]
        q += [(f, 1, "f", sat) for sat, f, _ in fails if t0 <= f < t1]
        heapq.heapify(q)
        while q:
            te, _, kind, data = heapq.heappop(q)
            if kind == "w":
                ringh = [h[0] for h in holders if h[1]]
                copies += max(len(ringh) - 1, 0)
                hops += sum(ring.hops(ringh[0], h) for h in ringh[1:])
            elif kind == "f":
                hit = [h for h in holders if h[0] == data]
                if not hit:
                    continue
                holders.remove(hit[0])
                if not holders:
                    lost = 1
                    break
                if hit[0][1] and r >= 2 and te + recovery < t1:
                    heapq.heappush(q, (te + recovery, 2, "r", None))
            else:
                c = ring.behind(tail)
                chosen = None
                for _ in range(ring.per):
                    if c not in [h[0] for h in holders] and not plain_down(fails, c, te):
                        chosen = c
                        break
                    c = ring.behind(c)
                ringh = [h[0] for h in holders if h[1]]
                if chosen is None or not ringh:
                    continue
                recopies += 1
                rehops += min(ring.hops(h, chosen) for h in ringh)
                holders.append([chosen, True])
                tail = chosen
                # the newcomer's own later failures count from now on
    return lost, copies, hops, recopies, rehops


def plain_outcome(trace, events, fails, ring, r, recovery, session_end, writes,
                  next_server=False):
    """Per-session sums of the plain model over every page of every session."""
    n = trace.n_sessions
    vo = trace.visit_offsets
    vsat = trace.visit_satellite
    pages: dict[tuple[int, int], list] = {}
    for e in events:
        if EventKind(int(e["kind"])) in OWNERSHIP and e["to_visit"] >= 0:
            pages.setdefault((int(e["session"]), int(e["page"])), []).append(
                (int(e["time_ns"]), int(vsat[e["to_visit"]]), int(e["to_visit"])))
    wt: dict[tuple[int, int], list[int]] = {}
    first_write: dict[tuple[int, int], bool] = {}  # the page's first access is a write
    for s in range(n):
        for v in range(vo[s], vo[s + 1]):
            for a in range(trace.access_offsets[v], trace.access_offsets[v + 1]):
                key = (s, int(trace.access_page[a]))
                first_write.setdefault(key, bool(writes[a]))
                if writes[a]:
                    wt.setdefault(key, []).append(int(trace.access_time_ns[a]))
    created = {(int(e["session"]), int(e["page"])) for e in events
               if EventKind(int(e["kind"])) == EventKind.CREATE}

    def extra_of_session(s):
        def f(v):
            if not next_server or v + 1 >= vo[s + 1]:
                return None
            return int(vsat[v + 1])
        return f

    out = np.zeros((n, 5), np.int64)
    for (s, p), stores in pages.items():
        w = wt.get((s, p), [])
        if (s, p) in created and first_write.get((s, p)):
            w = w[1:]  # the creating write is stored with the creation: one copy
        res = plain_page(stores, int(session_end[s]), w, fails, ring, r,
                         recovery, extra_of_session(s))
        out[s] += res
    return out


# -- small scenarios -------------------------------------------------------------------------

def small_trace(rng, n_sessions=6, planes=2, per_plane=6, n_pages=12, visits=4):
    vo = np.arange(n_sessions + 1) * visits
    v = n_sessions * visits
    sat = np.empty(v, np.int32)
    start = np.empty(v, np.int64)
    acc_off = [0]
    pages, times = [], []
    for s in range(n_sessions):
        p = rng.integers(planes)
        k = rng.integers(per_plane)
        t = int(rng.integers(0, 1000))
        for j in range(visits):
            g = s * visits + j
            sat[g] = p * per_plane + (k + j) % per_plane
            start[g] = t
            na = int(rng.integers(0, 8))
            ts = np.sort(rng.integers(t, t + 100, size=na))
            pages.extend(rng.integers(0, n_pages, size=na).tolist())
            times.extend(ts.tolist())
            acc_off.append(acc_off[-1] + na)
            t += 100
    trace = pager.Trace(n_pages, vo.astype(np.int64), sat, start,
                        np.array(acc_off, np.int64), np.array(pages, np.int32),
                        np.array(times, np.int64))
    end = start[vo[1:] - 1] + 100
    return trace, end


def random_failures(rng, n_sats, n, horizon, repair):
    sats = rng.choice(n_sats, size=n, replace=False)
    fail = rng.integers(0, horizon, size=n)
    rep = fail + repair if repair else np.full(n, NEVER)
    return pager.FailureSchedule(sats.astype(np.int32), fail.astype(np.int64),
                                 rep.astype(np.int64))


STRATS = [pager.OnDemand(), pager.Proactive(), pager.PushAhead(lead_ns=30),
          pager.HotK(k=3), pager.ReplicateNext()]


def _check_against_plain(seed: int, r: int, recovery: int, n_fail: int) -> int:
    """FaultModel == the plain model for every strategy; returns the pages lost."""
    rng = np.random.default_rng(seed)
    planes, per = 2, 6
    trace, end = small_trace(rng, planes=planes, per_plane=per)
    ring = pager.ReplicaRing.from_planes(np.repeat(np.arange(planes), per),
                                         np.tile(np.arange(per), planes))
    sched = random_failures(rng, planes * per, n_fail, 1500, int(rng.choice([0, 40, 300])))
    fails = list(zip(sched.satellite.tolist(), sched.fail_ns.tolist(),
                     sched.repair_ns.tolist(), strict=True))
    writes = pager.write_mask(trace, float(rng.choice([0.0, 0.5, 1.0])))
    fm = pager.FaultModel(trace, sched, ring, r, end, recovery_ns=recovery, writes=writes)
    lost = 0
    for strat in STRATS:
        rl = pager.replay(trace, strat, events=True, log_creations=True)
        ev = rl.events
        nxt = pager.network_use(strat).replicate_next
        if nxt:
            ev = pager.replicate_next_log(trace, ev)
        got = fm.apply(ev, next_server_holds=nxt)
        want = plain_outcome(trace, ev, fails, PlainRing(planes, per), r, recovery, end,
                             writes, next_server=nxt)
        assert got.pages_lost.tolist() == want[:, 0].tolist(), strat.name
        assert got.replica_copies.tolist() == want[:, 1].tolist(), strat.name
        assert got.replica_hops.tolist() == want[:, 2].tolist(), strat.name
        assert got.rereplica_copies.tolist() == want[:, 3].tolist(), strat.name
        assert got.rereplica_hops.tolist() == want[:, 4].tolist(), strat.name
        lost += int(got.pages_lost.sum())
    return lost


@pytest.mark.parametrize("seed", range(16))
def test_fault_model_matches_a_plain_per_event_model(seed):
    rng = np.random.default_rng(1000 + seed)
    _check_against_plain(seed, int(rng.integers(1, 4)), int(rng.choice([0, 50, 400])),
                         int(rng.integers(2, 11)))


def test_fault_model_matches_the_plain_model_when_replicated_pages_are_lost():
    # most satellites fail, re-replication is slow: R = 2 and 3 lose pages too
    lost = [_check_against_plain(seed, r, 400, 10) for seed in range(4) for r in (2, 3)]
    assert sum(lost) > 0


def test_r1_loses_exactly_the_pages_the_failed_satellite_owns_at_failure_time():
    rng = np.random.default_rng(7)
    planes, per = 2, 6
    trace, end = small_trace(rng, n_sessions=20, planes=planes, per_plane=per)
    ring = pager.ReplicaRing.from_planes(np.repeat(np.arange(planes), per),
                                         np.tile(np.arange(per), planes))
    for victim, t_fail in [(0, 350), (3, 700), (7, 120), (11, 999)]:
        sched = pager.FailureSchedule(np.array([victim], np.int32),
                                      np.array([t_fail], np.int64), np.array([NEVER]))
        fm = pager.FaultModel(trace, sched, ring, 1, end)
        rl = pager.replay(trace, pager.OnDemand(), events=True, log_creations=True)
        got = fm.apply(rl.events)
        # owners at t_fail, straight from the log: the last store at or before it
        owner: dict[tuple[int, int], int] = {}
        for e in rl.events:
            if e["time_ns"] < t_fail and e["to_visit"] >= 0:
                owner[(int(e["session"]), int(e["page"]))] = int(
                    trace.visit_satellite[e["to_visit"]])
        want = np.zeros(trace.n_sessions, np.int64)
        for (s, _), sat in owner.items():
            if sat == victim and t_fail < end[s]:
                want[s] += 1
        # pages stored at the victim after it died are stored at its stand-in instead
        assert got.pages_lost.tolist() == want.tolist()


def test_r2_survives_every_single_failure():
    rng = np.random.default_rng(3)
    planes, per = 2, 6
    trace, end = small_trace(rng, n_sessions=20, planes=planes, per_plane=per)
    ring = pager.ReplicaRing.from_planes(np.repeat(np.arange(planes), per),
                                         np.tile(np.arange(per), planes))
    rl = pager.replay(trace, pager.OnDemand(), events=True, log_creations=True)
    for victim in range(planes * per):
        for t_fail in (50, 400, 900):
            sched = pager.FailureSchedule(np.array([victim], np.int32),
                                          np.array([t_fail], np.int64), np.array([NEVER]))
            for rec in (0, 30):
                got = pager.FaultModel(trace, sched, ring, 2, end, recovery_ns=rec
                                       ).apply(rl.events)
                assert got.pages_lost.sum() == 0
                assert got.table_lost.sum() == 0
            one = pager.FaultModel(trace, sched, ring, 1, end).apply(rl.events)
            assert got.replica_hops.sum() > 0 and one.replica_hops.sum() == 0


def test_holders_failing_together_lose_the_page_even_with_r2():
    # one session, one page created on satellite 2 at t=10; satellites 2 and 1 (its
    # replica) fail at the same instant
    trace = pager.Trace(1, np.array([0, 1]), np.array([2], np.int32), np.array([0]),
                        np.array([0, 1]), np.array([0], np.int32), np.array([10]))
    ring = pager.ReplicaRing.from_planes(np.zeros(6, np.int64), np.arange(6))
    rl = pager.replay(trace, pager.OnDemand(), events=True, log_creations=True)
    both = pager.FailureSchedule(np.array([2, 1], np.int32), np.array([50, 50]),
                                 np.array([NEVER, NEVER]))
    apart = pager.FailureSchedule(np.array([2, 1], np.int32), np.array([50, 80]),
                                  np.array([NEVER, NEVER]))
    end = np.array([100])
    assert pager.FaultModel(trace, both, ring, 2, end).apply(rl.events).pages_lost[0] == 1
    # apart by more than the recovery time: re-replicated in between (at 60 to satellite
    # 0 from 1, one hop; at 90 to satellite 5 from 0, one hop)
    ok = pager.FaultModel(trace, apart, ring, 2, end, recovery_ns=10).apply(rl.events)
    assert ok.pages_lost[0] == 0
    assert (ok.rereplica_copies[0], ok.rereplica_hops[0]) == (2, 2)
    slow = pager.FaultModel(trace, apart, ring, 2, end, recovery_ns=40).apply(rl.events)
    assert slow.pages_lost[0] == 1


def test_ring_places_replicas_behind_the_owner_in_its_own_plane_per_shell():
    sc = load_scenario(shipped_scenario("default"))
    w = prepare(with_overrides(sc, {"sessions.count": 10}))
    ring = w.ring
    # walker-star:150/10/1: satellite p*15 + k has p*15 + (k-1) % 15 behind it
    s = np.arange(150)
    assert np.array_equal(ring.behind, (s // 15) * 15 + (s % 15 - 1) % 15)
    assert ring.ring_hops(np.array([0, 0, 0]), np.array([1, 7, 14])).tolist() == [1, 7, 1]


def test_failure_schedule_is_seeded_and_validated():
    sc = load_scenario(shipped_scenario("default"))
    a = failure_schedule(with_overrides(sc, {"faults.count": 12}), 150)
    b = failure_schedule(with_overrides(sc, {"faults.count": 12}), 150)
    assert np.array_equal(a.satellite, b.satellite) and np.array_equal(a.fail_ns, b.fail_ns)
    assert np.unique(a.satellite).size == 12
    assert a.fail_ns.max() < sc.duration_ns
    r = failure_schedule(with_overrides(sc, {"faults.rate_per_sat_day": 2.0,
                                             "faults.repair_after_s": 600.0}), 150)
    # 150 satellites x 0.25 day x 2 per day, a little less for the downtime
    assert 50 < r.n_failures < 100
    assert np.all(r.repair_ns - r.fail_ns == 600 * 10**9)
    with pytest.raises(ValueError, match="faults.count = 200"):
        failure_schedule(with_overrides(sc, {"faults.count": 200}), 150)
    for key, value in [("faults.replicas", 0), ("faults.write_share", 1.5),
                       ("faults.rate_per_sat_day", -1.0), ("faults.recovery_s", -2.0)]:
        with pytest.raises(ValueError, match=f"{key} = {value!r}"):
            with_overrides(sc, {key: value})
    with pytest.raises(ValueError, match="not both"):
        with_overrides(sc, {"faults.count": 3, "faults.rate_per_sat_day": 1.0})


# -- the constellation run -------------------------------------------------------------------

def _small(**faults):
    sc = load_scenario(shipped_scenario("default"))
    over = {"sessions.count": 120, "time.duration_s": 7200.0, "run.chunk_sessions": 60,
            "strategies.compare": ["proactive", "on-demand", "replicate-next",
                                   "ground-store"]}
    over.update({f"faults.{k}": v for k, v in faults.items()})
    return with_overrides(sc, over)


FAULT_KEYS = ("pages_lost", "sessions_hit", "page_tables_lost", "replication_page_hops",
              "replication_bytes", "replication_copies", "rereplication_copies",
              "rereplication_page_hops")


@pytest.fixture(scope="module")
def runs():
    return {"base": run_scenario(_small()).summaries(),
            "one": run_scenario(_small(count=25)).summaries(),
            "two": run_scenario(_small(count=25, replicas=2)).summaries()}


def test_failures_leave_every_other_figure_unchanged_and_r1_replicates_nothing(runs):
    for name, s in runs["base"].items():
        assert all(s[k] == 0 for k in FAULT_KEYS), name
        for other in ("one", "two"):
            o = runs[other][name]
            assert {k: v for k, v in o.items() if k not in FAULT_KEYS} == {
                k: v for k, v in s.items() if k not in FAULT_KEYS}, (other, name)
        assert runs["one"][name]["replication_page_hops"] == 0


def test_compare_with_failures_loses_pages_at_r1_and_none_at_r2(runs):
    one, two = runs["one"], runs["two"]
    assert one["on-demand"]["pages_lost"] > 0
    assert one["on-demand"]["sessions_hit"] > 0
    assert one["ground-store"]["pages_lost"] == 0
    for name, s in two.items():
        assert s["pages_lost"] == 0 and s["sessions_hit"] == 0, name
    assert two["on-demand"]["replication_page_hops"] > 0
    assert two["ground-store"]["replication_page_hops"] == 0
    assert two["on-demand"]["replication_bytes"] == 4096 * two["on-demand"][
        "replication_page_hops"]
    # replicate-next's next server holds every page too: fewer losses than proactive
    assert one["replicate-next"]["pages_lost"] <= one["proactive"]["pages_lost"]


def test_failure_schedule_file_round_trips(tmp_path):
    from satpage.faults_io import read_failure_schedule, write_failure_schedule

    sc = _small(count=5, repair_after_s=300.0)
    w = prepare(sc)
    path = tmp_path / "f.json"
    write_failure_schedule(path, sc, w.failures, {"on-demand": {"pages_lost": 3}}, "v")
    doc = json.loads(path.read_text())
    assert doc["format"] == "satpage-failures/1"
    back = read_failure_schedule(path)
    assert np.array_equal(back.satellite, w.failures.satellite)
    assert np.array_equal(back.fail_ns, w.failures.fail_ns)
    assert np.array_equal(back.repair_ns, w.failures.repair_ns)
    # the whole scenario comes back (the chaos replay rebuilds its sessions from it)
    from satpage.faults_io import read_failure_scenario
    assert read_failure_scenario(path).to_dict() == sc.to_dict()
    doc.pop("config")
    path.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="no scenario config"):
        read_failure_scenario(path)


@pytest.mark.integration
def test_compare_cli_refuses_bad_fault_keys_and_writes_the_schedule(tmp_path):
    from typer.testing import CliRunner

    from satpage.cli import app

    small = ["--sessions", "60", "--set", "time.duration_s=3600", "--set",
             "run.chunk_sessions=30", "--strategies", "on-demand,proactive"]
    for bad, why in [("faults.replicas=0", "faults.replicas = 0"),
                     ("faults.count=151", "faults.count = 151"),
                     ("faults.write_share=-0.5", "faults.write_share = -0.5")]:
        r = subprocess.run([sys.executable, "-m", "satpage.cli", "compare", *small, "--set",
                            bad], capture_output=True, text=True, timeout=600)
        assert r.returncode == 2, r.stderr
        assert "error:" in r.stderr and why in " ".join(r.stderr.split())
    path = tmp_path / "sched.json"
    r = CliRunner().invoke(app, ["compare", "faults", *small, "--json",
                                 "--failure-schedule", str(path), "--out",
                                 str(tmp_path / "run"), "--view-sessions", "0"])
    assert r.exit_code == 0, r.output
    result = json.loads(r.stdout)
    run = tmp_path / "run"
    assert json.loads((run / "failures.json").read_text()) == json.loads(path.read_text())
    md = (run / "report.md").read_text()
    assert "| pages lost |" in md and "- failures: 10 (10 satellites, permanent)" in md
    assert "pages_lost" in (run / "costs.csv").read_text().splitlines()[0]
    assert (run / "faults.png").stat().st_size > 10_000
    assert 'alt="faults"' in (run / "report.html").read_text()
    doc = json.loads(path.read_text())
    assert len(doc["failures"]) == result["faults"]["failures"] == 10
    assert doc["engine"]["on-demand"]["pages_lost"] == result["strategies"]["on-demand"][
        "pages_lost"]
    assert [f["fail_ns"] for f in doc["failures"]] == sorted(f["fail_ns"]
                                                            for f in doc["failures"])


def test_sweep_charts_pages_lost_against_protection_cost(tmp_path):
    from typer.testing import CliRunner

    from satpage.cli import app

    r = CliRunner().invoke(app, [
        "sweep", "faults", "--sessions", "40", "--set", "time.duration_s=3600",
        "--set", "run.chunk_sessions=40", "--strategies", "on-demand,proactive",
        "--set", "faults.count=0", "--vary", "faults.rate_per_sat_day=4,16",
        "--vary", "faults.replicas=1,2", "--out", str(tmp_path), "--json"])
    assert r.exit_code == 0, r.output
    rows = json.loads(r.stdout)["rows"]
    assert (tmp_path / "sweep_faults.png").stat().st_size > 10_000
    by = {(x["faults.rate_per_sat_day"], x["faults.replicas"], x["strategy"]): x for x in rows}
    for rate in (4, 16):
        for s in ("on-demand", "proactive"):
            assert by[(rate, 1, s)]["replication_page_hops"] == 0
            assert by[(rate, 2, s)]["replication_page_hops"] > 0
            assert by[(rate, 2, s)]["pages_lost"] <= by[(rate, 1, s)]["pages_lost"]
    assert by[(16, 1, "on-demand")]["pages_lost"] > 0
