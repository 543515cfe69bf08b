"""Load benchmark of the local cluster: page faults per second and latency by ISL
hop count (0 = a local read, 1, 2, 4, 8), 4 KiB pages, beside redis-benchmark's
GET/SET rate on one of the same cluster's redis-servers, measured in the same run.

    make bench-services            # or: .venv/bin/python bench/bench_services.py [--quick]

It starts its own cluster (default constellation, 150 satellites: 301 processes),
runs bin/satload (bounded in time and count), and stops the cluster. Targets
(issue 8, this 2-core machine): >= 10,000 one-hop page faults/s aggregate, and
< 1 ms of p99 latency added per relayed hop on loopback. Printed as ratios
against the baselines measured here: redis-benchmark GET and the 0-hop read.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from satpage.cluster import cluster_down, cluster_up
from satpage.cluster.driver import _free_port_base
from satpage.cluster.local import DEFAULT_CONSTELLATION, find_binary


def redis_benchmark(sock: Path, requests: int, clients: int) -> dict[str, float]:
    """Requests/s of GET and SET with 4 KiB values on the redis-server at sock."""
    out = subprocess.run(["redis-benchmark", "-s", str(sock), "-t", "set,get", "-d", "4096",
                          "-n", str(requests), "-c", str(clients), "--csv"],
                         capture_output=True, text=True, check=True, timeout=300).stdout
    rates = {}
    for line in out.splitlines():
        cells = [c.strip('"') for c in line.split(",")]
        if cells[0] in ("SET", "GET"):
            rates[cells[0]] = float(cells[1])
    return rates


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--constellation", default=DEFAULT_CONSTELLATION)
    ap.add_argument("--duration-s", type=float, default=5.0, help="per hop count (bounded)")
    ap.add_argument("--workers", type=int, default=32)
    ap.add_argument("--quick", action="store_true", help="2 s per hop count")
    args = ap.parse_args()
    duration = 2.0 if args.quick else args.duration_s

    satload = find_binary("satload")
    with tempfile.TemporaryDirectory(prefix="satpage-bench-") as tmp:
        base = _free_port_base(args.constellation)
        t0 = time.perf_counter()
        st = cluster_up(args.constellation, state_dir=Path(tmp), port_base=base)
        print(f"cluster up: {st.satellites} satellites, {len(st.processes)} processes "
              f"in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        try:
            rates = redis_benchmark(Path(tmp) / "redis" / "0.sock", 100_000 if not args.quick else 30_000, 16)
            pid_file = Path(tmp) / "pids.txt"
            pid_file.write_text("\n".join(str(p.pid) for p in st.processes))
            results = []
            for hops in (0, 1, 2, 4, 8):
                # CPU seconds of the whole cluster and of the load generator per access: a
                # figure that does not depend on how busy the machine is.
                out = subprocess.run(
                    [str(satload), "--constellation", args.constellation,
                     "--peer-template", "127.0.0.1:{port}", "--peer-port-base", str(base + 2),
                     "--hops", str(hops), "--workers", str(args.workers), "--pages", "64",
                     "--page-bytes", "4096", "--duration", f"{duration}s", "--max-accesses", "300000",
                     "--cpu-pids", str(pid_file)],
                    capture_output=True, text=True, timeout=600)
                if out.returncode != 0:
                    print(out.stderr, file=sys.stderr)
                    return 1
                results.append(json.loads(out.stdout.splitlines()[0]))
        finally:
            cluster_down(Path(tmp))

    local = next(r for r in results if r["hops"] == 0)
    print(f"redis-benchmark on one satellite's redis (4 KiB, 16 clients): "
          f"SET {rates.get('SET', 0):,.0f}/s, GET {rates.get('GET', 0):,.0f}/s")
    print(f"{'hops':>4} {'accesses':>9} {'per s':>9} {'/ GET':>7} {'p50 ms':>8} {'p99 ms':>8} "
          f"{'p99 added/hop ms':>17} {'CPU us/access':>14} {'hops ok':>8}")
    for r in results:
        added = (r["p99_ms"] - local["p99_ms"]) / r["hops"] if r["hops"] else 0.0
        ok = r["measured_hops_sum"] == r["hops"] * r["accesses"] and r["unexpected_outcomes"] == 0
        print(f"{r['hops']:>4} {r['accesses']:>9,} {r['accesses_per_s']:>9,.0f} "
              f"{r['accesses_per_s'] / rates['GET']:>7.3f} {r['p50_ms']:>8.3f} {r['p99_ms']:>8.3f} "
              f"{added:>17.3f} {r['cpu_us_per_access']:>14.0f} {str(ok):>8}")
    one = next(r for r in results if r["hops"] == 1)
    print(f"one-hop page faults/s: {one['accesses_per_s']:,.0f} (target 10,000: "
          f"ratio {one['accesses_per_s'] / 10_000:.2f}); p99 added per hop at 8 hops: "
          f"{(next(r for r in results if r['hops'] == 8)['p99_ms'] - local['p99_ms']) / 8:.3f} ms "
          "(target < 1 ms)")
    cores = os.cpu_count() or 1
    print(f"CPU per one-hop fault (cluster + load generator): {one['cpu_us_per_access']:.0f} us, "
          f"so at most ~{cores * 1e6 / one['cpu_us_per_access']:,.0f} faults/s on {cores} idle cores "
          "(an estimate: the measured rate above depends on what else runs)")
    print(json.dumps({"redis_benchmark": rates, "results": results}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
