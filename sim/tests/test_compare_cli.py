import json

import pytest
from typer.testing import CliRunner

from satpage.cli import app

TINY = ["--sessions", "40", "--set", "time.duration_s=5400", "--set", "run.chunk_sessions=20",
        "--set", "sessions.lifetime_mean_s=900", "--set", "network.load_bins=6"]


def run(args):
    return CliRunner().invoke(app, args, catch_exceptions=False)


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    out = tmp_path_factory.mktemp("cmp")
    r = run(["compare", *TINY, "--json", "--out", str(out)])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout), out


def test_compare_json_has_scenario_seed_version_and_five_strategies(compared):
    result, _ = compared
    assert result["scenario"] == "default"
    assert result["seed"] == 2023
    assert result["version"].startswith("0.1.0")
    assert len(result["strategies"]) >= 5
    for s in result["strategies"].values():
        for key in ("page_moves", "page_hops", "fault_latency_ms", "fault_latency_p50_ms",
                    "fault_latency_p99_ms", "byte_hops", "isl_load_max_bytes",
                    "isl_load_mean_bytes", "pages_held_max_per_satellite",
                    "pages_left_behind", "handover_transfer_bytes"):
            assert key in s
    st = result["strategies"]
    assert st["on-demand"]["page_hops"] < st["proactive"]["page_hops"]


def test_compare_out_writes_reports_and_charts(compared):
    result, out = compared
    for name in ("result.json", "costs.csv", "report.md", "report.html", "pages_held.csv",
                 "isl_load.csv", "cost_per_strategy.png", "fault_latency_cdf.png",
                 "isl_load.png", "pages_held.png", "clients.png"):
        assert (out / name).stat().st_size > 0, name
    html = (out / "report.html").read_text()
    assert html.count("data:image/png;base64,") >= 4
    assert result["version"] in html and str(result["seed"]) in html
    md = (out / "report.md").read_text()
    assert result["version"] in md and "seed" in md
    assert json.loads((out / "result.json").read_text())["strategies"] == result["strategies"]
    assert (out / "costs.csv").read_text().count("\n") == 1 + len(result["strategies"])


def test_compare_without_json_prints_a_table():
    r = run(["compare", *TINY, "--strategies", "proactive,on-demand"])
    assert r.exit_code == 0
    assert "page-hops" in r.stdout and "on-demand" in r.stdout


@pytest.mark.parametrize("args,needle", [
    (["--set", "workload.zipff=1"], "workload.zipff"),
    (["--set", "workload.pages=-3"], "-3"),
    (["--strategies", "proactive,teleport"], "teleport"),
    (["no-such-scenario"], "no-such-scenario"),
    (["--backend", "bogus"], "bogus"),
    (["--backend", "cluster", "--target", "127.0.0.1:1", "--sessions", "2"], "127.0.0.1:1"),
    (["--backend", "cluster", "--target", "127.0.0.1:1", "--sessions", "2",
      "--set", "constellation.isl_latitude_cutoff_deg=70"], "--target 127.0.0.1:1"),
])
def test_bad_input_is_a_clear_error_with_exit_code_2(args, needle, monkeypatch, capsys):
    from satpage.cli import main
    monkeypatch.setattr("sys.argv", ["satpage", "compare", *args])
    with pytest.raises(SystemExit) as exc:
        main()
    err = capsys.readouterr().err
    assert exc.value.code == 2, err
    assert needle in err.replace("\n", "") and "Traceback" not in err


def test_a_scenario_file_with_a_typo_names_the_key_and_the_file(tmp_path):
    bad = tmp_path / "typo.toml"
    bad.write_text("[sessions]\ncounts = 10\n")
    r = CliRunner().invoke(app, ["compare", str(bad)])
    assert r.exit_code != 0
    assert "typo.toml" in str(r.exception) and "counts" in str(r.exception)


def test_sweep_writes_a_csv_row_per_point_and_strategy_and_charts(tmp_path):
    r = run(["sweep", *TINY, "--strategies", "proactive,on-demand",
             "--vary", "workload.zipf_s=0.5,1.5", "--out", str(tmp_path), "--json"])
    assert r.exit_code == 0, r.output
    rows = json.loads(r.stdout)["rows"]
    assert [(x["workload.zipf_s"], x["strategy"]) for x in rows] == [
        (0.5, "proactive"), (0.5, "on-demand"), (1.5, "proactive"), (1.5, "on-demand")]
    # a steeper Zipf concentrates accesses: fewer on-demand movements
    od = [x["page_moves"] for x in rows if x["strategy"] == "on-demand"]
    assert od[1] < od[0]
    assert (tmp_path / "sweep.csv").read_text().count("\n") == 5
    assert (tmp_path / "sweep_page_hops.png").stat().st_size > 0


@pytest.mark.integration
def test_compare_at_80_columns_prints_every_strategy_and_number_whole(compared):
    """The terminal table: strategies as rows, the headline columns that fit, no name or
    number cut to an ellipsis; wider terminals show more columns."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from rich.console import Console

    from satpage.commands.compare import _table

    exe = Path(sys.executable).with_name("satpage")
    r = subprocess.run([str(exe), "compare", *TINY], capture_output=True, text=True,
                       env={**os.environ, "COLUMNS": "80"}, timeout=600, check=True)
    out = r.stdout
    assert "…" not in out and "..." not in out
    assert max(len(line) for line in out.splitlines()) <= 80
    result, _ = compared
    rows = [line for line in out.splitlines() if line.startswith("│")]
    assert [row.split("│")[1].strip() for row in rows] == list(result["strategies"])
    for row, s in zip(rows, result["strategies"].values(), strict=True):
        assert row.split("│")[2].strip() == f"{s['page_moves']:,}"
    head = {80: 0, 160: 0}
    for width in head:
        c = Console(width=width, record=True)
        c.print(_table(result, width))
        text = c.export_text()
        assert "…" not in text and max(len(x) for x in text.splitlines()) <= width
        head[width] = text.splitlines()[1].count("┳")
    assert 5 <= head[80] < head[160]


def test_the_summary_names_the_winner_of_each_headline_cost(compared):
    from satpage.report import summary_paragraph

    result, out = compared
    st = result["strategies"]
    text = summary_paragraph(result)
    least = min(st, key=lambda n: st[n]["page_hops"])
    assert f"{least} moves the least over the ISLs ({st[least]['page_hops']:,} page-hops)" \
        in text
    wait = min(st, key=lambda n: st[n]["access_latency_ms_mean"])
    assert text.count("\n") == 0 and wait in text
    assert text in (out / "report.md").read_text()


def test_a_port_that_refuses_the_connection_is_no_gateway_within_seconds():
    """Nothing listens: an error naming the address after satpage.cluster.replayer's
    REFUSED_S of retries, not after gRPC's 30 s of reconnect backoff."""
    import socket
    import time

    import grpc

    from satpage.cluster.replayer import REFUSED_S, wait_for_gateway

    with socket.socket() as s:  # a port just free: nothing listens on it now
        s.bind(("127.0.0.1", 0))
        addr = f"127.0.0.1:{s.getsockname()[1]}"
    t0 = time.monotonic()
    with grpc.insecure_channel(addr) as ch, pytest.raises(OSError, match=f"{addr}.*connection refused"):
        wait_for_gateway(ch, addr)
    assert REFUSED_S <= time.monotonic() - t0 < 10 * REFUSED_S + 5
