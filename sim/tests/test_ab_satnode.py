"""bench/ab_satnode.py's paired comparison: the sign test against scipy's exact
binomial test, the per-round ratios against hand-computed ones, and a report
that reads at 80 columns."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from scipy.stats import binomtest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from ab_satnode import paired, print_report, sign_test_p  # noqa: E402


@pytest.mark.parametrize(("wins", "losses"), [(0, 0), (6, 0), (0, 6), (7, 5), (11, 3), (2, 12), (9, 9), (14, 1)])
def test_the_sign_test_is_the_exact_two_sided_binomial_test(wins, losses):
    want = 1.0 if wins + losses == 0 else binomtest(wins, wins + losses, 0.5).pvalue
    assert sign_test_p(wins, losses) == pytest.approx(want, rel=1e-12)


def test_rounds_are_compared_in_pairs_and_ties_left_out():
    a = [0.30, 0.40, 0.20, 0.25, 0.50]
    b = [0.33, 0.36, 0.22, 0.25, 0.55]  # B/A: 1.1, 0.9, 1.1, 1.0, 1.1
    got = paired(a, b)
    assert got["b_over_a_median"] == pytest.approx(1.1)
    assert got["b_over_a_range"] == pytest.approx([0.9, 1.1])
    assert (got["b_higher"], got["b_lower"], got["rounds"]) == (3, 1, 5)
    assert got["sign_test_p"] == pytest.approx(0.625)  # 2 * (1 + 4) / 16
    assert (got["a_median"], got["b_median"]) == (0.30, 0.33)
    with pytest.raises(ValueError, match="3 of A against 2 of B"):
        paired([1, 2, 3], [1, 2])


def test_the_report_reads_at_80_columns(capsys):
    side = {"bare_per_s": 16_000.0, "fault_per_s": 5_600.0, "ratio": 0.35}
    rounds = [{"A": side, "B": side | {"fault_per_s": 6_160.0, "ratio": 0.385}}] * 3
    print_report(rounds, paired([0.35] * 3, [0.385] * 3), ("/tmp/a", "/tmp/b"))
    lines = capsys.readouterr().out.splitlines()
    assert max(map(len, lines)) <= 80, [line for line in lines if len(line) > 80]
    assert "1.100" in lines[4] and "6,160" in lines[4]
    assert lines[-1].startswith("B higher in 3 of 3 rounds, lower in 0")
