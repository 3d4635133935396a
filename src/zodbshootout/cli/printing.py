"""What a run prints, again by ``show``: its table on stdout, its warnings on stderr."""

from __future__ import annotations

import os
import shutil
import sys
import threading
from typing import Any, TextIO

from zodbshootout.render.formats import get_format
from zodbshootout.results.noise import format_busy_warning
from zodbshootout.results.record import RunResult
from zodbshootout.results.stats import format_spread_warning

#: Held while a line is written: progress comes from several threads at once
#: (a mix's progress thread beside its runner, workers run as --threads).
_LINE_LOCK = threading.Lock()


def write_line(line: str, stream: TextIO | None = None) -> None:
    """*line* and its newline in one write, under one lock: two never mix mid-line.

    ``print`` writes the text and the newline separately, so two threads
    printing at once can produce ``AB`` and two newlines.
    """
    stream = stream or sys.stderr
    with _LINE_LOCK:
        stream.write(line + "\n")
        stream.flush()


def print_table(
    result: RunResult, format_name: str, aggregate: str, stream: TextIO | None = None
) -> None:
    """Print the table to *stream* (stdout); the terminal table gets colours on a terminal."""
    stream = stream or sys.stdout
    color = _isatty(stream) and "NO_COLOR" not in os.environ
    # A file or a pipe gets the table's natural width: nothing is cut.
    width = shutil.get_terminal_size((100, 24)).columns if _isatty(stream) else None
    output = get_format(format_name).on_terminal(color, width)
    for line in output.run(result, aggregate):
        print(line, file=stream)


def print_spread_warning(result: RunResult, every: bool = False) -> None:
    """Tell the user on stderr which cells are too noisy to trust (the first few, or
    *every* one), and what to do; and whether the machine was busy while they were
    measured."""
    for index, line in enumerate(format_spread_warning(result, every=every)):
        print(f"zodbshootout: {line}" if index == 0 else line, file=sys.stderr)
    for line in format_busy_warning(result.metadata):
        print(f"zodbshootout: warning: {line}", file=sys.stderr)


def print_lines(lines: list[str]) -> None:
    """*lines* on stdout, one each."""
    for line in lines:
        print(line)


def _isatty(stream: Any) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty is not None and isatty())
