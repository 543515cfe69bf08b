"""Write services/testdata/isl_vectors.json from orbit_model (the authority for
the +Grid topology); the Go constellation package must reproduce it
(internal/constellation/vectors_test.go) and sim/tests/test_cluster_vectors.py
checks that orbit_model still does.

Usage: .venv/bin/python services/testdata/make_isl_vectors.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from orbit_model.isl import isl_test_vectors

OUT = Path(__file__).resolve().parent / "isl_vectors.json"


def render(vectors: dict) -> str:
    """JSON with one matrix row per line: small diffs, and still plain JSON."""
    lines = ["{"]
    head = {k: v for k, v in vectors.items() if k != "cases"}
    for k, v in head.items():
        lines.append(f" {json.dumps(k)}: {json.dumps(v)},")
    lines.append(' "cases": [')
    for ci, case in enumerate(vectors["cases"]):
        lines.append("  {")
        items = list(case.items())
        for ii, (k, v) in enumerate(items):
            end = "," if ii < len(items) - 1 else ""
            if k in ("neighbours", "hops"):
                rows = ",\n    ".join(json.dumps(r, separators=(",", ":")) for r in v)
                lines.append(f"   {json.dumps(k)}: [\n    {rows}\n   ]{end}")
            else:
                lines.append(f"   {json.dumps(k)}: {json.dumps(v, separators=(',', ':'))}{end}")
        lines.append("  }" + ("," if ci < len(vectors["cases"]) - 1 else ""))
    lines.append(" ]")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main() -> int:
    OUT.write_text(render(isl_test_vectors()), encoding="utf-8")
    print(OUT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
