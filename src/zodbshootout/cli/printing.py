"""What a run prints, again by ``show``: its table on stdout, its warnings on stderr."""

from __future__ import annotations

import os
import shutil
import sys
from typing import Any, TextIO

from zodbshootout.cli.say import emit
from zodbshootout.render.formats import get_format
from zodbshootout.results.noise import format_busy_warning
from zodbshootout.results.record import RunResult
from zodbshootout.results.stats import format_spread_warning


def write_line(line: str, stream: TextIO | None = None) -> None:
    """*line* on *stream* (stderr), safe and whole (see :func:`zodbshootout.cli.say.emit`)."""
    emit(line, stream or sys.stderr)


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
        emit(line, stream, styled=color)


def print_spread_warning(result: RunResult, every: bool = False) -> None:
    """Tell the user on stderr which cells are too noisy to trust (the first few, or
    *every* one), and what to do; and whether the machine was busy while they were
    measured."""
    for index, line in enumerate(format_spread_warning(result, every=every)):
        emit(f"zodbshootout: {line}" if index == 0 else line, sys.stderr)
    for line in format_busy_warning(result.metadata):
        emit(f"zodbshootout: warning: {line}", sys.stderr)


def print_lines(lines: list[str]) -> None:
    """*lines* on stdout, one each, made safe for the terminal."""
    for line in lines:
        emit(line)


def _isatty(stream: Any) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty is not None and isatty())
