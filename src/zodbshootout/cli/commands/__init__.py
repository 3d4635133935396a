"""The subcommands, one module each, with its arguments beside its handler.

:data:`COMMANDS` is the table: a first word of the command line that is a
key of it is a subcommand (:mod:`zodbshootout.cli.subcommand` runs it);
anything else is a run (:mod:`zodbshootout.cli.measure`).  Each module
defines ``COMMAND``, a :class:`Command`, and is imported only when chosen,
so that ``show`` loads nothing of ``mix`` or ``cachesim`` (nor ZODB).  A new
subcommand is one module here and one line in the table (see
docs/architecture.rst, "Adding a subcommand").
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from dataclasses import dataclass

#: Each subcommand and the module that holds it, in the order --help lists them.
COMMANDS: dict[str, str] = {
    "show": "zodbshootout.cli.commands.show",
    "compare": "zodbshootout.cli.commands.compare",
    "plot": "zodbshootout.cli.commands.plot",
    "export": "zodbshootout.cli.commands.export",
    "history": "zodbshootout.cli.commands.history",
    "cachesim": "zodbshootout.cli.commands.cachesim",
    "mix": "zodbshootout.cli.commands.mix",
    "report": "zodbshootout.cli.commands.report",
    "versions": "zodbshootout.cli.commands.versions",
    "trace-stats": "zodbshootout.cli.commands.trace_stats",
    "replay": "zodbshootout.cli.commands.replay",
    "fill": "zodbshootout.cli.commands.fill",
    "maintain": "zodbshootout.cli.commands.maintain",
}


@dataclass(frozen=True)
class Command:
    """A subcommand: what it does, its arguments, and its handler (which returns the exit code).

    Every subcommand also gets -q/--quiet (*quiet_help* says what it
    silences) and --debug (tracebacks of errors).
    """

    description: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    quiet_help: str = "no warnings on stderr"
    #: The words after ``--`` are not its arguments but passed on (``args.passed``).
    passes_on: bool = False


def load_command(name: str) -> Command:
    """The subcommand *name* of :data:`COMMANDS`, its module imported now."""
    command = importlib.import_module(COMMANDS[name]).COMMAND
    if not isinstance(command, Command):
        raise TypeError(f"{COMMANDS[name]}.COMMAND is not a Command")
    return command
