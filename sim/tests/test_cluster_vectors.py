"""The shared +Grid vectors in services/testdata/isl_vectors.json, which the Go
daemon is tested against, are still what orbit_model computes, and come from the
same writer as orbit-model's copy."""

import json
from pathlib import Path

import numpy as np

from orbit_model.io import isl_test_vectors, write_isl_test_vectors

ROOT = Path(__file__).resolve().parents[2]
VECTORS = ROOT / "services" / "testdata" / "isl_vectors.json"


def test_both_copies_are_the_one_writers_output_byte_for_byte(tmp_path):
    write_isl_test_vectors(tmp_path / "fresh.json")
    fresh = (tmp_path / "fresh.json").read_bytes()
    assert VECTORS.read_bytes() == fresh, "run services/testdata/make_isl_vectors.py"
    assert (ROOT / "orbit-model" / "tests" / "data" / "isl_vectors.json").read_bytes() == fresh


def test_orbit_model_still_reproduces_the_go_test_vectors():
    stored = json.loads(VECTORS.read_text())
    fresh = json.loads(json.dumps(isl_test_vectors()))
    assert stored["format"] == fresh["format"]
    assert len(stored["cases"]) == len(fresh["cases"])
    for s, f in zip(stored["cases"], fresh["cases"], strict=True):
        assert (s["constellation"], s["latitude_cutoff_deg"], s["t_ns"]) == (
            f["constellation"], f["latitude_cutoff_deg"], f["t_ns"])
        assert s["neighbours"] == f["neighbours"], s["constellation"]
        assert s["hops"] == f["hops"], s["constellation"]
        np.testing.assert_allclose(s["satellite_latitude_deg"], f["satellite_latitude_deg"],
                                   atol=1e-5)


def test_the_vectors_cover_the_default_constellation_without_a_cut_off():
    stored = json.loads(VECTORS.read_text())
    assert any(c["constellation"] == "walker-star:150/10/1:500:87"
               and c["latitude_cutoff_deg"] is None for c in stored["cases"])


def test_chaos_cuts_the_isls_the_go_satellites_have():
    """chaos picks the ISLs it cuts (LocalCluster.isls) from orbit_model's +Grid: every case
    without a cut-off in the vectors (a star and a delta constellation, the latter with its
    seam links)."""
    from satpage.cluster.local import isls

    stored = json.loads(VECTORS.read_text())
    cases = [c for c in stored["cases"] if c["latitude_cutoff_deg"] is None]
    assert {c["constellation"].split(":")[0] for c in cases} == {"walker", "walker-star"}
    for c in cases:
        want = sorted({(a, b) for a, nbrs in enumerate(c["neighbours"]) for b in nbrs if a < b})
        assert isls(c["constellation"]) == want, c["constellation"]
