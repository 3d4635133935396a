"""The ``zodbshootout`` command: arguments → options → run → table.

Only this module prints.  The table goes to stdout, progress and errors to
stderr.  Exit codes: 0 every cell measured, 1 some cells failed (each says
why), 2 nothing could be run (bad usage, configuration or environment),
130/143 interrupted by SIGINT/SIGTERM (what was measured is still printed).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Iterator, Sequence
from typing import Any, NoReturn

from zodbshootout import __version__
from zodbshootout.config import DATA_DIR_VARIABLE, ConfigError, load_config
from zodbshootout.errors import UsageError
from zodbshootout.options import DEFAULT_OBJECT_SIZE_BYTES, RunOptions
from zodbshootout.phases import PHASES
from zodbshootout.render.csv import format_csv
from zodbshootout.results import RunResult
from zodbshootout.runner import ProgressEvent, Runner

EXIT_OK = 0
EXIT_CELLS_FAILED = 1
EXIT_USAGE = 2
EXIT_SIGINT = 130
EXIT_SIGTERM = 143


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line and our exception."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see zodbshootout --help)")


def _positive_ints(text: str) -> list[int]:
    """Parse ``100,1000`` into [100, 1000]; the values are checked by RunOptions."""
    values = []
    for part in text.split(","):
        part = part.strip()
        try:
            values.append(int(part))
        except ValueError:
            raise argparse.ArgumentTypeError(f"{part!r} is not a whole number") from None
    return values


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="zodbshootout",
        description=(
            "Measure how many objects per second each ZODB database in CONFIG adds, "
            "updates and reads, with several worker processes at once."
        ),
        epilog=(
            f"Phases: {', '.join(PHASES)}. Embedded databases keep their files in "
            f"${DATA_DIR_VARIABLE} (default: a temporary directory removed after the run)."
        ),
    )
    parser.add_argument("config", metavar="CONFIG", help="ZConfig file of <zodb NAME> sections")
    parser.add_argument(
        "phases", metavar="PHASE", nargs="*", help="measure only these phases (default: all)"
    )
    parser.add_argument(
        "-n", "--object-counts", metavar="N[,N...]", type=_positive_ints, action="append",
        help="objects each worker writes and reads per transaction (default: 1000)",
    )
    parser.add_argument(
        "-c", "--concurrency", metavar="C[,C...]", type=_positive_ints, action="append",
        help="worker processes that run each phase at once (default: 2)",
    )
    parser.add_argument(
        "-r", "--repetitions", metavar="R", type=int, default=3,
        help="times each phase is measured (default: 3)",
    )
    parser.add_argument(
        "--aggregate", choices=("mean", "min"), default="mean",
        help="combine repetitions by their mean rate (default) or keep the fastest (min)",
    )
    parser.add_argument(
        "-s", "--object-size", metavar="BYTES", type=int, default=DEFAULT_OBJECT_SIZE_BYTES,
        help=f"payload bytes per object (default: {DEFAULT_OBJECT_SIZE_BYTES})",
    )
    parser.add_argument(
        "-p", "--profile", metavar="DIR",
        help="write a cProfile .prof and a sorted .txt per database, phase, worker, repetition",
    )
    parser.add_argument(
        "--timeout", metavar="SECONDS", type=float, default=600.0,
        help="give up on a stage whose workers take longer than this (default: 600)",
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    parser.add_argument("--debug", action="store_true", help="show tracebacks of errors")
    parser.add_argument("--version", action="version", version=f"zodbshootout {__version__}")
    return parser


def options_from_args(args: argparse.Namespace) -> RunOptions:
    """RunOptions from parsed arguments; a bad value is a UsageError."""

    def flat(lists: list[list[int]] | None, default: int) -> tuple[int, ...]:
        if not lists:
            return (default,)
        return tuple(dict.fromkeys(v for values in lists for v in values))

    phases = tuple(args.phases) if args.phases else PHASES
    try:
        return RunOptions(
            object_counts=flat(args.object_counts, 1000),
            concurrencies=flat(args.concurrency, 2),
            repetitions=args.repetitions,
            phases=phases,
            object_size_bytes=args.object_size,
            aggregate=args.aggregate,
            profile_dir=args.profile,
            timeout_seconds=args.timeout,
        )
    except ValueError as e:
        raise UsageError(str(e)) from None


@contextlib.contextmanager
def data_directory() -> Iterator[str]:
    """Where embedded databases live: $ZODBSHOOTOUT_DATA, or a temporary directory."""
    chosen = os.environ.get(DATA_DIR_VARIABLE)
    if chosen:
        os.makedirs(chosen, exist_ok=True)
        yield os.path.abspath(chosen)
        return
    temporary = tempfile.mkdtemp(prefix="zodbshootout-")
    try:
        yield temporary
    finally:
        shutil.rmtree(temporary, ignore_errors=True)


def format_progress(event: ProgressEvent) -> str:
    """One progress line for stderr."""
    where = (
        f"{event.database}: {event.object_count} objects, concurrency {event.concurrency}"
    )
    if event.stage == "done":
        return f"{where}: done"
    if event.stage == "failed":
        return f"{where}, repetition {event.repetition}/{event.repetitions}: failed: {event.detail}"
    return f"{where}, repetition {event.repetition}/{event.repetitions}: {event.stage}"


class _Terminated(KeyboardInterrupt):
    """SIGTERM, handled like Ctrl-C but with its own exit code."""


def _raise_terminated(_signum: int, _frame: Any) -> None:
    raise _Terminated()


def exit_code(result: RunResult) -> int:
    if result.interrupted:
        return EXIT_SIGTERM if result.metadata.get("signal") == "SIGTERM" else EXIT_SIGINT
    if result.failures and set(result.metadata.get("refused", [])) >= set(result.databases):
        return EXIT_USAGE
    return EXIT_OK if result.complete else EXIT_CELLS_FAILED


def main(argv: Sequence[str] | None = None) -> int:
    args = None
    try:
        args = build_parser().parse_args(argv)
        options = options_from_args(args)
        if options.profile_dir:
            os.makedirs(options.profile_dir, exist_ok=True)
        with data_directory() as data_dir:
            config = load_config(args.config, data_dir)
            result = _run(config, options, quiet=args.quiet)
    except (UsageError, ConfigError) as e:
        if args is not None and args.debug:
            raise
        print(f"zodbshootout: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as e:
        if args is not None and args.debug:
            raise
        print(f"zodbshootout: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    for line in format_csv(result, options.aggregate):
        print(line)
    return exit_code(result)


def _run(config: Any, options: RunOptions, quiet: bool) -> RunResult:
    def progress(event: ProgressEvent) -> None:
        if not quiet:
            print(format_progress(event), file=sys.stderr, flush=True)

    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    runner = Runner(config, options, progress=progress)
    try:
        try:
            result = runner.run()
        except _Terminated:
            runner.result.interrupted = True
            result = runner.result
    finally:
        signal.signal(signal.SIGTERM, previous)
    return result
