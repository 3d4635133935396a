"""The one way cli/ prints a line: made safe for the terminal first.

Every line the command line prints may hold text from a file (a result
file's database names, labels, notes and metadata; a versions file; a
configuration; a file name of a directory), so each goes through
:func:`emit`, which shows control characters instead of sending them (see
:mod:`zodbshootout.render.safe_text`).  tests/unit/test_architecture.py
checks that nothing else in cli/ prints.  Result files written with ``-o``,
``--pyperf`` or ``export`` are data and keep their strings as they are.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import warnings
from collections.abc import Iterator
from typing import Any, TextIO

from zodbshootout.render.safe_text import terminal_safe, terminal_safe_styled

__all__ = ["emit", "emit_lines", "warnings_emitted"]

#: Held while a line is written (see :func:`emit`).
_LINE_LOCK = threading.Lock()


def emit(line: str, stream: TextIO | None = None, *, end: str = "\n", styled: bool = False) -> None:
    """Print *line* (one line: a newline inside it is shown, not obeyed) to *stream*
    (stdout).  *styled*: keep colour sequences, for a format that made its data safe."""
    safe = terminal_safe_styled(line) if styled else terminal_safe(line)
    stream = stream or sys.stdout
    # One write under one lock: progress comes from several threads at once (a
    # mix's progress thread beside its runner, --threads workers), and print's
    # separate writes of the text and the newline could mix two lines.
    with _LINE_LOCK:
        stream.write(safe + end)
        stream.flush()


def emit_lines(text: str, stream: TextIO | None = None) -> None:
    """Print *text* of several lines (a traceback, an installer's output), each made safe."""
    for line in text.splitlines():
        emit(line, stream)


@contextlib.contextmanager
def warnings_emitted() -> Iterator[None]:
    """Python warnings (a library's: matplotlib's missing glyph names the character)
    printed as one safe line each on stderr, while the command runs."""
    shown = warnings.showwarning

    def show(message: Any, category: type[Warning], *_where: Any, **_kw: Any) -> None:
        emit(f"zodbshootout: warning: {category.__name__}: {message}", sys.stderr)

    warnings.showwarning = show
    try:
        yield
    finally:
        warnings.showwarning = shown
