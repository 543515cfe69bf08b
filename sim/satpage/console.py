"""Terminal I/O shared by the commands: results on stdout, progress and logs on stderr."""

from __future__ import annotations

import json
import logging
import sys
from typing import Any, NoReturn

import numpy as np
import typer
from rich.console import Console
from rich.logging import RichHandler
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

__all__ = ["stdout", "stderr", "fail", "print_json", "progress", "setup_logging", "to_jsonable",
           "reflow"]

stdout = Console()
stderr = Console(stderr=True)


def setup_logging(verbose: bool = False) -> None:
    """Log to stderr through rich; ``--verbose`` shows DEBUG."""
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(message)s",
        handlers=[RichHandler(console=stderr, show_path=False)],
        force=True,
    )


def fail(message: str, code: int = 2) -> NoReturn:
    """Print ``error: message`` on stderr and exit (2 = bad input, as click does)."""
    # soft_wrap: an error names a path or value that scripts grep for; never break it.
    stderr.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def reflow(text: str) -> str:
    """Help text as paragraphs for rich to wrap at the terminal's width: the line breaks
    of a docstring's source are joined (rich would keep them and break sentences), blank
    lines between paragraphs and lines starting a list item (``- ``) kept."""
    import inspect

    paragraphs = []
    for para in inspect.cleandoc(text).split("\n\n"):
        lines: list[str] = []
        for line in para.splitlines():
            line = line.strip()
            if lines and not line.startswith("- "):
                lines[-1] += " " + line
            else:
                lines.append(line)
        paragraphs.append("\n".join(lines))
    return "\n\n".join(paragraphs)


def to_jsonable(obj: Any) -> Any:
    """NumPy scalars and arrays to plain Python, recursively."""
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return to_jsonable(obj.tolist())
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    return obj


def print_json(obj: Any) -> None:
    """One JSON object on stdout, nothing else there."""
    sys.stdout.write(json.dumps(to_jsonable(obj), indent=2) + "\n")
    sys.stdout.flush()


def progress(**kwargs: Any) -> Progress:
    """A rich progress bar on stderr (hidden when stderr is not a terminal and CI is set)."""
    return Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=stderr,
        transient=False,
        **kwargs,
    )
