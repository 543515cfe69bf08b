"""The link test vectors in services/testdata (one-way ISL and ground-link delays,
distance / c from SGP4 positions at times between the ephemeris' knots), which the
Go link emulator (internal/linkemu) is tested against, are still what orbit_model
computes."""

import importlib.util
import json
from pathlib import Path

import numpy as np

TESTDATA = Path(__file__).resolve().parents[2] / "services" / "testdata"


def _maker():
    spec = importlib.util.spec_from_file_location("make_link_vectors", TESTDATA / "make_link_vectors.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_orbit_model_still_reproduces_the_link_vectors():
    fresh = json.loads(json.dumps(_maker().vectors()))
    stored = json.loads((TESTDATA / "link_vectors.json").read_text())
    for key in ("format", "constellation", "epoch", "ephemeris", "speed_of_light_km_s"):
        assert stored[key] == fresh[key]
    for key in ("isl", "ground"):
        a, b = np.array(stored[key]), np.array(fresh[key])
        np.testing.assert_array_equal(a[:, :-1], b[:, :-1])
        np.testing.assert_allclose(a[:, -1], b[:, -1], atol=0.01)  # delay_ns: 3 mm
