"""The strategies of issue 20 on pager's side: their page tables, replicate-next's event
log against a plain per-event implementation, and the container-migration downtime
against the published CRIU measurements."""

import csv
from pathlib import Path

import numpy as np
import pytest

import pager
from pager import EventKind, Trace
from pager.strategies.whole_object import MIGRATION_DATA_FILE, _data_dir

KINDS = {k.value: k for k in EventKind}


def random_trace(seed=0, n_sessions=30, n_pages=50):
    rng = np.random.default_rng(seed)
    nv = rng.integers(1, 6, n_sessions)
    vo = np.concatenate([[0], np.cumsum(nv)])
    v = int(vo[-1])
    sat = (np.cumsum(rng.integers(1, 20, v)) % 20).astype(np.int32)  # never twice in a row
    start = np.concatenate([s * 10**13 + np.arange(k) * 10**11 for s, k in enumerate(nv)])
    na = rng.integers(0, 40, v)
    ao = np.concatenate([[0], np.cumsum(na)])
    q = np.arange(1, n_pages + 1, dtype=float) ** -1.0
    page = rng.choice(n_pages, size=int(ao[-1]), p=q / q.sum()).astype(np.int32)
    visit_of = np.repeat(np.arange(v), na)
    off = rng.integers(1, 10**11, ao[-1])
    t = np.concatenate([start[i] + np.sort(off[ao[i]:ao[i + 1]]) for i in range(v)]) \
        if v else np.zeros(0)
    assert np.all(np.repeat(start, na) <= t) and visit_of.size == t.size
    return Trace(n_pages, vo, sat, start.astype(np.int64), ao, page, t.astype(np.int64))


def plain_replicate_next(tr: Trace) -> list[tuple]:
    """Replicate-next written from its definition, one Python step per access."""
    out = []
    for s in range(tr.n_sessions):
        v0, v1 = int(tr.visit_offsets[s]), int(tr.visit_offsets[s + 1])
        exists: set[int] = set()
        for v in range(v0, v1):
            has_next = v + 1 < v1
            if v > v0:          # the replica becomes the primary: ownership only
                for p in sorted(exists):
                    out.append((s, p, v - 1, v, int(tr.visit_start_ns[v]), 1))
            if has_next:
                for p in sorted(exists):
                    out.append((s, p, v, v + 1, int(tr.visit_start_ns[v]), 5))
            for a in range(int(tr.access_offsets[v]), int(tr.access_offsets[v + 1])):
                p, t = int(tr.access_page[a]), int(tr.access_time_ns[a])
                if p not in exists:
                    exists.add(p)
                    out.append((s, p, -1, v, t, 4))
                if has_next:
                    out.append((s, p, v, v + 1, t, 5))
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_replicate_next_log_matches_a_plain_per_access_implementation(seed):
    tr = random_trace(seed)
    r = pager.replay(tr, pager.ReplicateNext(), events=True, log_creations=True)
    got = pager.replicate_next_log(tr, r.events)
    rows = [tuple(int(x) for x in e) for e in got[["session", "page", "from_visit", "to_visit",
                                                 "time_ns", "kind"]]]
    assert rows == plain_replicate_next(tr)
    assert not (got["kind"] == EventKind.FAULT).any()


def test_replicate_next_never_faults_and_sends_one_copy_per_access_before_the_last_visit():
    tr = random_trace(3)
    r = pager.replay(tr, pager.ReplicateNext(), events=True, log_creations=True)
    assert r.total("fault_moves") == 0
    log_ = pager.replicate_next_log(tr, r.events)
    last = tr.visit_offsets[1:] - 1
    na = np.diff(tr.access_offsets)
    not_last = np.ones(tr.n_visits, bool)
    not_last[last[np.diff(tr.visit_offsets) > 0]] = False
    writes = log_[(log_["kind"] == EventKind.REPLICA)
                  & (log_["time_ns"] != tr.visit_start_ns[log_["from_visit"]])]
    # accesses at exactly the visit start would be miscounted as seeds: the trace has none
    assert writes.size == na[not_last].sum()


@pytest.mark.parametrize("cls, base", [
    (pager.ContainerMigration, pager.Proactive),
    (pager.Multipath, pager.OnDemand),
    (pager.Custody, pager.OnDemand),
])
def test_network_strategies_replay_the_page_table_of_their_paging_base(cls, base):
    tr = random_trace(4)
    a = pager.replay(tr, cls(), events=True)
    b = pager.replay(tr, base(), events=True)
    assert np.array_equal(a.events, b.events)
    assert np.array_equal(a.counters, b.counters)


def test_idle_link_replays_push_ahead_with_the_same_lead():
    from pager.strategies import PushAhead
    tr = random_trace(5)
    a = pager.replay(tr, pager.IdleLink(recent_visits=2, lead_ns=10**9), events=True)
    b = pager.replay(tr, PushAhead(recent_visits=2, lead_ns=10**9), events=True)
    assert np.array_equal(a.events, b.events)
    assert a.events.size and (a.events["kind"] == EventKind.PUSH).any()


def test_every_strategy_states_its_network_use():
    for s in (pager.OnDemand(), pager.Proactive(), pager.ContainerMigration(),
              pager.ReplicateNext(), pager.Multipath(), pager.Custody(), pager.IdleLink()):
        assert isinstance(s, pager.Strategy)
        assert isinstance(s.network, pager.NetworkUse)
    assert pager.Multipath().network.fault_paths == 2
    assert pager.Custody(cache_pages=7).network.custody_pages == 7
    assert pager.IdleLink(threshold=0.3).network.idle_threshold == 0.3
    assert pager.ContainerMigration().network.blocking_migration


@pytest.mark.parametrize("bad", [
    lambda: pager.Custody(cache_pages=0),
    lambda: pager.IdleLink(threshold=0.0),
    lambda: pager.IdleLink(recent_visits=0),
    lambda: pager.NetworkUse(fault_paths=3),
])
def test_bad_strategy_parameters_are_errors_that_quote_the_value(bad):
    with pytest.raises(ValueError, match=r"got"):
        bad()


def _published_points():
    path = _data_dir() / MIGRATION_DATA_FILE
    with path.open() as fh:
        return list(csv.DictReader(line for line in fh if not line.startswith("#")))


def test_a_100_mb_object_migrates_within_30_percent_of_the_published_criu_downtime():
    """25,600 pages of 4 KiB = 100 MiB, the Redis instance size of the measurement
    (stano45/celestial-container-migration, data/migration-100.csv: 10 migrations)."""
    model = pager.MigrationModel.default()
    measured_s = next(float(r["downtime_mean_s"]) for r in _published_points()
                      if r["instance_size_mib"] == "100")
    got_s = float(model.downtime_ms(25_600 * 4096)) / 1e3
    assert abs(got_s - measured_s) <= 0.30 * measured_s, (got_s, measured_s)


def test_the_migration_fit_passes_within_15_percent_of_every_published_size_but_the_empty_one():
    model = pager.MigrationModel.default()
    for r in _published_points():
        size, measured = float(r["state_bytes"]), float(r["downtime_mean_s"])
        if size == 0:
            continue  # the empty container: a fixed cost the line does not need to hit
        got = float(model.downtime_ms(size)) / 1e3
        assert abs(got - measured) <= 0.15 * measured, (r["instance_size_mib"], got, measured)


def test_the_migration_fit_is_least_squares(tmp_path: Path):
    p = tmp_path / "points.csv"
    p.write_text("# made up\nstate_bytes,downtime_mean_s\n0,1\n1048576,3\n2097152,5\n")
    m = pager.MigrationModel.from_csv(p)
    assert m.intercept_s == pytest.approx(1.0) and m.slope_s_per_mib == pytest.approx(2.0)
    with pytest.raises(ValueError, match="two distinct sizes"):
        pager.MigrationModel.fit(np.array([1.0]), np.array([2.0]))
    with pytest.raises(ValueError, match="negative"):
        m.downtime_ms(-1)
