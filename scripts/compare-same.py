#!/usr/bin/env python3
"""Checks that a change leaves `satpage compare --json` the same, timing aside.

    scripts/compare-same.py record DIR     # run the cases, write DIR/<case>.json
    scripts/compare-same.py check DIR      # run them again, diff against DIR

The cases: the default scenario, the `faults` scenario, and the default scenario with
every built-in strategy setting and the link model off their defaults (smaller, so the
three run in a few minutes on two cores). The runs use `.venv/bin/satpage` of the
working directory (override with $SATPAGE). Top-level keys that differ from run to run
(IGNORED: wall times, the code version, peak memory) are left out, and the scenario
file is compared by its name (checkouts differ in where they are); every other byte of
the JSON must be equal.

Exit 0 when every case is equal, 1 when one differs (the differing dotted keys are
printed, at most 20 per case), 2 on bad arguments.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

IGNORED = ("version", "timing_s", "memory")

CASES: dict[str, list[str]] = {
    "default": ["default"],
    "faults": ["faults", "--sessions", "600"],
    "settings": ["default", "--sessions", "600",
                 "--set", "strategies.hot_k=8", "--set", "strategies.push_recent_visits=2",
                 "--set", "strategies.push_lead_s=4.0", "--set", "strategies.custody_pages=16",
                 "--set", "strategies.idle_threshold=0.3",
                 "--set", "network.background_load=0.4", "--set", "network.isl_capacity_gbps=0.2",
                 "--set", "network.load_bins=24"],
}


def run(case: str) -> dict:
    exe = os.environ.get("SATPAGE", ".venv/bin/satpage")
    cmd = [exe, "compare", *CASES[case], "--json"]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    data = json.loads(done.stdout)
    if data.get("scenario_file"):
        data["scenario_file"] = Path(data["scenario_file"]).name
    return {k: v for k, v in data.items() if k not in IGNORED}


def canonical(data: dict) -> str:
    return json.dumps(data, indent=1, sort_keys=False) + "\n"


def differences(a, b, path: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in list(dict.fromkeys([*a, *b])):
            key = f"{path}.{k}" if path else str(k)
            if k not in a or k not in b:
                out.append(f"{key}: only in {'new' if k in b else 'recorded'}")
            else:
                out.extend(differences(a[k], b[k], key))
        if not out and list(a) != list(b):
            out.append(f"{path or '(top)'}: same keys in another order")
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True))
                for d in differences(x, y, f"{path}[{i}]")]
    return [] if json.dumps(a) == json.dumps(b) else [f"{path}: recorded {a!r}, new {b!r}"]


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("record", "check"):
        print(__doc__, file=sys.stderr)
        return 2
    mode, folder = argv[0], Path(argv[1])
    if mode == "check" and not folder.is_dir():
        print(f"compare-same: {folder}: no such folder (run `record` first)", file=sys.stderr)
        return 2
    folder.mkdir(parents=True, exist_ok=True)
    bad = 0
    for case in CASES:
        got = canonical(run(case))
        path = folder / f"{case}.json"
        if mode == "record":
            path.write_text(got)
            print(f"{case}: recorded {path}")
            continue
        want = path.read_text()
        if got == want:
            print(f"{case}: same")
            continue
        bad += 1
        diffs = differences(json.loads(want), json.loads(got)) or ["(bytes differ)"]
        print(f"{case}: DIFFERENT in {len(diffs)} place(s)")
        for d in diffs[:20]:
            print(f"  {d}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
