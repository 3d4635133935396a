"""A run from the command line: arguments → options → configuration → runner → table.

:func:`run_command` is ``zodbshootout CONFIG [PHASE...] [options]``; it is
imported only when a run is asked for, so that the subcommands on saved
runs load none of the run machinery (phases, storages, concurrency, ZODB).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from collections.abc import Sequence
from typing import Any

from zodbshootout import errors, faults
from zodbshootout.cli.arguments import DEFAULTS, bind_optional_values, build_parser
from zodbshootout.cli.outputs import RunOutputs
from zodbshootout.cli.printing import print_spread_warning, print_table
from zodbshootout.cli.progress import RunPlan, make_progress
from zodbshootout.cli.report import report_error
from zodbshootout.cli.say import emit
from zodbshootout.concurrency import GEVENT, PROCESSES, THREADS, mode_of, refuse_options
from zodbshootout.concurrency.host_environment import latency_lines
from zodbshootout.config.hosts import parse_hosts
from zodbshootout.config.loader import ConfigError, data_directory, load_config
from zodbshootout.database import state as dbstate
from zodbshootout.errors import UsageError
from zodbshootout.network.delays import RttStep
from zodbshootout.options.run import (
    DEFAULT_MIN_REPETITIONS,
    DEFAULT_PRECISION_PERCENT,
    RunOptions,
)
from zodbshootout.phases.classic import ALL_PHASES, PHASES
from zodbshootout.probes import cache_trace as cachetrace
from zodbshootout.probes import diagnostics
from zodbshootout.redact import enable_debug_log, find_secrets
from zodbshootout.render.description import format_description
from zodbshootout.results.record import RunResult
from zodbshootout.run.progress import ProgressEvent
from zodbshootout.run.runner import Runner
from zodbshootout.run.signals import signal_name, sigterm_unwinds

__all__ = ["exit_code", "options_from_args", "run_command"]


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
        "sharing": args.threads or DEFAULTS.sharing,
        "hosts": parse_hosts(args.hosts) if args.hosts else (),
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
            emit(
                f"zodbshootout: not zapping {name}: standard input is not a terminal "
                f"(--zap force,{name} zaps it without asking)",
                sys.stderr,
            )
            return False
        emit(
            f"Zap database {name}? This erases ALL its data, also data zodbshootout "
            "did not write. [y/N] ",
            sys.stderr,
            end="",
        )
        sys.stderr.flush()
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
        options = RunOptions(
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
            counters=args.counters,
            work=args.work,
            log=diagnostics.parse_log_option(args.log) if args.log else None,
            # The one place that reads the tests' fault hook (see faults); None in real runs.
            fault=faults.from_environment(),
            **_mode_options(args),
        )
    except ValueError as e:
        raise UsageError(str(e)) from None
    refuse_options(options)  # before anything starts
    return options


def refuse_unmeasurable(config: Any, options: RunOptions) -> None:
    """A UsageError when no database can be measured in this mode at any concurrency.

    E.g. only MappingStorage and DemoStorage in process mode: their data
    lives in one process's memory, whatever -c is.  When a database could
    be measured at another -c (FileStorage with -c 2), or another database
    can be, the cells that can't fail with a footnote instead.
    """
    mode = mode_of(options.mode)

    problems = [
        (name, mode.problem(options.sharing, 1, factory))
        for name, factory in config.databases.items()
    ]
    if problems and all(problem for _name, problem in problems):
        name, problem = problems[0]
        raise UsageError(f"nothing can be measured: {name}: {problem}")


def format_progress(event: ProgressEvent) -> str:
    """One progress line for stderr."""
    where = f"{event.database}: {event.object_count} objects, concurrency {event.concurrency}"
    if event.stage == "done":
        return f"{where}: done"
    if event.stage == "failed":
        return f"{where}, repetition {event.repetition}/{event.repetitions}: failed: {event.detail}"
    return f"{where}, repetition {event.repetition}/{event.repetitions}: {event.stage}"


def _make_profile_directory(path: str) -> None:
    """Create -p's directory; one line, exit 2, if it can't be (a file, no permission)."""
    if os.path.lexists(path) and not os.path.isdir(path):
        raise UsageError(f"-p {path}: it exists and is not a directory; name a directory")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        raise UsageError(f"-p {path}: cannot create the directory: {e.strerror or e}") from None


def exit_code(result: RunResult) -> int:
    """DESIGN.md's exit codes for a finished (or interrupted) run.

    2 only when nothing at all could be measured because every database was
    refused or could not be set up (unreachable, wrong password, missing
    driver); when some database was measured, the others' failures are
    cells that failed (1).
    """
    if result.interrupted:
        return errors.exit_for_signal(result.signal)
    if result.failures and not result.measurements and result.nothing_could_run:
        return errors.EXIT_USAGE
    return errors.EXIT_OK if result.complete else errors.EXIT_CELLS_FAILED


def format_setup_errors(result: RunResult) -> list[str]:
    """One ``error:`` line per database that could not be set up (for stderr)."""
    lines = []
    for database in result.databases:
        reason = next((f.reason for f in result.failures if f.database == database), None)
        if reason is not None:
            lines.append(f"zodbshootout: error: {database}: {reason}")
    return lines


def run_command(argv: Sequence[str]) -> int:
    """``zodbshootout CONFIG [PHASE...] [options]``: measure, print the table; the exit code."""
    args = None
    try:
        # SIGTERM unwinds like Ctrl-C, so the temporary data directory is
        # removed whenever it comes (the runner handles both while it measures).
        with sigterm_unwinds():
            # Intermixed: phase names may follow options, as in ``CONFIG -n 100 cold hot``.
            args = build_parser().parse_intermixed_args(bind_optional_values(argv))
            result, outputs, options = _measure(args)
    except (UsageError, ConfigError, OSError) as e:
        # A parse error leaves no args: --debug still shows the traceback.
        return report_error(e, args or argparse.Namespace(debug="--debug" in argv))
    except KeyboardInterrupt as e:
        # Interrupted before or after the run itself: nothing to show.
        return errors.exit_for_signal(signal_name(e))
    except Exception as e:
        return report_error(e, args, internal=True)
    return _report(result, outputs, options, args.verbose)


def _measure(args: argparse.Namespace) -> tuple[RunResult, RunOutputs, RunOptions]:
    """Options, configuration, the run, the files written: what a run's report needs."""
    if args.debug:
        enable_debug_log()
    options = options_from_args(args)
    if options.profile_dir:
        _make_profile_directory(options.profile_dir)
    if options.cache_trace_dir:
        cachetrace.prepare_directory(options.cache_trace_dir)
    with data_directory() as data_dir:
        config = load_config(args.config, data_dir)
        refuse_unmeasurable(config, options)
        options = _confirm_zaps(args, options, config.names)
        diagnostics.configure_logging(options.log, find_secrets(config.source.text))
        outputs = RunOutputs(args)
        result = _run(config, options, quiet=args.quiet, outputs=outputs, rtt=args.rtt)
    outputs.finish(result)
    return result, outputs, options


def _report(result: RunResult, outputs: RunOutputs, options: RunOptions, verbose: bool) -> int:
    """Print the table, the warnings and the -v lines of a finished run; its exit code."""
    code = exit_code(result)
    if outputs.save_failed and code == errors.EXIT_OK:
        code = errors.EXIT_CELLS_FAILED  # measured, but the file asked for is not there
    if code == errors.EXIT_USAGE:
        for line in format_setup_errors(result):
            emit(line, sys.stderr)
        return code
    if outputs.table_on_stdout:
        print_table(result, outputs.format, options.aggregate)
    print_spread_warning(result)
    if verbose:
        for line in format_database_descriptions(result):
            emit(line, sys.stderr)
    return code


def format_database_descriptions(result: RunResult) -> list[str]:
    """The -v lines: what the runner found out about each database before measuring it."""
    described = result.metadata.get("databases", {})
    return [
        format_description(name, described[name]) for name in result.databases if name in described
    ] + latency_lines(result.metadata.get("hosts", {}))


def _run(
    config: Any,
    options: RunOptions,
    quiet: bool,
    outputs: RunOutputs | None = None,
    console: Any = None,
    rtt: Sequence[RttStep] = (),
) -> RunResult:
    """Run *config*, showing progress on stderr (or on *console*, a rich Console for tests).

    *rtt*: the --rtt ladder (a UsageError, before anything starts, if it has
    nothing to delay).
    """
    runner = Runner(
        config,
        options,
        on_database_done=outputs.database_done if outputs else None,
        rtt=rtt,
    )
    counts = (options.object_counts, options.concurrencies, options.repetitions)
    # The runner's databases: with --rtt, each step of a database is one.
    plan = RunPlan(runner.result.databases, *counts, warmup=options.warmup)
    progress = make_progress(
        sys.stderr,
        plan,
        quiet,
        format_progress,
        console=console,
        workers_in_process=mode_of(options.mode).in_runner_process,
    )
    runner.progress = progress
    if outputs is not None:
        outputs.describe(runner.result, options, config.source.path, config.source.text)
    try:
        return runner.run()
    finally:
        # Whatever is printed next (table, error) starts on a clean line.
        progress.clear()
