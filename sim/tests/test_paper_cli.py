import importlib.util
import json
import random
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from typer.testing import CliRunner

import pager
from satpage.cli import app
from satpage.comparator import compare_figures

ROOT = Path(__file__).resolve().parents[2]
SCALARS = ("proactive_moves", "ondemand_moves", "ondemand_hops", "proactive_hops")
VECTORS = ("totals", "last_row")


def _reference():
    name = "pager_tests_reference"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "pager/tests/reference.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def run(*args):
    return CliRunner().invoke(app, ["paper", *args])


def run_json(*args):
    result = run(*args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _independent_runs(n_runs, pages, accesses, handovers, s, seed):
    """Means and standard errors from the scalar implementation with its own stream."""
    ref = _reference()
    rng = random.Random(seed)
    res = [ref.paper_session_independent(rng, pages, accesses, handovers, s)
           for _ in range(n_runs)]
    cols = {
        "totals": np.array([r[0] for r in res], float),
        "last_row": np.array([r[1] for r in res], float),
        "ondemand_moves": np.array([r[2] for r in res], float),
        "ondemand_hops": np.array([r[3] for r in res], float),
        "proactive_moves": np.array([r[4] for r in res], float),
        "proactive_hops": np.array([r[5] for r in res], float),
    }
    return {k: (v.mean(axis=0), v.std(axis=0, ddof=1) / np.sqrt(n_runs)) for k, v in cols.items()}


# Bonferroni over the 2 * (2 * 6 + 4) components compared per parameter set, family 1e-3.
Z = stats.norm.isf(1e-3 / (2 * 32))


@pytest.mark.parametrize("pages, accesses, handovers, s", [
    (1000, 1000, 5, 1.0),  # the paper's parameters
    (200, 50, 3, 0.8),
    (64, 300, 5, 0.0),
])
def test_paper_json_agrees_with_the_exact_expectation_and_an_independent_implementation(
        pages, accesses, handovers, s):
    got = run_json("--runs", "400", "--seed", "3", "--pages", str(pages), "--accesses",
                   str(accesses), "--handovers", str(handovers), "--zipf", str(s))
    assert got["runs"] == 400 and got["seed"] == 3 and got["version"]
    assert len(got["totals"]) == len(got["last_row"]) == handovers + 1
    exact = pager.exact_paper(pager.PaperParams(pages, accesses, handovers, s))
    indep = _independent_runs(60, pages, accesses, handovers, s, seed=17)
    for name in SCALARS + VECTORS:
        mean = np.atleast_1d(np.asarray(got[name], float))
        se = np.maximum(np.atleast_1d(np.asarray(got[f"{name}_ci95"], float)) / 1.966, 1 / 400)
        want = np.atleast_1d(np.asarray(getattr(exact, name), float))
        assert np.all(np.abs(mean - want) < Z * se), (name, mean, want, se)
        other, other_se = (np.atleast_1d(x) for x in indep[name])
        both = np.sqrt(se**2 + np.maximum(other_se, 1 / 60) ** 2)
        assert np.all(np.abs(mean - other) < Z * both), (name, mean, other, both)
    assert got["exact"]["ondemand_moves"] == pytest.approx(exact.ondemand_moves)


def test_exact_prints_the_closed_form_with_no_sampling():
    got = run_json("--exact", "--pages", "300", "--handovers", "4", "--zipf", "1.2")
    exact = pager.exact_paper(pager.PaperParams(300, 1000, 4, 1.2))
    assert got["method"] == "exact" and got["runs"] is None
    np.testing.assert_allclose(got["totals"], exact.totals, rtol=1e-12)
    np.testing.assert_allclose(got["last_row"], exact.last_row, rtol=1e-12)
    for name in SCALARS:
        assert got[name] == pytest.approx(getattr(exact, name), rel=1e-12)
        assert got[f"{name}_ci95"] == 0


def test_the_terminal_shows_table_one_beside_the_papers_numbers_and_both_costs():
    result = run("--runs", "200")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "Table I" in out
    for paper_number in ("336", "806", "310", "2910", "1162", "1697", "40%", "58%"):
        assert paper_number in out, paper_number
    assert "page movements" in out and "page-hops" in out


def test_out_writes_figures_4_and_5_as_png_and_csv(tmp_path):
    result = run("--runs", "300", "--out", str(tmp_path / "figs"))
    assert result.exit_code == 0, result.output
    for name in ("fig4.png", "fig5.png"):
        assert (tmp_path / "figs" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    fig4 = (tmp_path / "figs" / "fig4.csv").read_text().splitlines()
    assert fig4[0].startswith("satellite,pages_mean") and len(fig4) == 1 + 6
    assert fig4[-1].split(",")[-1] == "310"  # the paper's serving satellite at the end
    fig5 = (tmp_path / "figs" / "fig5.csv").read_text().splitlines()
    assert len(fig5) == 1 + 5 + 1 and fig5[-1].endswith("2910,1162,1697")


@pytest.mark.parametrize("args, words", [
    (["--pages", "0"], ["--pages", "0"]),
    (["--pages", "-4"], ["--pages", "-4"]),
    (["--accesses", "0"], ["--accesses", "0"]),
    (["--runs", "0"], ["--runs", "0"]),
    (["--runs", "-1"], ["--runs", "-1"]),
    (["--zipf", "-0.5"], ["--zipf", "-0.5"]),
    (["--zipf", "nan"], ["--zipf", "nan"]),
    (["--pages", "ten"], ["--pages", "ten"]),
    (["--runs", "1.5"], ["--runs", "1.5"]),
    (["--zipf", "one"], ["--zipf", "one"]),
    (["--handovers", "-1"], ["--handovers", "-1"]),
])
def test_bad_input_exits_2_naming_the_option_and_the_value(args, words):
    result = run(*args)
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    for word in words:
        assert word in result.stderr, (word, result.stderr)


@pytest.mark.integration
def test_the_installed_command_reports_bad_input_without_a_traceback():
    exe = Path(sys.executable).with_name("satpage")
    out = subprocess.run([str(exe), "paper", "--zipf", "-1"], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 2
    assert "--zipf" in out.stderr and "-1" in out.stderr and "Traceback" not in out.stderr


def test_the_cluster_backend_fails_clearly_without_the_cluster_module(monkeypatch):
    monkeypatch.setitem(sys.modules, "satpage.cluster", None)
    result = run("--runs", "1", "--backend", "cluster")
    assert result.exit_code == 2
    assert "satpage.cluster" in result.stderr


def test_the_cluster_backend_replays_the_engines_trace_and_prints_the_same_counts(monkeypatch):
    seen = {}

    def replay_paper(trace, target=None):
        seen["trace"], seen["target"] = trace, target
        return pager.paper_counts(trace)

    fake = types.ModuleType("satpage.cluster")
    fake.replay_paper = replay_paper
    monkeypatch.setitem(sys.modules, "satpage.cluster", fake)
    cluster = run_json("--runs", "1", "--seed", "8", "--backend", "cluster",
                       "--target", "127.0.0.1:7000")
    engine = run_json("--runs", "1", "--seed", "8")
    assert seen["target"] == "127.0.0.1:7000" and seen["trace"].n_sessions == 1
    assert cluster["backend"] == "cluster"
    verdict = compare_figures(engine, cluster, SCALARS + VECTORS)
    assert verdict.equal, verdict.different
