"""Why the replicas of a satellite's pages sit behind it in its plane
(docs/faults.md): for the default constellation, how often the next serving
satellite of a ground client is the owner's replica under the placement rule
(slot k-1 in the owner's plane), against the other +Grid neighbours, and the
replication page-hops per stored page for R = 1..4.

    .venv/bin/python bench/bench_placement.py [--clients 400] [--hours 6]

Clients: uniformly random on the sphere (seeded), served by the highest
satellite above 10 deg (the default scenario's rule), 10 s steps.
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from orbit_model import Constellation, GroundPoints, handover_schedule


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--clients", type=int, default=400)
    ap.add_argument("--hours", type=float, default=6.0)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    spec = "walker-star:150/10/1:500:87"
    c = Constellation.from_spec(spec, epoch="2023-06-01T00:00:00Z")
    per = 15
    rng = np.random.default_rng(a.seed)
    lat = np.degrees(np.arcsin(rng.uniform(-1, 1, a.clients)))
    lon = rng.uniform(-180, 180, a.clients)
    t = np.arange(0, int(a.hours * 3600e9), int(10e9), dtype=np.int64)
    sched = handover_schedule(c, GroundPoints.from_degrees(lat, lon), t, min_elevation_deg=10.0)
    counts = {"behind (k-1, the replica at R=2)": 0, "ahead (k+1)": 0, "other plane, same slot": 0,
              "elsewhere": 0}
    within = {2: 0, 3: 0, 4: 0}
    total = 0
    for client in range(sched.n_clients):
        _, sats = sched.for_client(client)
        sats = sats[sats >= 0]
        if sats.size < 2:
            continue
        a_, b_ = sats[:-1], sats[1:]
        a_, b_ = a_[a_ != b_], b_[a_ != b_]
        for s, n in zip(a_.tolist(), b_.tolist(), strict=True):
            total += 1
            ps, ks, pn, kn = s // per, s % per, n // per, n % per
            if ps == pn and kn == (ks - 1) % per:
                counts["behind (k-1, the replica at R=2)"] += 1
            elif ps == pn and kn == (ks + 1) % per:
                counts["ahead (k+1)"] += 1
            elif ks == kn and abs(ps - pn) == 1:
                counts["other plane, same slot"] += 1
            else:
                counts["elsewhere"] += 1
            for r in within:
                if ps == pn and 1 <= (ks - kn) % per <= r - 1:
                    within[r] += 1
    out = {"constellation": spec, "clients": a.clients, "hours": a.hours, "handovers": total,
           "next_server_share": {k: round(v / max(total, 1), 3) for k, v in counts.items()},
           "next_server_holds_a_replica": {f"R={r}": round(v / max(total, 1), 3) for r, v in within.items()},
           "replication_page_hops_per_stored_page": {f"R={r}": sum(min(j, per - j) for j in range(1, r))
                                                     for r in range(1, 5)}}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
