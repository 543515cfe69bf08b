"""Write services/testdata/link_vectors.json from orbit_model (the authority for
positions): one-way propagation delays, distance / c, of ISLs and ground links at
times between the ephemeris' knots. The Go link emulator (internal/linkemu) must
reproduce them from live_ephemeris.bin (written by make_live_vectors.py) within
its interpolation error, and sim/tests/test_link_vectors.py checks that
orbit_model still produces them.

Format satpage-link-vectors/1: "isl" entries [from, to, time_ns, delay_ns]
(a +Grid link of orbit_model's grid_links, both directions); "ground" entries
[lat_deg, lon_deg, satellite, time_ns, delay_ns] (slant range from the WGS84
ground point at height 0).

Usage: .venv/bin/python services/testdata/make_link_vectors.py
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from orbit_model import Constellation, GroundPoints, itrs_positions_km, parse_epoch
from orbit_model.constants import SPEED_OF_LIGHT_KM_S
from orbit_model.kernels import grid_links

HERE = Path(__file__).resolve().parent
CONSTELLATION = "walker-star:150/10/1:500:87"  # the constellation of live_ephemeris.bin
EPOCH = "2026-01-01T00:00:00Z"
PLACES = [(59.9, 10.7), (-6.2, 106.8), (0.0, 180.0)]
N_ISL = 40
N_GROUND = 12
SEED = 30


def vectors() -> dict:
    const = Constellation.from_spec(CONSTELLATION, epoch=parse_epoch(EPOCH))
    rng = np.random.default_rng(SEED)
    # times off the 60 s knots, inside the hour the ephemeris covers (its last knot is 3600 s)
    t = np.sort(rng.integers(60 * 10**9, 3540 * 10**9, N_ISL + N_GROUND)) + 123_456_789
    pos = itrs_positions_km(const, t, knot_ns=None, report=False)  # SGP4 at each time
    ends = grid_links(const).endpoints
    pick = rng.integers(0, len(ends), N_ISL)
    isl = []
    for j in range(N_ISL):
        a, b = (int(x) for x in ends[pick[j]])
        if j % 2:
            a, b = b, a
        km = float(np.linalg.norm(pos[a, j] - pos[b, j]))
        isl.append([a, b, int(t[j]), km / SPEED_OF_LIGHT_KM_S * 1e9])
    ground_pts = GroundPoints.from_degrees([p[0] for p in PLACES], [p[1] for p in PLACES])
    g = ground_pts.itrs_km
    ground = []
    for j in range(N_GROUND):
        c = j % len(PLACES)
        k = N_ISL + j
        # the satellite nearest to the place at that time (a serving satellite's range)
        s = int(np.argmin(np.linalg.norm(pos[:, k] - g[c], axis=1)))
        km = float(np.linalg.norm(pos[s, k] - g[c]))
        ground.append([PLACES[c][0], PLACES[c][1], s, int(t[k]), km / SPEED_OF_LIGHT_KM_S * 1e9])
    return {"format": "satpage-link-vectors/1", "constellation": CONSTELLATION, "epoch": EPOCH,
            "ephemeris": "live_ephemeris.bin", "speed_of_light_km_s": SPEED_OF_LIGHT_KM_S,
            "isl": isl, "ground": ground}


def render(v: dict) -> str:
    head = {k: x for k, x in v.items() if k not in ("isl", "ground")}
    isl = ",\n".join("  " + json.dumps(e) for e in v["isl"])
    ground = ",\n".join("  " + json.dumps(e) for e in v["ground"])
    return json.dumps(head)[:-1] + f', "isl": [\n{isl}\n], "ground": [\n{ground}\n]}}\n'


if __name__ == "__main__":
    v = vectors()
    (HERE / "link_vectors.json").write_text(render(v))
    print(f"wrote {HERE / 'link_vectors.json'}: {len(v['isl'])} ISL and {len(v['ground'])} ground delays")
