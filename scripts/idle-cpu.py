#!/usr/bin/env python3
"""Idle CPU of a constellation: a deployment's, from its cgroups (make e2e-k8s, make
e2e-swarm), or a local cluster's satnodes, from /proc (docs/faults.md).

Sums the CPU time the kernel charged to every pod of a Kubernetes namespace
(``--k8s-namespace``), every container of a Docker stack (``--docker-stack``) or
every satnode of a local cluster (``--state-dir``, the directory of ``satpage
cluster up``: utime + stime) over ``--seconds`` and prints one JSON object:
``idle_cores`` (CPU seconds per wall second), how many cgroups or processes were
read, and the 1-minute load average at the end; for a local cluster also its
constellation, R and the share of a core per satnode. Nothing is sent to the
constellation, so what it measures is its idle upkeep (failure detectors,
replication pings, Redis' timers, the probes it answers). cgroup v1
(``cpuacct.usage``) and v2 (``cpu.stat`` ``usage_usec``) are read.

    scripts/idle-cpu.py --k8s-namespace satpage-e2e --seconds 30
    scripts/idle-cpu.py --docker-stack satpage --seconds 30
    scripts/idle-cpu.py --state-dir .cluster-load --seconds 30
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
POD_DIR = re.compile(r"pod[0-9a-f]{8}[-_]")
CLK_TCK = os.sysconf("SC_CLK_TCK")


def usage_ns(d: Path) -> int | None:
    """CPU time charged to cgroup directory d, ns (None when it is gone)."""
    try:
        if (d / "cpuacct.usage").exists():
            return int((d / "cpuacct.usage").read_text())
        for line in (d / "cpu.stat").read_text().splitlines():
            k, v = line.split()
            if k == "usage_usec":
                return int(v) * 1000
    except (OSError, ValueError):
        return None
    return None


def process_usage_ns(pid: int) -> int | None:
    """utime + stime of process pid, ns (None when it is gone)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    rest = text[text.rindex(")") + 2:].split()  # fields resume after comm's ')'
    return (int(rest[11]) + int(rest[12])) * 1_000_000_000 // CLK_TCK


def pod_cgroups(namespace: str) -> list[Path]:
    """The pod-level cgroups of every pod in namespace (cgroupfs or systemd driver names)."""
    pods = json.loads(subprocess.check_output(["kubectl", "-n", namespace, "get", "pods", "-o", "json"]))["items"]
    by_name: dict[str, Path] = {}
    for top in (ROOT / "cpuacct" / "kubepods", ROOT / "kubepods.slice", ROOT / "kubepods"):
        for d, subdirs, _ in os.walk(top):
            pods_here = [s for s in subdirs if POD_DIR.search(s)]
            for s in pods_here:
                by_name[s.removesuffix(".slice")] = Path(d, s)
            subdirs[:] = [s for s in subdirs if s not in pods_here]  # not into the containers
    out = []
    for p in pods:
        uid = p["metadata"]["uid"]
        for name in (f"pod{uid}", f"kubepods-pod{uid.replace('-', '_')}",
                     f"kubepods-burstable-pod{uid.replace('-', '_')}", f"kubepods-besteffort-pod{uid.replace('-', '_')}"):
            if name in by_name:
                out.append(by_name[name])
                break
    return out


def container_cgroups(stack: str) -> list[Path]:
    docker = os.environ.get("DOCKER", "docker")
    ids = subprocess.check_output([docker, "ps", "-q", "--no-trunc", "--filter",
                                   f"label=com.docker.stack.namespace={stack}"]).decode().split()
    out = []
    for cid in ids:
        for d in (ROOT / "cpuacct" / "docker" / cid, ROOT / "system.slice" / f"docker-{cid}.scope"):
            if d.exists():
                out.append(d)
                break
    return out


def idle_cores(usage, items: list, seconds: float) -> tuple[float, int, float]:
    """CPU seconds per wall second that ``usage(item)`` (ns, None when gone) charged to
    the items alive at both ends of ``seconds``; how many were; the wall seconds."""
    before = {i: usage(i) for i in items}
    t0 = time.monotonic()
    time.sleep(seconds)
    after = {i: usage(i) for i in items}
    wall_s = time.monotonic() - t0
    alive = [i for i in items if before[i] is not None and after[i] is not None]
    cpu_s = sum(after[i] - before[i] for i in alive) / 1e9
    return cpu_s / wall_s, len(alive), wall_s


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    who = ap.add_mutually_exclusive_group(required=True)
    who.add_argument("--k8s-namespace")
    who.add_argument("--docker-stack")
    who.add_argument("--state-dir", type=Path, help="a local cluster's (satpage cluster up)")
    ap.add_argument("--seconds", type=float, default=30.0)
    a = ap.parse_args()
    if a.seconds <= 0:
        print(f"error: --seconds {a.seconds} must be positive", file=sys.stderr)
        return 2
    if a.state_dir is not None:
        try:
            state = json.loads((a.state_dir / "cluster.json").read_text())
        except (OSError, ValueError) as exc:
            print(f"error: --state-dir {str(a.state_dir)!r}: no cluster recorded ({exc})", file=sys.stderr)
            return 2
        pids = [p["pid"] for p in state["processes"] if p["role"] == "satnode"]
        cores, alive, wall_s = idle_cores(process_usage_ns, pids, a.seconds)
        print(json.dumps({"idle_cores": round(cores, 3), "satnodes": len(pids), "satnodes_alive": alive,
                          "wall_s": round(wall_s, 1), "load_1m": os.getloadavg()[0],
                          "constellation": state["constellation"], "replicas": state.get("replicas", 1),
                          "percent_of_one_core_per_satnode": round(100 * cores / max(alive, 1), 3),
                          "machine_cores": os.cpu_count()}))
        return 0
    dirs = pod_cgroups(a.k8s_namespace) if a.k8s_namespace else container_cgroups(a.docker_stack)
    if not dirs:
        print(f"error: no cgroup found for {a.k8s_namespace or a.docker_stack!r}", file=sys.stderr)
        return 1
    cores, alive, wall_s = idle_cores(usage_ns, dirs, a.seconds)
    print(json.dumps({"idle_cores": round(cores, 3), "cgroups": alive, "wall_s": round(wall_s, 1),
                      "load_1m": os.getloadavg()[0]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
