"""Idle CPU of a running local cluster's satnodes (docs/faults.md, "Under load").

Reads ``<state-dir>/cluster.json`` (written by ``satpage cluster up``), sums
utime + stime of every satnode process from /proc over ``--seconds`` and prints
one JSON object: the cores the satnodes used together, per satnode, and the
share of the machine's cores. Start the cluster first and let it settle; the
script sends no request, so what it measures is the idle upkeep (failure
detector, replication pings, snapshots).

    .venv/bin/python bench/bench_idle_cpu.py --state-dir .cluster-load --seconds 30
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_ticks(pid: int) -> int | None:
    """utime + stime of pid in clock ticks, None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    rest = text[text.rindex(")") + 2:].split()  # fields resume after comm's ')'
    return int(rest[11]) + int(rest[12])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--state-dir", type=Path, required=True)
    ap.add_argument("--seconds", type=float, default=30.0)
    a = ap.parse_args()
    if a.seconds <= 0:
        print(f"error: --seconds {a.seconds} must be positive", file=sys.stderr)
        return 2
    state = json.loads((a.state_dir / "cluster.json").read_text())
    pids = [p["pid"] for p in state["processes"] if p["role"] == "satnode"]
    before = {p: cpu_ticks(p) for p in pids}
    t0 = time.monotonic()
    time.sleep(a.seconds)
    after = {p: cpu_ticks(p) for p in pids}
    wall_s = time.monotonic() - t0
    alive = [p for p in pids if before[p] is not None and after[p] is not None]
    used_s = sum(after[p] - before[p] for p in alive) / CLK_TCK
    print(json.dumps({
        "constellation": state["constellation"], "replicas": state.get("replicas", 1),
        "satnodes": len(pids), "satnodes_alive": len(alive), "wall_s": round(wall_s, 2),
        "cpu_s": round(used_s, 2), "cores": round(used_s / wall_s, 3),
        "percent_of_one_core_per_satnode": round(100 * used_s / wall_s / max(len(alive), 1), 3),
        "machine_cores": os.cpu_count(),
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
