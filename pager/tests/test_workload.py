import numpy as np
import pytest
from scipy import stats

import pager


def test_zipf_popularity_is_a_over_r_to_the_s_and_uniform_at_s_zero():
    q = pager.zipf_probabilities(100, 1.2)
    assert q.sum() == pytest.approx(1.0, abs=1e-12)
    ranks = np.arange(1, 101)
    np.testing.assert_allclose(q[0] / q, ranks**1.2, rtol=1e-12)
    np.testing.assert_allclose(pager.zipf_probabilities(7, 0.0), np.full(7, 1 / 7), rtol=1e-12)


@pytest.mark.parametrize("n_pages, s", [(1000, 1.0), (37, 0.0), (500, 1.2), (3, 0.8)])
def test_the_alias_table_realises_the_zipf_probabilities(n_pages, s):
    sampler = pager.ZipfSampler.zipf(n_pages, s)
    # 32-bit integer coins: off by at most one part in 2**32 per column.
    np.testing.assert_allclose(sampler.realised_probabilities(), sampler.prob,
                               rtol=0, atol=n_pages * 2.0**-32)


def test_sampled_pages_follow_the_zipf_law_by_a_chi_square_test():
    params = pager.PaperParams(n_pages=50, accesses=2000, handovers=4, zipf_s=1.0)
    trace = pager.paper_trace(params, 40, np.random.default_rng(11))
    counts = np.bincount(trace.access_page, minlength=50)
    expected = params.sampler().prob * counts.sum()
    result = stats.chisquare(counts, expected)
    assert result.pvalue > 1e-4, result


def test_paper_trace_pages_equal_an_independent_scalar_stream(ref):
    params = pager.PaperParams(n_pages=100, accesses=30, handovers=2, zipf_s=1.0)
    trace = pager.paper_trace(params, 4, np.random.default_rng(5))
    key = int(pager.paper_key(np.random.default_rng(5)))
    sampler = params.sampler()
    for s in range(4):
        want = ref.paper_pages(key, s, 90, sampler.threshold, sampler.alias)
        got = trace.access_page[s * 90:(s + 1) * 90].tolist()
        assert got == want


def test_a_session_keeps_its_accesses_whatever_runs_beside_it():
    params = pager.PaperParams(n_pages=64, accesses=10, handovers=3, zipf_s=0.8)
    many = pager.paper_trace(params, 6, np.random.default_rng(3))
    one = pager.paper_trace(params, 1, np.random.default_rng(3), first_session=4)
    np.testing.assert_array_equal(one.access_page, many.access_page[4 * 40:5 * 40])


def test_paper_trace_maps_visit_i_to_satellite_i_with_increasing_times():
    params = pager.PaperParams(n_pages=10, accesses=3, handovers=5)
    trace = pager.paper_trace(params, 2, np.random.default_rng(0))
    np.testing.assert_array_equal(trace.visit_satellite, np.tile(np.arange(6), 2))
    first_access = trace.access_time_ns[trace.access_offsets[:-1]]
    np.testing.assert_array_equal(trace.visit_start_ns, first_access)
    assert np.all(np.diff(trace.access_time_ns[:18]) == pager.PAPER_ACCESS_INTERVAL_NS)


@pytest.mark.parametrize("kwargs, words", [
    ({"n_pages": 0}, ["n_pages", "0"]),
    ({"accesses": -5}, ["accesses", "-5"]),
    ({"handovers": -1}, ["handovers", "-1"]),
    ({"zipf_s": -0.5}, ["exponent", "-0.5"]),
    ({"zipf_s": "many"}, ["exponent", "many"]),
    ({"n_pages": 2.5}, ["n_pages", "2.5"]),
])
def test_bad_workload_parameters_are_rejected_naming_the_value(kwargs, words):
    with pytest.raises(ValueError) as info:
        pager.PaperParams(**kwargs)
    for word in words:
        assert word in str(info.value)


def test_session_pages_are_each_sessions_own_stream_in_any_grouping(ref):
    sampler = pager.ZipfSampler.zipf(40, 1.0)
    key = int(pager.paper_key(np.random.default_rng(3)))
    sessions, counts = np.array([7, 2, 1000, 3]), np.array([5, 0, 9, 4])
    got = sampler.session_pages(key, sessions, counts)
    want = sum((ref.paper_pages(key, int(s), int(c), sampler.threshold, sampler.alias)
                for s, c in zip(sessions, counts, strict=True)), [])
    assert got.tolist() == want
    # one session at a time gives the same draws
    alone = np.concatenate([sampler.session_pages(key, [s], [c])
                            for s, c in zip(sessions, counts, strict=True)])
    np.testing.assert_array_equal(alone, got)
    with pytest.raises(ValueError, match="count is negative: -1"):
        sampler.session_pages(key, [1], [-1])


def test_a_trail_placed_on_satellites_replays_to_run_papers_counts_exactly():
    params = pager.PaperParams(n_pages=80, accesses=30, handovers=5, zipf_s=1.0)
    key = pager.paper_key(np.random.default_rng(21))
    want = pager.run_paper(params, 24, np.random.default_rng(21))
    # two chunks of sessions, on satellites 30..35, starting at scattered times
    parts = [pager.trail_trace(params, key, n, first_session=first, satellites=np.arange(30, 36),
                               start_ns=np.arange(n) * 10**12, visit_ns=240 * 10**9)
             for first, n in ((0, 10), (10, 14))]
    got = pager.paper_counts(parts[0]).merge(pager.paper_counts(parts[1]))
    for name in pager.PAPER_QUANTITIES:
        np.testing.assert_array_equal(getattr(got, name).total, getattr(want, name).total)
    tr = parts[1]
    assert tr.visit_satellite[:6].tolist() == list(range(30, 36))
    assert tr.visit_start_ns[7] == 10**12 + 240 * 10**9
    assert tr.access_time_ns[tr.access_offsets[7] + 1] == tr.visit_start_ns[7] + 8 * 10**9
