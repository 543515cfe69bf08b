"""Write services/testdata/isl_vectors.json with orbit_model's one writer of the +Grid
test vectors (``orbit_model.io.write_isl_test_vectors``, which also writes
orbit-model/tests/data/isl_vectors.json: the two files are the same bytes). The Go
constellation package must reproduce it (internal/constellation/vectors_test.go);
sim/tests/test_cluster_vectors.py checks both copies against the writer.

Usage: .venv/bin/python services/testdata/make_isl_vectors.py
"""

from __future__ import annotations

import sys
from pathlib import Path

from orbit_model.io import write_isl_test_vectors

OUT = Path(__file__).resolve().parent / "isl_vectors.json"


def main() -> int:
    write_isl_test_vectors(OUT)
    print(OUT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
