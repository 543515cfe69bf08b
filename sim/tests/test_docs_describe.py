"""Docs describe the system as it is: no "issue N" a reader cannot follow, no dated
run logs. History (which run, when, on which commit) lives in the git log.

A plain scan of the files; imports nothing from the packages, so it is a unit test.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: what a reader cannot follow or what only dates a run
FORBIDDEN = {
    "issue reference": re.compile(r"\b[Ii]ssues? \d+"),
    "'quiet measurement'": re.compile(r"quiet measurement", re.IGNORECASE),
    "UTC timestamp of a run": re.compile(r"\bUTC\b"),
    # a date of its own, not one inside a data file's name (tle/starlink-2022-09-14)
    "dated heading": re.compile(r"^#+ .*(?<![\w/-])\d{4}-\d{2}-\d{2}\b"),
    "dated 'later' entry": re.compile(r"\b\d{4}-\d{2}-\d{2}, later\b"),
    # a run transcript's voice: what else the machine did, which change a run followed
    "'from other work'": re.compile(r"from other (?:work|jobs)", re.IGNORECASE),
    "'with the code that added'": re.compile(r"with the code that added", re.IGNORECASE),
    "'this week'": re.compile(r"\bthis week\b", re.IGNORECASE),
}

#: UTC as a time scale, not as the time of a run
UTC_AS_A_CONCEPT = re.compile(
    r"a UTC instant|UTC Julian dates|UTC when no offset|ISO 8601 UTC"
)


def described_files() -> list[Path]:
    """docs/, every README the reader meets first, and the Makefile's help texts."""
    patterns = (
        "docs/**/*.md",
        "README.md",
        "*/README.md",
        "sim/*/README.md",
        "charts/*/README.md",
        "Makefile",
    )
    found: set[Path] = set()
    for pattern in patterns:
        found.update(p for p in ROOT.glob(pattern) if p.is_file())
    return sorted(found)


def offences(path: Path, root: Path = ROOT) -> list[str]:
    """One "file:line: what 'match': line" per forbidden thing in path."""
    out = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        for what, pattern in FORBIDDEN.items():
            match = pattern.search(line)
            if match is None:
                continue
            if what.startswith("UTC") and UTC_AS_A_CONCEPT.search(line):
                continue
            where = path.relative_to(root)
            out.append(f"{where}:{number}: {what} {match.group(0)!r}: {line.strip()[:100]}")
    return out


def test_the_scan_covers_the_docs_and_readmes():
    names = {str(p.relative_to(ROOT)) for p in described_files()}
    for expected in ("README.md", "Makefile", "docs/deploy.md", "docs/strategies.md",
                     "bench/README.md", "sim/README.md", "charts/satpage/README.md"):
        assert expected in names, f"{expected} is not scanned: {sorted(names)}"


def test_the_patterns_catch_what_they_forbid(tmp_path):
    sample = tmp_path / "sample.md"
    sample.write_text(
        "### 2026-11-24, later: a loss (issue 15)\n"
        "## tle/starlink-2022-09-14.tle: a data file's name is fine\n"
        "PASSED at 08:43-08:47 UTC on a quiet measurement\n"
        "Time is nanoseconds from the scenario epoch (a UTC instant).\n"
        "Run with the code that added it, at load average 52 from other work.\n"
        "A whole-tree read this week found it.\n",
        encoding="utf-8",
    )
    found = offences(sample, root=tmp_path)
    text = "\n".join(found)
    for what in ("issue reference", "dated heading", "dated 'later' entry",
                 "'quiet measurement'", "'from other work'", "'with the code that added'",
                 "'this week'"):
        assert what in text, found
    assert [f.split(":")[1] for f in found if "UTC timestamp" in f] == ["3"], found
    assert all(f.startswith("sample.md:") for f in found), found


def test_docs_hold_no_issue_numbers_or_dated_run_logs():
    found = [o for path in described_files() for o in offences(path)]
    assert not found, (
        "docs describe the system as it is: rewrite each passage as what was decided, "
        "why, and its numbers (history belongs in the git log):\n  " + "\n  ".join(found)
    )


def test_the_compare_speed_figures_are_those_bench_wrote():
    """docs/strategies.md quotes each bench/results/compare-baseline-*.json (written by
    ``make bench-compare-baseline``) as the file holds it, one line a file."""
    import json

    doc = (ROOT / "docs" / "strategies.md").read_text(encoding="utf-8")
    files = sorted((ROOT / "bench" / "results").glob("compare-baseline-*.json"))
    assert files, "bench/results holds no compare-baseline-*.json"
    for path in files:
        r = json.loads(path.read_text(encoding="utf-8"))
        cpu = r["best_cpu_s"]
        line = (f"- `{path.name}`: {cpu['baseline']:.2f} s at {r['baseline_rev']}, "
                f"{cpu['current']:.2f} s here, ratio {r['cpu_current_over_baseline']:.3f}")
        assert line in doc, f"docs/strategies.md should hold the line\n{line}"
