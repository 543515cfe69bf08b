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
