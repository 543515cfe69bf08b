"""Write services/testdata/replay_vectors.json with sim's one writer of the replay
vectors (``satpage.replayvectors.write_replay_test_vectors``: sessions, strategy, R and
failures in, the engine's counts out). The Go test ReplayVectors
(internal/clustertest/replayvectors_test.go) replays them in-process;
sim/tests/test_replay_vectors.py checks the file against the writer.

Usage: .venv/bin/python services/testdata/make_replay_vectors.py
"""

from __future__ import annotations

import sys
from pathlib import Path

from satpage.replayvectors import write_replay_test_vectors

OUT = Path(__file__).resolve().parent / "replay_vectors.json"


def main() -> int:
    write_replay_test_vectors(OUT)
    print(OUT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
