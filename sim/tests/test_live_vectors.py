"""The live test vectors in services/testdata (an ephemeris and the schedules
orbit_model gives from it), which the Go sky package is tested against, are still
what orbit_model computes; and the ephemeris format round-trips with its checks."""

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from orbit_model import Constellation, itrs_positions_km, parse_epoch
from orbit_model.io import read_ephemeris, write_ephemeris

TESTDATA = Path(__file__).resolve().parents[2] / "services" / "testdata"


def _maker():
    spec = importlib.util.spec_from_file_location("make_live_vectors", TESTDATA / "make_live_vectors.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_orbit_model_still_reproduces_the_live_vectors(tmp_path):
    fresh = _maker().vectors(tmp_path / "live_ephemeris.bin")
    stored = json.loads((TESTDATA / "live_vectors.json").read_text())
    assert stored["cases"] == json.loads(json.dumps(fresh["cases"]))
    a, b = read_ephemeris(TESTDATA / "live_ephemeris.bin"), read_ephemeris(tmp_path / "live_ephemeris.bin")
    assert (a.constellation, a.epoch, a.knot_ns, a.t0_ns) == (b.constellation, b.epoch, b.knot_ns, b.t0_ns)
    np.testing.assert_allclose(a.position_km, b.position_km, atol=1e-3)  # 1 m
    z = read_ephemeris(TESTDATA / "live_ephemeris_compressed.bin")
    np.testing.assert_array_equal(z.position_km, read_ephemeris(tmp_path / "live_ephemeris_compressed.bin").position_km)
    # rounding to the 1 m quantum plus float32's own rounding (0.25 m at 7000 km), twice
    np.testing.assert_allclose(z.position_km, a.position_km, atol=1e-3)


def test_an_ephemeris_holds_orbit_models_positions_at_its_knots(tmp_path):
    const = Constellation.from_spec("walker:24/4/1:700:55", epoch=parse_epoch("2026-03-01T00:00:00Z"))
    e = write_ephemeris(tmp_path / "e.bin", const, 600 * 10**9, knot_ns=60 * 10**9)
    back = read_ephemeris(tmp_path / "e.bin")
    assert back.position_km.shape == (11, 24, 3) and back.end_ns == 600 * 10**9
    assert (tmp_path / "e.bin").stat().st_size == len((tmp_path / "e.bin").read_bytes().split(b"\n")[0]) + 1 + 11 * 24 * 12
    want = itrs_positions_km(const, np.arange(11) * 60 * 10**9, knot_ns=None).transpose(1, 0, 2)
    np.testing.assert_allclose(back.position_km, want, atol=1e-3)
    np.testing.assert_array_equal(back.position_km, e.position_km)


def test_a_compressed_ephemeris_holds_the_same_positions_to_its_quantum_in_a_sixth_of_the_bytes(tmp_path):
    const = Constellation.from_spec("walker:24/4/1:700:55", epoch=parse_epoch("2026-03-01T00:00:00Z"))
    raw = write_ephemeris(tmp_path / "raw.bin", const, 6 * 3600 * 10**9)
    z = write_ephemeris(tmp_path / "z.bin", const, 6 * 3600 * 10**9, compress=True)
    back = read_ephemeris(tmp_path / "z.bin")
    np.testing.assert_array_equal(back.position_km, z.position_km)  # what the writer says it wrote
    np.testing.assert_allclose(back.position_km, raw.position_km, atol=1e-3)  # 1 m quantum
    header = json.loads((tmp_path / "z.bin").read_bytes().split(b"\n")[0])
    assert (header["dtype"], header["quantum_m"]) == ("delta5-i1-zlib", 1.0)
    assert (tmp_path / "z.bin").stat().st_size * 5 < (tmp_path / "raw.bin").stat().st_size
    coarse = write_ephemeris(tmp_path / "c.bin", const, 6 * 3600 * 10**9, compress=True, quantum_m=8.0)
    np.testing.assert_allclose(coarse.position_km, raw.position_km, atol=4.5e-3)


def test_a_compressed_body_that_does_not_decode_is_named(tmp_path):
    const = Constellation.from_spec("walker:24/4/1:700:55", epoch=parse_epoch("2026-03-01T00:00:00Z"))
    write_ephemeris(tmp_path / "z.bin", const, 3600 * 10**9, compress=True)
    head, body = (tmp_path / "z.bin").read_bytes().split(b"\n", 1)
    (tmp_path / "cut.bin").write_bytes(head + b"\n" + body[:-40])
    with pytest.raises(ValueError, match="do not inflate"):
        read_ephemeris(tmp_path / "cut.bin")
    (tmp_path / "q.bin").write_bytes(head.replace(b'"quantum_m":1.0', b'"quantum_m":0') + b"\n" + body)
    with pytest.raises(ValueError, match="quantum 0 m"):
        read_ephemeris(tmp_path / "q.bin")
    with pytest.raises(ValueError, match="quantum -1 m"):
        write_ephemeris(tmp_path / "e.bin", const, 3600 * 10**9, compress=True, quantum_m=-1)


def test_an_ephemeris_carries_a_reallocation_schedule_only_when_given(tmp_path):
    const = Constellation.from_spec("walker:24/4/1:700:55", epoch=parse_epoch("2026-03-01T00:00:00Z"))
    write_ephemeris(tmp_path / "a.bin", const, 600 * 10**9)
    write_ephemeris(tmp_path / "b.bin", const, 600 * 10**9, step_ns=3 * 10**9,
                    interval_ns=15 * 10**9, phase_ns=12 * 10**9)
    assert b"interval_ns" not in (tmp_path / "a.bin").read_bytes().split(b"\n")[0]
    a, b = read_ephemeris(tmp_path / "a.bin"), read_ephemeris(tmp_path / "b.bin")
    assert (a.interval_ns, a.phase_ns) == (0, 0)
    assert (b.interval_ns, b.phase_ns, b.step_ns) == (15 * 10**9, 12 * 10**9, 3 * 10**9)


@pytest.mark.parametrize("kwargs, message", [
    ({"policy": "trail"}, "trail"),
    ({"interval_ns": 15 * 10**9, "phase_ns": 12 * 10**9}, "multiples of the handover step"),
    ({"interval_ns": 15 * 10**9, "phase_ns": 15 * 10**9}, "phase 15000000000 ns must be in"),
    ({"knot_ns": 25 * 10**9}, "multiple of the handover step"),
    ({"t0_ns": 7}, "t0 7 ns"),
    ({"min_elevation_deg": 95.0}, "95.0"),
])
def test_bad_ephemeris_settings_are_named(tmp_path, kwargs, message):
    const = Constellation.from_spec("walker:24/4/1:700:55", epoch=parse_epoch("2026-03-01T00:00:00Z"))
    with pytest.raises(ValueError, match=message):
        write_ephemeris(tmp_path / "e.bin", const, 3600 * 10**9, **kwargs)
