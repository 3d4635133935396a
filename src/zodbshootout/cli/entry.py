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

import argparse
import os
import sys
from collections.abc import Sequence

from zodbshootout.cli.commands import COMMANDS
from zodbshootout.cli.say import emit, warnings_emitted
from zodbshootout.errors import (
    EXIT_CELLS_FAILED,
    EXIT_OK,
    EXIT_SIGINT,
    EXIT_SIGTERM,
    EXIT_USAGE,
    UsageError,
)
from zodbshootout.outputfile import output_claims

__all__ = ["EXIT_CELLS_FAILED", "EXIT_OK", "EXIT_SIGINT", "EXIT_SIGTERM", "EXIT_USAGE", "main"]


def main(argv: Sequence[str] | None = None) -> int:
    """The command: a run, or a subcommand; returns the exit code."""
    try:
        # Every output the command writes is its own until it ends (see outputfile).
        with output_claims(), warnings_emitted():
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
    if argv and argv[0].startswith("-"):
        try:
            argv = _subcommand_first(argv)
        except UsageError as e:
            emit(f"zodbshootout: error: {e}", sys.stderr)
            return EXIT_USAGE
    if argv and argv[0] in COMMANDS:
        from zodbshootout.cli.subcommand import run_subcommand

        return run_subcommand(argv)
    from zodbshootout.cli.measure import run_command

    return run_command(argv)


def _subcommand_first(argv: list[str]) -> list[str]:
    """``--debug mix CONFIG`` as ``mix --debug CONFIG``: options before a subcommand are its own.

    The first word that is not an option nor an option's value names the
    subcommand or is a run's CONFIG; which options take a value is the run's
    parser's to say (``--label mix CONFIG`` is a run labelled "mix").  An
    option before the subcommand that it does not have is a UsageError.
    """
    from zodbshootout.cli.arguments import build_parser

    index, options = _leading_options(argv, build_parser()._option_string_actions)
    if index >= len(argv) or argv[index] not in COMMANDS:
        return argv
    name = argv[index]
    from zodbshootout.cli.commands import load_command
    from zodbshootout.cli.subcommand import build_subcommand_parser

    known = build_subcommand_parser(name, load_command(name))._option_string_actions
    for option in options:
        if _action(known, option) is None:
            raise UsageError(
                f"{option} is not an option of {name}: write options after the subcommand "
                f"(see zodbshootout {name} --help)"
            )
    return [name, *argv[:index], *argv[index + 1 :]]


def _leading_options(argv: list[str], actions: dict[str, argparse.Action]) -> tuple[int, list[str]]:
    """The index of the first word that is no option nor an option's value, and the options."""
    index, options = 0, []
    while index < len(argv):
        word = argv[index]
        if word == "--" or not word.startswith("-") or word == "-":
            break
        options.append(word.split("=", 1)[0])
        action = _action(actions, word)
        following = argv[index + 1] if index + 1 < len(argv) else ""
        nargs = action.nargs if action is not None and "=" not in word else 0
        if nargs != 0 and (nargs != "?" or following not in COMMANDS):
            index += 1  # its value
        index += 1
    return index, options


def _action(actions: dict[str, argparse.Action], word: str) -> argparse.Action | None:
    """The action of *word* (``--label``, ``--lab`` as argparse allows, ``--label=x``)."""
    word = word.split("=", 1)[0]
    if word in actions or not word.startswith("--"):
        return actions.get(word)
    matches = {action for name, action in actions.items() if name.startswith(word)}
    return matches.pop() if len(matches) == 1 else None
