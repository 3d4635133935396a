"""The ``zodbshootout`` command: a run, or a subcommand on saved runs.

A first word that names a subcommand (show, compare, plot, export,
history, cachesim) hands over to :mod:`zodbshootout.cli.subcommands`;
anything else is a run, :mod:`zodbshootout.cli.measure`.  Each is imported
only when chosen, so that ``show`` loads no ZODB, ZEO or RelStorage.  Only
cli/ prints: the table to stdout, progress and errors to stderr.  Exit
codes (:mod:`zodbshootout.errors`): 0 every cell measured, 1 some cells
failed (each says why) or a result file could not be saved, 2 nothing could
be run (bad usage, configuration or environment), 130/143 interrupted by
SIGINT/SIGTERM (what was measured is still printed).
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any

from zodbshootout.cli.subcommand_parser import SUBCOMMANDS
from zodbshootout.errors import (
    EXIT_CELLS_FAILED,
    EXIT_OK,
    EXIT_SIGINT,
    EXIT_SIGTERM,
    EXIT_USAGE,
)

__all__ = ["EXIT_CELLS_FAILED", "EXIT_OK", "EXIT_SIGINT", "EXIT_SIGTERM", "EXIT_USAGE", "main"]

#: Names this module used to define, now in the module of the run (imported on use).
_MOVED_TO_MEASURE = (
    "_run",
    "bind_optional_values",
    "build_parser",
    "exit_code",
    "format_progress",
    "options_from_args",
    "refuse_unmeasurable",
)


def __getattr__(name: str) -> Any:
    # Lazy import (PEP 562): the run machinery loads only when a run needs it.
    if name in _MOVED_TO_MEASURE:
        return getattr(importlib.import_module("zodbshootout.cli.measure"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main(argv: Sequence[str] | None = None) -> int:
    """The command: a run, or a subcommand; returns the exit code."""
    try:
        return _dispatch(list(sys.argv[1:] if argv is None else argv))
    except BrokenPipeError:
        # The reader went away (``zodbshootout show run.json | head``): stop
        # quietly, as other command-line tools do.  Point stdout at the null
        # device so that the interpreter's final flush doesn't fail again.
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
        return EXIT_CELLS_FAILED


def _dispatch(argv: list[str]) -> int:
    if argv and argv[0] in SUBCOMMANDS:
        from zodbshootout.cli.subcommands import main_subcommand

        return main_subcommand(argv)
    from zodbshootout.cli.measure import run_command

    return run_command(argv)
