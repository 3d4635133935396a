"""``zodbshootout fill CONFIG -n N``: write a big database to measure its upkeep on.

Each database of CONFIG gets N objects (a share of them garbage, each with R
revisions) in batched commits at the storage's own speed (docs/maintenance.rst).
Before anything is written the disk is checked (an N it can't hold is one
line and exit code 2, with the figure); a database holding data the tool
did not write is refused as by every run; an interrupted fill continues
where it stopped when run again.  Progress with the time left on stderr;
one line per database on stdout.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

from zodbshootout import errors
from zodbshootout.cli.commands import Command
from zodbshootout.cli.numbers import OBJECT_SIZE, Number
from zodbshootout.cli.parsing import Option, add_options
from zodbshootout.cli.printing import write_line
from zodbshootout.cli.running import run_configured
from zodbshootout.cli.say import emit
from zodbshootout.config.loader import DATA_DIR_VARIABLE, LoadedConfig
from zodbshootout.errors import UsageError

DESCRIPTION = (
    "Fill every database of CONFIG with N objects (a share of them garbage, each with "
    "R revisions) for the maintenance benchmarks; resumable, refuses foreign data."
)

#: The most objects one fill writes per database.
MAX_FILL_OBJECTS = 10**10
MAX_REVISIONS = 1000
#: Seconds between two progress lines when stderr is not a terminal.
LINE_SECONDS = 5.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``zodbshootout fill``."""
    parser.add_argument("config", metavar="CONFIG", help="the ZConfig file of the databases")
    parser.add_argument(
        "-n", "--objects", metavar="N", type=Number(int, 1, MAX_FILL_OBJECTS), required=True,
        help="N, objects each database holds afterwards (garbage included)",
    )  # fmt: skip
    add_shape_arguments(parser)


def add_shape_arguments(parser: argparse.ArgumentParser) -> None:
    """What the filled objects look like (fill's, and maintain's --sizes)."""
    from zodbshootout.maintenance.fill import DEFAULT_BATCH
    from zodbshootout.maintenance.trees import MAX_FANOUT

    add_options(
        parser,
        (
            Option(("--garbage",), Number(float, 0, 1, below=True), 0.0,
                   "share of the N objects left unreachable for a pack to collect (default 0)",
                   "SHARE"),
            Option(("--revisions",), Number(int, 1, MAX_REVISIONS), 1,
                   "R, revisions written per object: the history a history-preserving "
                   "storage keeps (default 1)", "R"),
            Option(("-s", "--object-size"), OBJECT_SIZE, 100,
                   "payload bytes per object (default 100)", "BYTES"),
            Option(("--fanout",), Number(int, 0, MAX_FANOUT), 0,
                   "entries per BTree node (bucket and internal node) of the objects' tree; "
                   "0: LOBTree's own, 120 per bucket (default 0)", "F"),
            Option(("--batch",), Number(int, 1, 1_000_000), DEFAULT_BATCH,
                   "objects per commit (default {default})", "OBJECTS"),
        ),
    )  # fmt: skip


def run(args: argparse.Namespace) -> int:
    """The fill subcommand: 0 filled, 1 a database failed, 2 nothing could be filled."""
    shape = shape_of(args)
    lasting = bool(os.environ.get(DATA_DIR_VARIABLE))  # (loading the config sets it)

    def work(config: LoadedConfig) -> tuple[Any, dict[str, Any]]:
        check_where(config, args.objects, shape, args.quiet, lasting)
        return _fill(config, args, shape)

    return run_configured(args, work, lambda done: _report(*done, shape))


def _report(result: Any, outcomes: dict[str, Any], shape: Any) -> int:
    """Each database's line, each failure's; the exit code."""
    for name, outcome in outcomes.items():
        emit(_outcome_line(name, outcome, shape))
    for failure in result.failures:
        emit(f"zodbshootout fill: error: {failure.database}: {failure.reason}", sys.stderr)
    if result.interrupted:
        emit("zodbshootout fill: interrupted; run it again to continue", sys.stderr)
        return errors.exit_for_signal(result.signal)
    if result.failures:
        return errors.EXIT_USAGE if result.nothing_could_run else errors.EXIT_CELLS_FAILED
    return errors.EXIT_OK


def shape_of(args: argparse.Namespace) -> Any:
    """The FillShape of the arguments of :func:`add_shape_arguments`."""
    from zodbshootout.maintenance.fill import FillShape
    from zodbshootout.maintenance.trees import MIN_FANOUT

    if args.fanout and args.fanout < MIN_FANOUT:
        raise UsageError(f"--fanout {args.fanout} is below {MIN_FANOUT} (0: LOBTree's own)")
    return FillShape(args.garbage, args.revisions, args.object_size, args.fanout)


def check_where(config: Any, objects: int, shape: Any, quiet: bool, lasting: bool) -> None:
    """Refuse a fill the data directory would throw away, or the disk can't hold."""
    from zodbshootout.maintenance.disk import check_room, data_paths

    paths = {name: data_paths(factory) for name, factory in config.databases.items()}
    temporary = config.source.data_dir + os.sep
    in_temporary = any(path.startswith(temporary) for found in paths.values() for path in found)
    if in_temporary and not lasting:
        raise UsageError(
            f"CONFIG keeps its databases in $({DATA_DIR_VARIABLE}), a temporary directory "
            f"removed after the run unless set: set {DATA_DIR_VARIABLE} to where they go"
        )
    shortfall, unchecked = check_room(paths, objects, shape)
    if shortfall is not None:
        raise UsageError(shortfall.message(objects, shape))
    if unchecked and not quiet:
        write_line(
            f"zodbshootout fill: note: free disk not checked for {', '.join(unchecked)} "
            "(its data lives on a server)"
        )


def _fill(config: Any, args: argparse.Namespace, shape: Any) -> tuple[Any, dict[str, Any]]:
    from zodbshootout.maintenance.runner import FillRunner

    with _Progress(args.quiet) as progress:
        runner = FillRunner(config, args.objects, shape, args.batch, progress.update)
        result = runner.run()
    return result, runner.outcomes


def _outcome_line(name: str, outcome: Any, shape: Any) -> str:
    held = outcome.present_after
    what = (
        f"{name}: {held:,} objects ({shape.garbage_among(held):,} garbage, "
        f"{shape.revisions} revision{'s' if shape.revisions > 1 else ''} each)"
    )
    if not outcome.objects_written and not outcome.records_written:
        return f"{what}: already there"
    rate = outcome.objects_written / outcome.seconds if outcome.seconds else 0.0
    return (
        f"{what}: {outcome.objects_written:,} written in {outcome.seconds:.1f} s, "
        f"{rate:,.0f} objects/s, {outcome.records_written / outcome.seconds:,.0f} revisions/s"
    )


class _Progress:
    """rich's bar with the time left on a terminal; else a line every LINE_SECONDS."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self.bar: Any = None
        self.tasks: dict[str, Any] = {}
        self.started: dict[str, tuple[float, int]] = {}
        self.last_line = 0.0

    def __enter__(self) -> _Progress:
        if not self.quiet and sys.stderr.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

            self.bar = Progress(
                TextColumn("{task.description}"), BarColumn(),
                TextColumn("{task.completed:,}/{task.total:,}"), TimeRemainingColumn(),
                console=Console(stderr=True),
            )  # fmt: skip
            self.bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()

    def update(self, name: str, done: int, total: int) -> None:
        now = time.monotonic()
        first = self.started.setdefault(name, (now, done))
        if self.bar is not None:
            if name not in self.tasks:
                self.tasks[name] = self.bar.add_task(name, total=total, completed=done)
            self.bar.update(self.tasks[name], completed=done)
        elif not self.quiet and (now - self.last_line >= LINE_SECONDS or done >= total):
            self.last_line = now
            rate = (done - first[1]) / max(now - first[0], 1e-9)
            left = f", {(total - done) / rate:.0f} s left" if rate and done < total else ""
            write_line(f"zodbshootout fill: {name}: {done:,}/{total:,} objects{left}")


COMMAND = Command(description=DESCRIPTION, add_arguments=add_arguments, run=run)
