"""The frame of the subcommands that run on CONFIG's databases: fill, maintain, mix, replay.

Each of them loads CONFIG inside a data directory with SIGTERM unwinding
like Ctrl-C (so the temporary directory is removed whenever it comes), turns
a configuration error into the one line and exit code 2, and a signal
before or after the run itself into its exit code (130, 143).  A mode's
runner (a :class:`zodbshootout.run.skeleton.RunnerSkeleton`) also gets the
same metadata (environment, configuration, format, label) and its result
saved; and a mode ends alike: the one error line per database when none
could be set up (exit code 2), else :func:`zodbshootout.errors.exit_for_run`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from zodbshootout import errors
from zodbshootout.cli.printing import write_line
from zodbshootout.cli.say import emit
from zodbshootout.config.loader import ConfigError, LoadedConfig, data_directory, load_config
from zodbshootout.errors import UsageError
from zodbshootout.results import metadata
from zodbshootout.results.record import RunResult

if TYPE_CHECKING:  # the runners import ZODB: only a run loads them
    from zodbshootout.cli.outputs import RunOutputs
    from zodbshootout.run.skeleton import RunnerSkeleton

T = TypeVar("T")

__all__ = ["exit_for_mode", "run_configured", "run_mode", "said_by", "setup_failed"]


def _nothing_before() -> None:
    pass


def _nothing_after(done: Any) -> None:
    pass


def run_configured(
    args: argparse.Namespace,
    work: Callable[[LoadedConfig], T],
    report: Callable[[T], int],
    *,
    before: Callable[[], None] = _nothing_before,
    after: Callable[[T], None] = _nothing_after,
    usage_errors: tuple[type[Exception], ...] = (),
) -> int:
    """``work(config)`` on ``args.config``, then ``report(done)``: its exit code.

    *before* runs first (a check that needs no data directory), *after*
    once the data directory is gone (saving the result); both, and *work*,
    with SIGTERM unwinding like Ctrl-C, whose exit code is then the
    signal's.  A ConfigError, or one of *usage_errors*, is a UsageError
    (one line, exit code 2).
    """
    # Lazy: the run package (and what it imports) loads only when a run starts.
    from zodbshootout.run.signals import signal_name, sigterm_unwinds

    usage: tuple[type[Exception], ...] = (ConfigError, *usage_errors)
    try:
        with sigterm_unwinds():
            before()
            with data_directory() as data_dir:
                done = work(load_config(args.config, data_dir))
            after(done)
    except usage as e:
        raise UsageError(str(e)) from None
    except KeyboardInterrupt as e:
        # Before or after the run itself: nothing was measured, nothing to show.
        return errors.exit_for_signal(signal_name(e))
    return report(done)


def run_mode(
    args: argparse.Namespace,
    outputs: RunOutputs,
    start: Callable[[LoadedConfig], RunnerSkeleton],
    report: Callable[[RunResult], int],
    *,
    before: Callable[[], None] = _nothing_before,
    usage_errors: tuple[type[Exception], ...] = (),
) -> int:
    """A mode's run: the runner *start* makes on CONFIG, described, run, saved; *report*'s code."""

    def measure(config: LoadedConfig) -> RunResult:
        runner = start(config)
        runner.result.metadata.update(mode_metadata(args, config))
        return runner.run()

    return run_configured(
        args, measure, report, before=before, after=outputs.finish, usage_errors=usage_errors
    )


def mode_metadata(args: argparse.Namespace, config: LoadedConfig) -> dict[str, Any]:
    """What a mode's result records of its run: --label (if it has one), environment, CONFIG."""
    labelled = {"label": args.label} if hasattr(args, "label") else {}
    return {
        **labelled,
        "environment": metadata.environment(),
        "config": metadata.config_metadata(config.source.path, config.source.text),
        "format": args.format,  # what show prints by default
    }


def said_by(command: str, quiet: bool) -> Callable[[str], None]:
    """The *say* of a mode's runner: ``zodbshootout COMMAND: line`` on stderr, none with -q."""

    def say(line: str) -> None:
        if not quiet:
            write_line(f"zodbshootout {command}: {line}")  # from the progress thread too

    return say


def setup_failed(result: RunResult, measured: bool, command: str) -> bool:
    """True when no database could be set up: then each one's error line is said (exit 2).

    Only when nothing was *measured* and no signal stopped the run; a
    server that died later is a failed database (exit code 1).
    """
    if result.failures and not measured and not result.interrupted and result.nothing_could_run:
        for failure in result.failures:
            emit(f"zodbshootout {command}: error: {failure.database}: {failure.reason}", sys.stderr)
        return True
    return False


def exit_for_mode(result: RunResult, outputs: RunOutputs) -> int:
    """A finished mode's exit code: the signal's, 1 when a database or a save failed, else 0."""
    failed = bool(result.failures) or outputs.save_failed
    return errors.exit_for_run(result.interrupted, result.signal, failed)
