"""Run a subcommand: its module's parser, then its handler; a usage error is one line.

``cli.entry.main`` hands over here when the first argument names a
subcommand of :data:`zodbshootout.cli.commands.COMMANDS`.  A subcommand name
always means the subcommand; when a file of that name exists too, the usage
error says how to run it as a configuration instead.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Sequence

from zodbshootout.cli.commands import Command, load_command
from zodbshootout.cli.parsing import Parser
from zodbshootout.cli.report import report_error, shorten_long_words
from zodbshootout.cli.say import emit
from zodbshootout.errors import EXIT_SIGINT, EXIT_USAGE, UsageError


def build_subcommand_parser(name: str, command: Command) -> argparse.ArgumentParser:
    """``zodbshootout NAME ...``: the subcommand's arguments, then -q and --debug."""
    parser = Parser(prog=f"zodbshootout {name}", description=command.description)
    command.add_arguments(parser)
    parser.add_argument("-q", "--quiet", action="store_true", help=command.quiet_help)
    parser.add_argument("--debug", action="store_true", help="show tracebacks of errors")
    return parser


def run_subcommand(argv: Sequence[str]) -> int:
    """Run ``zodbshootout SUBCOMMAND ...``; return the exit code."""
    name = argv[0]
    debug = "--debug" in argv
    try:
        command = load_command(name)
        words, passed = list(argv[1:]), []
        if command.passes_on and "--" in words:
            words, passed = words[: words.index("--")], words[words.index("--") + 1 :]
        args = build_subcommand_parser(name, command).parse_args(words)
        if command.passes_on:
            args.passed = passed
        return command.run(args)
    except UsageError as e:
        if debug:  # the traceback, then the same line and exit code as without --debug
            traceback.print_exception(e, file=sys.stderr)
        hint = ""
        if os.path.isfile(name):
            hint = f" (to run the configuration file {name!r}, write ./{name})"
        emit(f"zodbshootout {name}: error: {shorten_long_words(str(e))}{hint}", sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return EXIT_SIGINT
    except BrokenPipeError:
        raise  # the reader went away: main() stops quietly
    except Exception as e:  # a bug: one line, and the traceback with --debug
        return report_error(e, argparse.Namespace(debug=debug), internal=True)
