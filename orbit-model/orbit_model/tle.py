"""Reading CelesTrak-style element files: two-line and three-line (name + 2) TLEs.

Every malformed line is reported with the file name and the 1-based line
number: bad checksum, wrong column layout, a line 2 without its line 1,
mismatched catalogue numbers. Blank lines are skipped; any other line that is
not a TLE line is a satellite name (``0 NAME`` as in CelesTrak 3LE is accepted).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from os import PathLike
from pathlib import Path

__all__ = ["TleRecord", "read_tle_file", "parse_tle_lines", "tle_checksum"]

# Fixed columns of the two TLE lines (0-based), per the NORAD/CelesTrak format:
# the blanks and decimal points a well-formed line always has.
_LINE1 = re.compile(r"^1 [ 0-9A-Z]{5}[A-Z ] .{8} [ 0-9]{5}\.[ 0-9]{8} [ +-]\.[0-9]{8} [ +-][ 0-9]{5}[+-][0-9] [ +-][ 0-9]{5}[+-][0-9] [ 0-9] [ 0-9]{4}[0-9]$")
_LINE2 = re.compile(r"^2 [ 0-9A-Z]{5} [ 0-9]{3}\.[ 0-9]{4} [ 0-9]{3}\.[ 0-9]{4} [0-9]{7} [ 0-9]{3}\.[ 0-9]{4} [ 0-9]{3}\.[ 0-9]{4} [ 0-9]{2}\.[ 0-9]{8}[ 0-9]{5}[0-9]$")


@dataclass(frozen=True)
class TleRecord:
    """One element set as read: the name (may be empty), both lines, where it came from."""

    name: str
    line1: str
    line2: str
    source: str
    line_number: int  # 1-based line number of line 1 in ``source``


def tle_checksum(line: str) -> int:
    """The modulo-10 checksum of the first 68 columns: digits count their value, '-' counts 1."""
    total = 0
    for char in line[:68]:
        if char.isdigit():
            total += int(char)
        elif char == "-":
            total += 1
    return total % 10


def _check_line(line: str, number: int, pattern: re.Pattern, where: str) -> None:
    if len(line) != 69:
        raise ValueError(
            f"{where}: TLE line {number} has {len(line)} columns, expected 69: {line!r}"
        )
    if not pattern.match(line):
        raise ValueError(f"{where}: TLE line {number} does not have the TLE column layout: {line!r}")
    expected = tle_checksum(line)
    if int(line[68]) != expected:
        raise ValueError(
            f"{where}: bad checksum in TLE line {number} (column 69 is {line[68]}, "
            f"the line sums to {expected}): {line!r}"
        )


def parse_tle_lines(lines: list[str], source: str = "<string>") -> list[TleRecord]:
    """Parse the lines of a 2LE or 3LE file into records, checking every line."""
    records: list[TleRecord] = []
    name = ""
    pending: tuple[str, int] | None = None  # line 1 waiting for its line 2
    for index, raw in enumerate(lines, start=1):
        line = raw.rstrip("\r\n").rstrip()
        where = f"{source} line {index}"
        if not line.strip():
            continue
        if line.startswith("1 ") and len(line) >= 60:
            if pending is not None:
                raise ValueError(f"{source} line {pending[1]}: TLE line 1 without a line 2")
            _check_line(line, 1, _LINE1, where)
            pending = (line, index)
        elif line.startswith("2 ") and len(line) >= 60:
            if pending is None:
                raise ValueError(f"{where}: TLE line 2 without a line 1: {line!r}")
            _check_line(line, 2, _LINE2, where)
            line1, first = pending
            if line1[2:7] != line[2:7]:
                raise ValueError(
                    f"{where}: catalogue number {line[2:7]!r} of line 2 differs from "
                    f"{line1[2:7]!r} in line 1 (line {first})"
                )
            records.append(TleRecord(name, line1, line, source, first))
            name, pending = "", None
        else:
            if pending is not None:
                raise ValueError(f"{source} line {pending[1]}: TLE line 1 without a line 2")
            if line[0] in "12" and line[1:2] == " ":
                raise ValueError(f"{where}: truncated TLE line ({len(line)} columns): {line!r}")
            name = line[2:].strip() if line.startswith("0 ") else line.strip()
    if pending is not None:
        raise ValueError(f"{source} line {pending[1]}: TLE line 1 without a line 2")
    return records


def read_tle_file(path: str | PathLike) -> list[TleRecord]:
    """All element sets of a file; ``ValueError`` names the file and line of the first problem."""
    path = Path(path)
    text = path.read_text(encoding="ascii", errors="replace")
    records = parse_tle_lines(text.splitlines(), source=str(path))
    if not records:
        raise ValueError(f"{path}: no TLE element sets found")
    return records
