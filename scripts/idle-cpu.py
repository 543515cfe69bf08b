#!/usr/bin/env python3
"""Idle CPU of a deployed constellation, from its cgroups (make e2e-k8s, make e2e-swarm).

Sums the CPU time the kernel charged to every pod of a Kubernetes namespace
(``--k8s-namespace``) or every container of a Docker stack (``--docker-stack``)
over ``--seconds`` and prints one JSON object: ``idle_cores`` (CPU seconds per
wall second), the number of cgroups read, and the 1-minute load average at the
end. Nothing is sent to the constellation, so what it measures is its idle
upkeep (failure detectors, replication pings, Redis' timers, the probes it answers).
cgroup v1 (``cpuacct.usage``) and v2 (``cpu.stat`` ``usage_usec``) are read.

    scripts/idle-cpu.py --k8s-namespace satpage-e2e --seconds 30
    scripts/idle-cpu.py --docker-stack satpage --seconds 30
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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    who = ap.add_mutually_exclusive_group(required=True)
    who.add_argument("--k8s-namespace")
    who.add_argument("--docker-stack")
    ap.add_argument("--seconds", type=float, default=30.0)
    a = ap.parse_args()
    if a.seconds <= 0:
        print(f"error: --seconds {a.seconds} must be positive", file=sys.stderr)
        return 2
    dirs = pod_cgroups(a.k8s_namespace) if a.k8s_namespace else container_cgroups(a.docker_stack)
    if not dirs:
        print(f"error: no cgroup found for {a.k8s_namespace or a.docker_stack!r}", file=sys.stderr)
        return 1
    before = {d: usage_ns(d) for d in dirs}
    t0 = time.monotonic()
    time.sleep(a.seconds)
    after = {d: usage_ns(d) for d in dirs}
    wall_s = time.monotonic() - t0
    alive = [d for d in dirs if before[d] is not None and after[d] is not None]
    cpu_s = sum(after[d] - before[d] for d in alive) / 1e9
    print(json.dumps({"idle_cores": round(cpu_s / wall_s, 3), "cgroups": len(alive), "wall_s": round(wall_s, 1),
                      "load_1m": os.getloadavg()[0]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
