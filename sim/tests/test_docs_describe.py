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
    "issue reference": re.compile(r"\b[Ii]ssues?\s+\d+"),
    "'quiet measurement'": re.compile(r"quiet\s+measurement", re.IGNORECASE),
    "UTC timestamp of a run": re.compile(r"\bUTC\b"),
    # a date of its own, not one inside a data file's name (tle/starlink-2022-09-14)
    "dated heading": re.compile(r"^#+ .*(?<![\w/-])\d{4}-\d{2}-\d{2}\b", re.MULTILINE),
    "dated 'later' entry": re.compile(r"\b\d{4}-\d{2}-\d{2}, later\b"),
    # a run transcript's voice: what else the machine did, which change a run followed
    "'from other work'": re.compile(r"from\s+other\s+(?:work|jobs)", re.IGNORECASE),
    "'with the code that added'": re.compile(r"with\s+the\s+code\s+that\s+added", re.IGNORECASE),
    "'this week'": re.compile(r"\bthis\s+week\b", re.IGNORECASE),
    # the machine's load during one run ("load average 47", "at load 40", "(load 13-47)",
    # "load averages of 40 to 90"): a run condition, which a results file records
    # (bench/results/*.json's load_average, an e2e summary's load_at_*), not a doc. Prose
    # about the load without a figure of it stays ("the load average is in the JSON").
    "load figure of a run": re.compile(
        r"\bload(?:\s+averages?)?(?:,?\s+(?:of|at|about|around|near|was|is|still|falling|rising|"
        r"from|under|over|between|up\s+to|to|roughly))*[\s~]+\d", re.IGNORECASE),
    # a clock time ("the 10:53 run", "06:37:18", "18:11-18:12"); not an address's port
    # (10.96.0.10:53) nor a quoted duration ("02:00:00")
    "clock time of a run": re.compile(r"(?<![\w.:/\"'-])[0-2]\d:[0-5]\d(?::[0-5]\d)?(?![\w:\"']|\.\d)"),
    # what else the machine was doing during one run
    "run condition": re.compile(
        r"nothing\s+else\s+(?:was\s+)?running|\b(?:a|an|the)\s+(?:quiet|idle)\s+machine|"
        r"alone\s+on\s+the\s+machine|the\s+lead's\s+runs?\b", re.IGNORECASE),
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
    """One "file:line: what 'match': line" per forbidden thing in path. The patterns
    see the whole text, so a phrase that a line break splits ("at load\naverage 30")
    is found too, at the line where it starts."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    out = []
    for what, pattern in FORBIDDEN.items():
        for match in pattern.finditer(text):
            number = text.count("\n", 0, match.start()) + 1
            line = lines[number - 1]
            if what.startswith("UTC") and UTC_AS_A_CONCEPT.search(line):
                continue
            where = path.relative_to(root)
            out.append(f"{where}:{number}: {what} {' '.join(match.group(0).split())!r}: "
                       f"{line.strip()[:100]}")
    return sorted(out, key=lambda o: int(o.split(":")[1]))


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
        "A whole-tree read this week found it.\n"
        "| phase | run 1 (load 40) | run 2 (load 61-80) |\n"
        "kubelet ran its probes late at load averages of\n"
        "40 to 90, and satpage-43 logged ready at 06:37:18.\n"
        "Two runs with nothing else running on the machine; the lead's runs.\n"
        # what a doc may say: no figure of one run's load, an address, a quoted duration
        "The machine's load average at each moment is recorded in the JSON (`load_average`).\n"
        "Lookups failed (`lookup on 10.96.0.10:53: i/o timeout`); `walltime=\"02:00:00\"`.\n"
        "Each ISL carries a background load of its own; a loaded machine stretches the start.\n",
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
    lines = {what: sorted({int(f.split(":")[1]) for f in found if f": {what} '" in f})
             for what in ("load figure of a run", "clock time of a run", "run condition")}
    # the figure split over two lines is found where it starts (line 8)
    assert lines == {"load figure of a run": [5, 7, 8], "clock time of a run": [3, 9],
                     "run condition": [10]}, found
    assert not [f for f in found if int(f.split(":")[1]) > 10], found


def test_docs_hold_no_issue_numbers_or_dated_run_logs():
    found = [o for path in described_files() for o in offences(path)]
    assert not found, (
        "docs describe the system as it is: rewrite each passage as what was decided, "
        "why, and its numbers (history belongs in the git log):\n  " + "\n  ".join(found)
    )


def _bench_compare():
    """bench/bench_compare.py as a module (its top level imports the standard library only)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_compare", ROOT / "bench" / "bench_compare.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_compare_speed_figures_are_those_bench_wrote():
    """docs/strategies.md quotes each bench/results/compare-baseline-*.json (written by
    ``make bench-compare-baseline``) as the file holds it, one line a file, and the
    default and the large scenario both have their file."""
    bench = _bench_compare()
    doc = (ROOT / "docs" / "strategies.md").read_text(encoding="utf-8")
    names = sorted(p.name for p in (ROOT / "bench" / "results").glob("compare-baseline-*.json"))
    assert {"compare-baseline-default.json", "compare-baseline-large.json"} <= set(names), names
    block = bench.doc_block(ROOT / "bench" / "results")
    assert block in doc, f"docs/strategies.md should hold, as bench_compare.py writes it:\n{block}"


def test_the_compare_speed_line_says_what_the_run_was(tmp_path):
    """A file that records its size gets it in its line; the block is rewritten in place."""
    bench = _bench_compare()
    r = {"baseline_rev": "abc1234", "scenario": "large", "best_cpu_s": {"baseline": 40.0, "current": 41.234},
         "cpu_current_over_baseline": 41.234 / 40.0,
         "size": {"satellites": 3023, "sessions": 2000, "hours": 1.0, "strategies": 5, "processes": 2,
                  "accesses": 1}}
    assert bench.doc_line("compare-baseline-large.json", r) == (
        "- `compare-baseline-large.json`: large, 3,023 satellites, 2,000 sessions over 1 h, "
        "5 strategies, 2 processes; 40.00 s at abc1234, 41.23 s here, ratio 1.031")
    results = tmp_path / "results"
    results.mkdir()
    (results / "compare-baseline-large.json").write_text(__import__("json").dumps(r))
    doc = tmp_path / "doc.md"
    doc.write_text(f"before\n{bench.DOC_BEGIN}\n- an old line\n{bench.DOC_END}\nafter\n")
    bench.write_doc(doc, results)
    assert doc.read_text() == f"before\n{bench.doc_block(results)}\nafter\n"
    assert "- an old line" not in doc.read_text() and "ratio 1.031" in doc.read_text()
