"""The replay vectors in services/testdata/replay_vectors.json, which the Go test
ReplayVectors replays in-process, are still what the engine computes."""

from pathlib import Path

from satpage.replayvectors import write_replay_test_vectors

VECTORS = Path(__file__).resolve().parents[2] / "services" / "testdata" / "replay_vectors.json"


def test_the_replay_vectors_are_the_engines_counts_now(tmp_path):
    write_replay_test_vectors(tmp_path / "fresh.json")
    assert VECTORS.read_bytes() == (tmp_path / "fresh.json").read_bytes(), \
        "run services/testdata/make_replay_vectors.py"


def test_the_vectors_lose_pages_at_one_replica_and_none_at_two():
    import json

    doc = json.loads(VECTORS.read_text())
    lost = {(c["strategy"], c["replicas"]): c["want"]["pages_lost"] for c in doc["cases"] if c["failures"]}
    assert lost[("on-demand", 1)] > 0
    assert lost[("on-demand", 2)] == lost[("proactive", 2)] == 0
    # where nothing is lost, the failures change no count: the failure-free run's
    free = {(c["strategy"], c["replicas"]): c["want"] for c in doc["cases"] if not c["failures"]}
    for c in doc["cases"]:
        if c["failures"] and c["replicas"] == 2:
            assert c["want"] == free[(c["strategy"], 2)], c["name"]
