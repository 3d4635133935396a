"""``zodbshootout maintain CONFIG``: pack, index, open and first transaction, timed with memory.

Each operation runs in a process of its own on each database (and, with
``--sizes``, at each size, the database filled up to it first): the table
shows its wall time, the peak memory of the process that did it (and of an
embedded ZEO server meanwhile), the bytes and objects before and after, and
for three sizes or more the fitted exponent of time ∝ N^k
(docs/maintenance.rst).  ``-o`` saves the result; ``show`` prints it again.
"""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

from zodbshootout import errors
from zodbshootout.cli.commands import Command
from zodbshootout.cli.commands.fill import (
    MAX_FILL_OBJECTS,
    add_shape_arguments,
    check_where,
    shape_of,
)
from zodbshootout.cli.numbers import TIMEOUT, Number, Numbers
from zodbshootout.cli.parsing import add_format, add_output
from zodbshootout.cli.running import exit_for_mode, run_mode, said_by, setup_failed
from zodbshootout.cli.say import emit
from zodbshootout.config.loader import DATA_DIR_VARIABLE, LoadedConfig

if TYPE_CHECKING:  # the runner imports ZODB: only a maintain run loads it
    from zodbshootout.cli.outputs import RunOutputs
    from zodbshootout.maintenance.maintain import MaintainRunner
    from zodbshootout.results.record import RunResult

DESCRIPTION = (
    "Time maintenance operations (pack with and without GC, zc.zodbdgc's GC, FileStorage's "
    "index, opening, the first transaction) on every database of CONFIG, each with the peak "
    "memory of the process that did it, bytes and objects before and after; --sizes fits "
    "time ∝ N^k."
)
#: The operations, in the order they run when several are asked for.
OPERATIONS = (
    "open", "first-transaction", "first-transaction-cold", "first-transaction-warm", "reindex",
    "index-write", "pack-nogc", "pack", "gc", "pack-under-load",
)  # fmt: skip


def _operations(text: str) -> tuple[str, ...]:
    wanted = [word.strip() for word in text.split(",") if word.strip()]
    unknown = [word for word in wanted if word not in OPERATIONS]
    if unknown or not wanted:
        raise argparse.ArgumentTypeError(
            f"{unknown[0] if unknown else text!r} is not an operation ({', '.join(OPERATIONS)})"
        )
    return tuple(op for op in OPERATIONS if op in wanted)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``zodbshootout maintain``."""
    parser.add_argument("config", metavar="CONFIG", help="the ZConfig file of the databases")
    parser.add_argument(
        "--operations", metavar="OP,...", default=("pack",),
        type=_operations,
        help=f"what to time, run in this order: {', '.join(OPERATIONS)} (default pack)",
    )  # fmt: skip
    parser.add_argument(
        "--sizes", metavar="N,...", type=Numbers(Number(int, 1, MAX_FILL_OBJECTS)),
        default=None,
        help="fill each database up to each N in turn (untimed) and time the operations "
        "there; three or more fit time ∝ N^k (default: the databases as they are)",
    )  # fmt: skip
    add_shape_arguments(parser)
    parser.add_argument(
        "--timeout", metavar="SECONDS", type=TIMEOUT, default=3600.0,
        help="seconds one operation may take (default 3600)",
    )  # fmt: skip
    parser.add_argument(
        "--load-seconds", metavar="SECONDS", type=Number(float, 4, 86400), default=None,
        help="pack-under-load: the foreground mix's measured seconds (default: room for "
        "the lead, thrice the pack's time alone and a tail)",
    )  # fmt: skip
    parser.add_argument(
        "--cache-objects", metavar="N", type=Number(int, 0, 10**9), default=None,
        help="first-transaction-warm: the objects loaded into the persistent client cache "
        "first (default: all the fill's)",
    )  # fmt: skip
    add_output(parser, "FILE.json", "save the result ('zodbshootout show' prints it again)")
    add_format(parser, "table", {"table": "aligned text, default"})


def run(args: argparse.Namespace) -> int:
    """The maintain subcommand: 0 measured, 1 a database failed, 2 nothing could run."""
    from zodbshootout.cli.outputs import RunOutputs
    from zodbshootout.maintenance.maintain import MaintainOptions, MaintainRunner

    shape = shape_of(args)
    sizes = tuple(sorted(set(args.sizes or ())))
    options = MaintainOptions(
        args.operations, sizes, shape, args.batch, args.timeout, args.load_seconds,
        args.cache_objects,
    )  # fmt: skip
    outputs = RunOutputs(args)
    lasting = bool(os.environ.get(DATA_DIR_VARIABLE))
    say = said_by("maintain", bool(args.quiet))

    def start(config: LoadedConfig) -> MaintainRunner:
        if sizes:
            check_where(config, max(sizes), shape, args.quiet, lasting=True)
        elif not lasting:
            say(f"note: without --sizes or {DATA_DIR_VARIABLE} the databases are new")
        return MaintainRunner(config, options, say, outputs.database_done)

    return run_mode(args, outputs, start, lambda result: _finish(result, outputs, args.format))


def _finish(result: RunResult, outputs: RunOutputs, format_name: str) -> int:
    from zodbshootout.render.formats import get_format
    from zodbshootout.results.maintenance import MaintenanceRun

    if setup_failed(result, bool(result.maintenance), "maintain"):
        return errors.EXIT_USAGE
    for line in get_format(format_name).maintenance(MaintenanceRun.of(result)):
        emit(line)
    return exit_for_mode(result, outputs)


COMMAND = Command(description=DESCRIPTION, add_arguments=add_arguments, run=run)
