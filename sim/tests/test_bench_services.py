"""bench/bench_services.py's floor table (print_floor): the medians and ranges of
the floor's ratios over the rounds, and a table that reads at 80 columns."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from bench_services import print_floor  # noqa: E402


def _round(bare: float, floor: float, fault: float) -> dict:
    return {"floor_bare": {"accesses_per_s": bare, "cpu_us_per_access": 1e6 / bare},
            "floor_fault": {"accesses_per_s": floor, "cpu_us_per_access": 1e6 / floor},
            "floor_vs_bare": floor / bare, "vs_floor": fault / floor, "floor_cpu_in_bare_round_trips": bare / floor}


def test_the_floor_gives_the_medians_and_ranges_of_its_rounds_in_80_columns(capsys):
    rounds = [_round(17_000, 8_500, 5_950), _round(16_000, 7_200, 5_400), _round(12_000, 6_600, 4_620)]
    got = print_floor(rounds)
    # floor/bare: 0.5, 0.45, 0.55; fault/floor: 0.7, 0.75, 0.7
    assert got["floor_vs_bare"] == 0.5 and got["floor_vs_bare_range"] == [0.45, 0.55]
    assert got["single_page_vs_floor"] == 0.7 and got["single_page_vs_floor_range"] == [0.7, 0.75]
    lines = capsys.readouterr().out.splitlines()
    assert max(map(len, lines)) <= 80, [line for line in lines if len(line) > 80]
    assert "12,000" in lines[5] and "6,600" in lines[5] and "0.550" in lines[5]
