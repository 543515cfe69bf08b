"""A/B of two satnode builds on the one-page one-hop fault (docs/services.md, "Telling a
cut from the noise").

    .venv/bin/python bench/ab_satnode.py DIR_A DIR_B [--rounds 12] [--seconds 3]
        [--constellation walker-star:150/10/1:500:87] [--workers 32]
        [--pages-a 64] [--pages-b 64] [--json]

DIR_A and DIR_B each hold a satnode build (`go build -o DIR ./cmd/...` in
services/, or a checkout's bin/ after `make build`). A cluster of each build
starts (mutual TLS, Redis, no link emulation), both up at once: an idle cluster
uses no CPU. Each round runs, on one cluster then the other (the order
alternates between rounds), the bare gRPC round trip and one-hop faults at one
page per request over read streams, closed loop, as `make bench-services` does;
DIR_A's satload drives both. Rounds on this shared 2-core machine differ by
more than a cut of a few per cent changes, and the two sides of one round run
seconds apart, so the comparison is paired: per round, B's
`single_page_vs_bare` over A's, and the sign test (exact, two-sided) of how
many rounds B's was the higher. Every read of both clusters must move one hop
as counted, or it exits 1. About 15 s per round, and a minute or two to start.

A session reads all its pages, then is handed over to the satellite it came
from, and reads them again (each read a one-hop fault): --pages-a and
--pages-b set each side's pages per session (64, as `make bench-services`), so
that one build against itself with more pages per session on one side measures
what the session's handover work costs the faults.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import statistics
import sys
from pathlib import Path

from bench_services import bare_and_faults, bench_cluster, hops_ok

DEFAULT_CONSTELLATION = "walker-star:150/10/1:500:87"


@contextlib.contextmanager
def build_cluster(bin_dir: Path, constellation: str, name: str):
    """bench_cluster of the satnodes in bin_dir (mutual TLS, Redis, no link emulation)."""
    if not (bin_dir / "satnode").is_file():
        raise SystemExit(f"ab_satnode: no satnode in {bin_dir}")
    old = os.environ.get("SATPAGE_BIN_DIR")
    os.environ["SATPAGE_BIN_DIR"] = str(bin_dir)
    try:
        with bench_cluster(constellation, name, emulate_links=False, store="redis") as c:
            yield c
    finally:
        if old is None:
            os.environ.pop("SATPAGE_BIN_DIR", None)
        else:
            os.environ["SATPAGE_BIN_DIR"] = old


def sign_test_p(wins: int, losses: int) -> float:
    """Two-sided exact sign test: the chance of a split at least this uneven
    between wins and losses if each round were a fair coin (ties left out)."""
    n = wins + losses
    if n == 0:
        return 1.0
    k = min(wins, losses)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def paired(a: list[float], b: list[float]) -> dict:
    """The paired comparison of B's per-round ratios against A's."""
    if len(a) != len(b) or not a:
        raise ValueError(f"paired rounds: {len(a)} of A against {len(b)} of B")
    rel = [y / x for x, y in zip(a, b, strict=True)]
    wins, losses = sum(r > 1 for r in rel), sum(r < 1 for r in rel)
    return {"a_median": statistics.median(a), "b_median": statistics.median(b),
            "b_over_a_median": statistics.median(rel), "b_over_a_range": [min(rel), max(rel)],
            "b_higher": wins, "b_lower": losses, "rounds": len(rel), "sign_test_p": sign_test_p(wins, losses)}


def round_on(cluster, constellation: str, workers: int, seconds: float, pages: int) -> dict:
    """The bare round trip, then one-hop read-stream faults (sessions of pages), on one cluster."""
    bare, fault = bare_and_faults(cluster, constellation, workers=workers, dur=seconds, pages=pages)
    return {"bare_per_s": bare["accesses_per_s"], "fault_per_s": fault["accesses_per_s"],
            "ratio": fault["accesses_per_s"] / bare["accesses_per_s"],
            "cpu_in_bare_round_trips": fault["cpu_us_per_access"] / bare["cpu_us_per_access"],
            "hops_ok": hops_ok(fault)}


def print_report(rounds: list[dict], cmp: dict, names: tuple[str, str]) -> None:
    """Each round's ratios, then the comparison (80 columns)."""
    print(f"A = {names[0]}\nB = {names[1]}")
    print("one-hop faults over the bare round trip, one page per request")
    print(f"{'round':>5}  {'A ratio':>8}  {'B ratio':>8}  {'B/A':>6}  {'A faults/s':>10}  {'B faults/s':>10}")
    for i, r in enumerate(rounds):
        a, b = r["A"], r["B"]
        print(f"{i + 1:>5}  {a['ratio']:>8.3f}  {b['ratio']:>8.3f}  {b['ratio'] / a['ratio']:>6.3f}"
              f"  {a['fault_per_s']:>10,.0f}  {b['fault_per_s']:>10,.0f}")
    lo, hi = cmp["b_over_a_range"]
    print(f"medians: A {cmp['a_median']:.3f}, B {cmp['b_median']:.3f}; B/A per round: median "
          f"{cmp['b_over_a_median']:.3f} ({lo:.3f} to {hi:.3f})")
    print(f"B higher in {cmp['b_higher']} of {cmp['rounds']} rounds, lower in {cmp['b_lower']}; "
          f"sign test p = {cmp['sign_test_p']:.3f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir_a", type=Path, help="directory of build A's satnode (and the satload both use)")
    ap.add_argument("dir_b", type=Path, help="directory of build B's satnode")
    ap.add_argument("--rounds", type=int, default=12)
    ap.add_argument("--seconds", type=float, default=3.0, help="length of each run")
    ap.add_argument("--workers", type=int, default=32)
    ap.add_argument("--constellation", default=DEFAULT_CONSTELLATION)
    ap.add_argument("--pages-a", type=int, default=64, help="pages per session on A's cluster")
    ap.add_argument("--pages-b", type=int, default=64, help="pages per session on B's cluster")
    ap.add_argument("--json", action="store_true", help="one JSON object on stdout")
    args = ap.parse_args()
    if args.rounds < 1 or args.seconds <= 0:
        ap.error(f"--rounds {args.rounds} and --seconds {args.seconds}: need at least 1 round of more than 0 s")
    for side, n in (("a", args.pages_a), ("b", args.pages_b)):
        if n < 1:
            ap.error(f"--pages-{side} {n}: a session needs at least 1 page")
    dirs = {"A": args.dir_a.resolve(), "B": args.dir_b.resolve()}
    pages = {"A": args.pages_a, "B": args.pages_b}
    rounds: list[dict] = []
    with build_cluster(dirs["A"], args.constellation, "ab-a") as ca, \
            build_cluster(dirs["B"], args.constellation, "ab-b") as cb:
        clusters = {"A": ca, "B": cb}
        os.environ["SATPAGE_BIN_DIR"] = str(dirs["A"])  # A's satload drives both
        for i in range(args.rounds):
            print(f"ab_satnode: round {i + 1}/{args.rounds}", file=sys.stderr)
            order = "AB" if i % 2 == 0 else "BA"
            rounds.append({k: round_on(clusters[k], args.constellation, args.workers, args.seconds, pages[k])
                           for k in order})
    cmp = paired([r["A"]["ratio"] for r in rounds], [r["B"]["ratio"] for r in rounds])
    ok = all(r[k]["hops_ok"] for r in rounds for k in "AB")
    if args.json:
        print(json.dumps({"a": str(dirs["A"]), "b": str(dirs["B"]), "constellation": args.constellation,
                          "pages_a": pages["A"], "pages_b": pages["B"],
                          "rounds": rounds, "comparison": cmp, "hops_ok": ok}))
    else:
        print_report(rounds, cmp, tuple(f"{dirs[k]}, {pages[k]} pages per session" for k in "AB"))
    if not ok:
        print("ab_satnode: reads with unexpected outcomes or hop counts", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
