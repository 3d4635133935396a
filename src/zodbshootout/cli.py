"""The ``zodbshootout`` command: arguments → options → run → table.

The arguments are defined in :mod:`zodbshootout.arguments`, the exit codes
in :mod:`zodbshootout.errors`.  Only this module and
:mod:`zodbshootout.subcommands` (the outputs and the show/compare/plot/
export/history subcommands) print.  The table goes to stdout, progress and
errors to stderr.  Exit codes: 0 every cell measured, 1 some cells failed
(each says why) or a result file could not be saved, 2 nothing could be run
(bad usage, configuration or environment), 130/143 interrupted by
SIGINT/SIGTERM (what was measured is still printed).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import shutil
import signal
import sys
import tempfile
import traceback
from collections.abc import Iterator, Sequence
from typing import Any

from zodbshootout import dbstate, diagnostics, faults
from zodbshootout.arguments import (
    DEFAULTS,
    SUBCOMMANDS,
    bind_optional_values,
    build_parser,
    build_subcommand_parser,
)
from zodbshootout.concurrency import GEVENT, PROCESSES, THREADS
from zodbshootout.config import DATA_DIR_VARIABLE, ConfigError, load_config
from zodbshootout.dbinfo import format_description
from zodbshootout.errors import (
    EXIT_CELLS_FAILED,
    EXIT_OK,
    EXIT_SIGINT,
    EXIT_SIGTERM,
    EXIT_USAGE,
    UsageError,
)
from zodbshootout.options import RunOptions
from zodbshootout.phases import ALL_PHASES, PHASES
from zodbshootout.precision import DEFAULT_MIN_REPETITIONS, DEFAULT_PRECISION_PERCENT
from zodbshootout.progress import ProgressEvent, RunPlan, make_progress
from zodbshootout.redact import enable_debug_log, find_secrets, install_log_redaction, redact
from zodbshootout.results import RunResult
from zodbshootout.runner import Runner
from zodbshootout.subcommands import COMMANDS, RunOutputs, print_spread_warning, print_table

__all__ = ["bind_optional_values", "build_parser", "exit_code", "main"]


def _mode_options(args: argparse.Namespace) -> dict[str, Any]:
    """RunOptions fields for the concurrency mode and the object shapes."""
    from zodbshootout.concurrency.gevent import require_gevent

    mode = PROCESSES
    if args.gevent:
        require_gevent()
        mode = GEVENT
    elif args.threads:
        mode = THREADS
    return {
        "mode": mode,
        "threads": args.threads or DEFAULTS.threads,
        "btrees": args.btrees,
        "blobs": args.blobs,
        "index_entries": args.index_entries,
        "cache_trace_dir": os.path.abspath(args.cache_trace) if args.cache_trace else None,
    }


def _expand_phases(named: Sequence[str] | None) -> tuple[str, ...]:
    """The selected phase names, ``all`` standing for every phase and benchmark."""
    if not named:
        return PHASES
    expanded: list[str] = []
    for name in named:
        expanded.extend(ALL_PHASES if name == "all" else [name])
    return tuple(dict.fromkeys(expanded))


def _confirm_zaps(
    args: argparse.Namespace, options: RunOptions, databases: list[str]
) -> RunOptions:
    """Options whose ``zap`` holds the databases that --zap may wipe (asked on stdin).

    A prompt defaults to no: an empty answer, end of input, or a standard
    input that is not a terminal all keep the database as it is.
    """
    if args.zap is None:
        return options
    request = dbstate.parse_zap_option(args.zap)
    interactive = sys.stdin is not None and sys.stdin.isatty()

    def ask(name: str) -> bool:
        if not interactive:
            print(
                f"zodbshootout: not zapping {name}: standard input is not a terminal "
                f"(--zap force,{name} zaps it without asking)",
                file=sys.stderr,
            )
            return False
        print(
            f"Zap database {name}? This erases ALL its data, also data zodbshootout "
            "did not write. [y/N] ",
            end="",
            file=sys.stderr,
            flush=True,
        )
        try:
            answer = sys.stdin.readline()
        except (OSError, ValueError):
            answer = ""
        return dbstate.is_yes(answer or None)

    confirmed = dbstate.databases_to_zap(request, databases, ask)
    return dataclasses.replace(options, zap=confirmed)


def _repetition_options(args: argparse.Namespace) -> dict[str, Any]:
    """-r alone: exactly R repetitions; otherwise at least R (or 3) and --precision."""
    precision = args.precision
    if precision is None and args.repetitions is None:
        precision = DEFAULT_PRECISION_PERCENT
    return {
        "repetitions": DEFAULT_MIN_REPETITIONS if args.repetitions is None else args.repetitions,
        "precision": None if precision is None else precision / 100,
        "max_time_seconds": args.max_time,
    }


def options_from_args(args: argparse.Namespace) -> RunOptions:
    """RunOptions from parsed arguments; a bad value is a UsageError."""

    def flat(lists: list[list[int]] | None, default: tuple[int, ...]) -> tuple[int, ...]:
        if not lists:
            return default
        return tuple(dict.fromkeys(v for values in lists for v in values))

    phases = _expand_phases(args.phases)
    try:
        return RunOptions(
            object_counts=flat(args.object_counts, DEFAULTS.object_counts),
            concurrencies=flat(args.concurrency, DEFAULTS.concurrencies),
            **_repetition_options(args),
            phases=phases,
            object_size_bytes=args.object_size,
            aggregate=args.aggregate,
            profile_dir=args.profile,
            timeout_seconds=args.timeout,
            min_objects=args.min_objects,
            pack=args.pack,
            leaks=args.leaks,
            log=diagnostics.parse_log_option(args.log) if args.log else None,
            # The one place that reads the tests' fault hook (see faults); None in real runs.
            fault=faults.from_environment(),
            **_mode_options(args),
        )
    except ValueError as e:
        raise UsageError(str(e)) from None


def refuse_unmeasurable(config: Any, options: RunOptions) -> None:
    """A UsageError when no database can be measured in this mode at any concurrency.

    E.g. only MappingStorage and DemoStorage in process mode: their data
    lives in one process's memory, whatever -c is.  When a database could
    be measured at another -c (FileStorage with -c 2), or another database
    can be, the cells that can't fail with a footnote instead.
    """
    from zodbshootout.concurrency import mode_problem

    problems = [
        (name, mode_problem(options.mode, options.threads, 1, factory))
        for name, factory in config.databases.items()
    ]
    if problems and all(problem for _name, problem in problems):
        name, problem = problems[0]
        raise UsageError(f"nothing can be measured: {name}: {problem}")


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
    where = f"{event.database}: {event.object_count} objects, concurrency {event.concurrency}"
    if event.stage == "done":
        return f"{where}: done"
    if event.stage == "failed":
        return f"{where}, repetition {event.repetition}/{event.repetitions}: failed: {event.detail}"
    return f"{where}, repetition {event.repetition}/{event.repetitions}: {event.stage}"


class _Terminated(KeyboardInterrupt):
    """SIGTERM, handled like Ctrl-C but with its own exit code."""


def _raise_terminated(_signum: int, _frame: Any) -> None:
    raise _Terminated()


@contextlib.contextmanager
def _interruptible(received: list[str]) -> Iterator[None]:
    """Turn SIGINT and SIGTERM into KeyboardInterrupt, noting which came first.

    The runner stops its workers and servers on KeyboardInterrupt and returns
    what was measured; *received* tells the exit code which signal it was.
    """

    def handler(signum: int, _frame: Any) -> None:
        name = signal.Signals(signum).name
        if not received:
            received.append(name)
        raise _Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def exit_code(result: RunResult) -> int:
    """DESIGN.md's exit codes for a finished (or interrupted) run.

    2 only when nothing at all could be measured because every database was
    refused or could not be set up (unreachable, wrong password, missing
    driver); when some database was measured, the others' failures are
    cells that failed (1).
    """
    if result.interrupted:
        return EXIT_SIGTERM if result.signal == "SIGTERM" else EXIT_SIGINT
    if result.failures and not result.measurements and nothing_could_run(result):
        return EXIT_USAGE
    return EXIT_OK if result.complete else EXIT_CELLS_FAILED


def nothing_could_run(result: RunResult) -> bool:
    """True when every database was refused or failed before its first measurement."""
    unusable = set(result.refused) | set(result.setup_failed)
    return bool(result.databases) and unusable >= set(result.databases)


def format_setup_errors(result: RunResult) -> list[str]:
    """One ``error:`` line per database that could not be set up (for stderr)."""
    lines = []
    for database in result.databases:
        reason = next((f.reason for f in result.failures if f.database == database), None)
        if reason is not None:
            lines.append(f"zodbshootout: error: {database}: {reason}")
    return lines


def report_error(error: BaseException, args: Any, internal: bool = False) -> int:
    """Print *error* as one line (and, with --debug, its traceback), passwords masked.

    A user's mistake exits 2; an *internal* error (a bug) exits 1 and asks
    for the traceback, which --debug shows.
    """
    secrets = _secrets_of(args)
    debug = bool(getattr(args, "debug", False))
    if debug:
        text = "".join(traceback.format_exception(error))
        print(redact(text, secrets), end="", file=sys.stderr)
    message = redact(" ".join(str(error).split()), secrets)
    if internal:
        hint = "" if debug else " (run again with --debug to see where, and please report it)"
        print(
            f"zodbshootout: internal error: {type(error).__name__}: {message}{hint}",
            file=sys.stderr,
        )
        return EXIT_CELLS_FAILED
    print(f"zodbshootout: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def _secrets_of(args: Any) -> set[str]:
    """The passwords of the configuration file named on the command line, if readable."""
    path = getattr(args, "config", None)
    if not path:
        return set()
    try:
        with open(path, encoding="utf-8") as file:
            return find_secrets(file.read())
    except (OSError, UnicodeDecodeError, ValueError):
        return set()


def main(argv: Sequence[str] | None = None) -> int:
    """The command: a run, or a subcommand; returns the exit code."""
    try:
        return _main(argv)
    except BrokenPipeError:
        # The reader went away (``zodbshootout show run.json | head``): stop
        # quietly, as other command-line tools do.  Point stdout at the null
        # device so that the interpreter's final flush doesn't fail again.
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
        return EXIT_CELLS_FAILED


# C901 allowed below: the run's steps and their error exits read best in one place.
def _main(argv: Sequence[str] | None) -> int:  # noqa: C901
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in SUBCOMMANDS:
        return main_subcommand(argv)
    args = None
    # SIGTERM from here on unwinds like Ctrl-C, so the temporary data
    # directory is removed whenever it comes (the run installs its own handler).
    previous_sigterm = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        # Intermixed: phase names may follow options, as in ``CONFIG -n 100 cold hot``.
        args = build_parser().parse_intermixed_args(bind_optional_values(argv))
        if args.debug:
            enable_debug_log()
        options = options_from_args(args)
        for directory in (options.profile_dir, options.cache_trace_dir):
            if directory:
                os.makedirs(directory, exist_ok=True)
        with data_directory() as data_dir:
            config = load_config(args.config, data_dir)
            refuse_unmeasurable(config, options)
            options = _confirm_zaps(args, options, config.names)
            diagnostics.configure_logging(options.log, find_secrets(config.source.text))
            outputs = RunOutputs(args)
            result = _run(config, options, quiet=args.quiet, outputs=outputs)
        outputs.finish(result)
    except (UsageError, ConfigError, OSError) as e:
        return report_error(e, args)
    except _Terminated:
        return EXIT_SIGTERM
    except KeyboardInterrupt:
        # Interrupted before or after the run itself: nothing to show.
        return EXIT_SIGINT
    except Exception as e:
        return report_error(e, args, internal=True)
    finally:
        signal.signal(signal.SIGTERM, previous_sigterm)
    code = exit_code(result)
    if outputs.save_failed and code == EXIT_OK:
        code = EXIT_CELLS_FAILED  # measured, but the file asked for is not there
    if code == EXIT_USAGE:
        for line in format_setup_errors(result):
            print(line, file=sys.stderr)
        return code
    if outputs.table_on_stdout:
        print_table(result, outputs.format, options.aggregate)
    print_spread_warning(result)
    if args.verbose:
        for line in format_database_descriptions(result):
            print(line, file=sys.stderr)
    return code


def main_subcommand(argv: Sequence[str]) -> int:
    """Run ``zodbshootout SUBCOMMAND ...``; return the exit code.

    A subcommand name always means the subcommand; when a file of that name
    exists too, a usage error says how to run it as a configuration instead.
    """
    name = argv[0]
    debug = "--debug" in argv
    try:
        args = build_subcommand_parser().parse_args(argv)
        return COMMANDS[args.command](args)
    except UsageError as e:
        if debug:
            raise
        hint = ""
        if os.path.isfile(name):
            hint = f" (to run the configuration file {name!r}, write ./{name})"
        print(f"zodbshootout {name}: error: {e}{hint}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return EXIT_SIGINT
    except BrokenPipeError:
        raise  # the reader went away: main() stops quietly
    except Exception as e:  # a bug: one line, and the traceback with --debug
        return report_error(e, argparse.Namespace(debug=debug), internal=True)


def format_database_descriptions(result: RunResult) -> list[str]:
    """The -v lines: what the runner found out about each database before measuring it."""
    described = result.metadata.get("databases", {})
    return [
        format_description(name, described[name]) for name in result.databases if name in described
    ]


def _run(
    config: Any,
    options: RunOptions,
    quiet: bool,
    outputs: RunOutputs | None = None,
    console: Any = None,
) -> RunResult:
    """Run *config*, showing progress on stderr (or on *console*, a rich Console for tests)."""
    plan = RunPlan(
        config.names,
        options.object_counts,
        options.concurrencies,
        options.repetitions,
        warmup=options.warmup,
    )
    progress = make_progress(
        sys.stderr,
        plan,
        quiet,
        format_progress,
        console=console,
        workers_in_process=options.mode == THREADS,
    )
    received: list[str] = []
    runner = Runner(
        config,
        options,
        progress=progress,
        on_database_done=outputs.database_done if outputs else None,
    )
    if outputs is not None:
        outputs.describe(runner.result, options, config.source.path, config.source.text)
    install_log_redaction(runner.secrets)
    try:
        with _interruptible(received):
            try:
                result = runner.run()
            except KeyboardInterrupt:
                # A signal that arrived outside the runner's own handling (e.g.
                # while it saved a result file): what was measured still counts.
                runner.result.interrupted = True
                result = runner.result
    finally:
        # Whatever is printed next (table, error) starts on a clean line.
        progress.clear()
    if result.interrupted:
        result.signal = received[0] if received else "SIGINT"
    return result
