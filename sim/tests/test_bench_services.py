"""bench/bench_services.py's floor table (print_floor): the medians and ranges of
the floor's ratios over the rounds; the floor's latency series
(print_floor_latency, and lowest for the rounds'): the slopes of its p99 and p50
over the hops; its link emulation table (print_emulation): the on/off ratios,
closed loop and at the offered rate; all read at 80 columns."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from bench_services import (  # noqa: E402
    emulation_ok,
    lowest,
    print_emulation,
    print_floor,
    print_floor_latency,
    single_page_ok,
)


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


def _emu(reads: float, cpu: float, cpu_at_rate: float) -> dict:
    hop = {"hops": 1, "unexpected_outcomes": 0, "p50_ms": 40.0, "p99_ms": 180.0}
    at = {**hop, "accesses": 19_200, "measured_hops_sum": 19_200, "accesses_per_s": 6_400.0,
          "cpu_us_per_access": cpu_at_rate}
    return {**hop, "accesses": 70_000, "measured_hops_sum": 70_000, "accesses_per_s": reads,
            "cpu_us_per_access": cpu, "at_rate": at}


def test_the_emulation_ratios_are_the_means_of_the_rounds_closed_loop_and_at_the_offered_rate(capsys):
    emu = {"off": [_emu(24_000, 80.0, 100.0), _emu(22_000, 76.0, 110.0)],
           "on": [_emu(19_000, 96.0, 105.0), _emu(19_300, 99.0, 115.5)]}
    got = print_emulation(emu)
    assert got["throughput"] == (19_000 + 19_300) / (24_000 + 22_000)
    assert got["cpu_per_access"] == (96.0 + 99.0) / (80.0 + 76.0)
    assert got["cpu_per_access_at_rate"] == (105.0 + 115.5) / (100.0 + 110.0)
    lines = capsys.readouterr().out.splitlines()
    assert max(map(len, lines)) <= 80, [line for line in lines if len(line) > 80]
    assert all(emulation_ok(r) for rs in emu.values() for r in rs)
    emu["on"][1]["at_rate"]["measured_hops_sum"] -= 1  # one access of the paced run one hop short
    assert not emulation_ok(emu["on"][1]) and emulation_ok(emu["on"][1] | {"at_rate": emu["on"][0]["at_rate"]})


def _lat(hops: int, p50: float, p99: float, *, short: int = 0) -> dict:
    return {"hops": hops, "requests": 2_000, "accesses": 2_000, "measured_hops_sum": 2_000 * hops - short,
            "unexpected_outcomes": 0, "p50_ms": p50, "p90_ms": p50 * 1.5, "p99_ms": p99, "p999_ms": p99 * 3}


def test_the_floor_latency_gives_the_slopes_of_p99_and_p50_over_the_hops_in_80_columns(capsys):
    # p99 = 2 + 0.4 h and p50 = 0.5 + 0.25 h exactly: the least-squares slopes are 0.4 and 0.25
    series = [_lat(h, 0.5 + 0.25 * h, 2.0 + 0.4 * h) for h in (1, 2, 4, 8)]
    got = print_floor_latency(series)
    assert abs(got["floor_per_hop_p99_ms"] - 0.4) < 1e-12 and abs(got["floor_per_hop_p50_ms"] - 0.25) < 1e-12
    lines = capsys.readouterr().out.splitlines()
    assert max(map(len, lines)) <= 80, [line for line in lines if len(line) > 80]
    assert len(lines) == 3 + len(series) + 1 and "5.200" in lines[-2]  # the 8-hop row's p99


def test_the_rounds_floor_series_takes_each_hop_counts_lowest_and_every_read_must_count_its_hops():
    ok = {"fault": _lat(1, 1, 5), "fault_unary": _lat(1, 1, 5), "latency": [_lat(1, 1, 5), _lat(2, 1.4, 6)]}
    rounds = [ok | {"floor_latency": [_lat(1, 1.0, 4.0), _lat(2, 1.3, 9.0)]},
              ok | {"floor_latency": [_lat(1, 1.1, 7.0), _lat(2, 1.2, 5.0)]}]
    assert lowest(rounds, "floor_latency", "p99_ms") == ([1, 2], [4.0, 5.0])
    assert single_page_ok(rounds)
    rounds[1]["floor_latency"][1] = _lat(2, 1.2, 5.0, short=1)  # one read of the floor's series a hop short
    assert not single_page_ok(rounds)
