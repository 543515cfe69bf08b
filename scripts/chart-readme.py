#!/usr/bin/env python3
"""Generate the values table of a chart README from the `# --` comments in values.yaml.

helm-docs conventions: a comment line starting with ``# --`` documents the key on
the next non-comment line (following ``#`` lines continue it); a documented map
is one row holding its whole default. The table goes between the markers
``<!-- values:start -->`` and ``<!-- values:end -->`` of README.md.

Usage: chart-readme.py CHART_DIR [--check]    (--check: exit 1 when README.md is stale)
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import yaml

__all__ = ["documented_keys", "render_table"]

START, END = "<!-- values:start -->", "<!-- values:end -->"
_KEY = re.compile(r"^(\s*)([A-Za-z0-9_.-]+):(.*)$")


def documented_keys(values_text: str) -> list[tuple[str, str]]:
    """(dotted key, description) for every documented key, in file order."""
    out: list[tuple[str, str]] = []
    stack: list[tuple[int, str]] = []  # (indent, key) of the enclosing maps
    pending: list[str] | None = None
    for line in values_text.splitlines():
        stripped = line.strip()
        if stripped.startswith("# --"):
            pending = [stripped[4:].strip()]
            continue
        if stripped.startswith("#"):
            if pending is not None:
                pending.append(stripped[1:].strip())
            continue
        m = _KEY.match(line)
        if not m:
            if stripped and not stripped.startswith("-"):
                pending = None
            continue
        indent, key = len(m.group(1)), m.group(2)
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = ".".join([k for _, k in stack] + [key])
        if pending is not None:
            out.append((path, " ".join(p for p in pending if p)))
            pending = None
        stack.append((indent, key))
    return out


def _lookup(values: dict, path: str):
    node = values
    for part in path.split("."):
        node = node[part]
    return node


def _type(value) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    if value is None:
        return "string"
    return "object"


def render_table(values_text: str) -> str:
    """The Markdown table: Key | Type | Default | Description."""
    values = yaml.safe_load(values_text)
    rows = ["| Key | Type | Default | Description |", "|-----|------|---------|-------------|"]
    for path, desc in documented_keys(values_text):
        value = _lookup(values, path)
        default = json.dumps(value, separators=(",", ":")).replace("|", "\\|")
        # helm-docs: "# -- (type) text" names the type of a key whose default hides it (null).
        typ = _type(value)
        if m := re.match(r"^\((\w+)\)\s*", desc):
            typ, desc = m.group(1), desc[m.end():]
        desc = desc.replace("|", "\\|")
        rows.append(f"| {path} | {typ} | `{default}` | {desc} |")
    return "\n".join(rows) + "\n"


def main(argv: list[str]) -> int:
    if not argv or argv[0].startswith("-"):
        print(__doc__, file=sys.stderr)
        return 2
    chart = Path(argv[0])
    readme = chart / "README.md"
    text = readme.read_text()
    if START not in text or END not in text:
        print(f"chart-readme: {readme} has no {START} ... {END} markers", file=sys.stderr)
        return 2
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    new = head + START + "\n" + render_table((chart / "values.yaml").read_text()) + END + tail
    if "--check" in argv:
        if new != text:
            print(f"chart-readme: {readme} is stale: run scripts/chart-readme.py {chart}", file=sys.stderr)
            return 1
        return 0
    readme.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
