"""The ``zodbshootout`` command: a run, or a subcommand.

A first word that names a subcommand (a key of
:data:`zodbshootout.cli.commands.COMMANDS`) hands over to
:mod:`zodbshootout.cli.subcommand`; anything else is a run,
:mod:`zodbshootout.cli.measure`.  Each is imported only when chosen, so that
``show`` loads no ZODB, ZEO or RelStorage.  Only cli/ prints: the table to
stdout, progress and errors to stderr.  Exit codes
(:mod:`zodbshootout.errors`): 0 every cell measured, 1 some cells failed
(each says why) or a result file could not be saved, 2 nothing could be run
(bad usage, configuration or environment), 130/143 interrupted by
SIGINT/SIGTERM (what was measured is still printed).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from zodbshootout.cli.commands import COMMANDS
from zodbshootout.errors import (
    EXIT_CELLS_FAILED,
    EXIT_OK,
    EXIT_SIGINT,
    EXIT_SIGTERM,
    EXIT_USAGE,
)

__all__ = ["EXIT_CELLS_FAILED", "EXIT_OK", "EXIT_SIGINT", "EXIT_SIGTERM", "EXIT_USAGE", "main"]


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
    if argv and argv[0] in COMMANDS:
        from zodbshootout.cli.subcommand import run_subcommand

        return run_subcommand(argv)
    from zodbshootout.cli.measure import run_command

    return run_command(argv)
