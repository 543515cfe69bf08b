"""Write services/testdata/live_ephemeris.bin (satpage-ephemeris/1), the same
positions compressed (live_ephemeris_compressed.bin: the Go reader must decode
them to within the quantum), and live_vectors.json from orbit_model (the authority for visibility and handover
policy): the Go sky package must reproduce each place's schedule from the
ephemeris (internal/sky/vectors_test.go), and sim/tests/test_live_vectors.py checks
that orbit_model still produces both files.

Format satpage-live-vectors/2: each case names its policy, stickiness, minimum
elevation, step and reallocation interval and phase (0: none); its schedule entries
are [time_ns, satellite (-1: none), forced (1: picked between reallocation instants
because the server set)].

Usage: .venv/bin/python services/testdata/make_live_vectors.py
"""

from __future__ import annotations

import json
from pathlib import Path

from orbit_model import Constellation, GroundPoints, handover_schedule, parse_epoch, step_times_ns
from orbit_model.io import write_ephemeris

HERE = Path(__file__).resolve().parent
CONSTELLATION = "walker-star:150/10/1:500:87"
EPOCH = "2026-01-01T00:00:00Z"
HOURS = 1
STEP_NS = 10_000_000_000
#: Oslo, Jakarta, Quito, McMurdo, Honolulu, the antimeridian
PLACES = [(59.9, 10.7), (-6.2, 106.8), (-0.2, -78.5), (-77.8, 166.7), (21.3, -157.9), (0.0, 180.0)]
S = 1_000_000_000
#: policy, sticky, minimum elevation (deg), step, reallocation interval and phase (ns):
#: the last three reallocate every 15 s at phase 12 s (Starlink's cadence) on 3 s steps
CASES = [("highest", True, 10.0, STEP_NS, 0, 0), ("nearest", True, 10.0, STEP_NS, 0, 0),
         ("highest", False, 25.0, STEP_NS, 0, 0), ("longest", True, 10.0, STEP_NS, 0, 0),
         ("longest", False, 25.0, STEP_NS, 0, 0), ("highest", True, 25.0, 3 * S, 15 * S, 12 * S),
         ("nearest", False, 10.0, 3 * S, 15 * S, 12 * S),
         ("longest", True, 25.0, 3 * S, 15 * S, 12 * S)]


def vectors(ephemeris_path: Path) -> dict:
    """Write the ephemeris and return the schedules orbit_model gives for every case."""
    const = Constellation.from_spec(CONSTELLATION, epoch=parse_epoch(EPOCH))
    duration = HOURS * 3600 * 1_000_000_000
    for compress in (False, True):
        write_ephemeris(compressed_path(ephemeris_path) if compress else ephemeris_path, const,
                        duration, policy="highest", sticky=True, min_elevation_deg=10.0,
                        step_ns=STEP_NS, compress=compress)
    ground = GroundPoints.from_degrees([p[0] for p in PLACES], [p[1] for p in PLACES])
    cases = []
    for policy, sticky, min_el, step_ns, interval_ns, phase_ns in CASES:
        t = step_times_ns(duration, step_ns)
        sched = handover_schedule(const, ground, t, min_elevation_deg=min_el, policy=policy,
                                  sticky=sticky, interval_ns=interval_ns, phase_ns=phase_ns)
        for c, (lat, lon) in enumerate(PLACES):
            times, sats = sched.for_client(c)
            forced = sched.forced[sched.offsets[c]:sched.offsets[c + 1]]
            cases.append({"lat_deg": lat, "lon_deg": lon, "policy": policy, "sticky": sticky,
                          "min_elevation_deg": min_el, "step_ns": step_ns,
                          "interval_ns": interval_ns, "phase_ns": phase_ns,
                          "schedule": [[int(a), int(b), int(f)]
                                       for a, b, f in zip(times, sats, forced, strict=True)]})
    return {"format": "satpage-live-vectors/2", "constellation": CONSTELLATION, "epoch": EPOCH,
            "step_ns": STEP_NS, "end_ns": duration, "ephemeris": ephemeris_path.name, "cases": cases}


def compressed_path(ephemeris_path: Path) -> Path:
    """Where the compressed copy of the ephemeris goes."""
    return ephemeris_path.with_name(ephemeris_path.stem + "_compressed.bin")


def render(v: dict) -> str:
    head = {k: x for k, x in v.items() if k != "cases"}
    body = ",\n".join("  " + json.dumps(c) for c in v["cases"])
    return json.dumps(head)[:-1] + ', "cases": [\n' + body + "\n]}\n"


if __name__ == "__main__":
    v = vectors(HERE / "live_ephemeris.bin")
    (HERE / "live_vectors.json").write_text(render(v))
    print(f"wrote {HERE / 'live_ephemeris.bin'}, its compressed copy and live_vectors.json: {len(v['cases'])} cases, "
          f"{sum(len(c['schedule']) for c in v['cases'])} schedule entries")

