"""``zodbshootout replay TRACE... CONFIG``: a recorded application's storage calls on each database.

The traces are :mod:`zodbshootout.recording`'s; :mod:`zodbshootout.replay`
turns them into a plan, writes a dataset of the recorded sizes in each
database of CONFIG (untimed, refused on data the tool did not write) and
replays the recorded transactions, flat out or on the recorded schedule
(``--speed``).  The output is a mix run's, one row per transaction kind;
``show``, ``compare``, ``history``, ``plot`` and ``report`` read it as one.
A trace that can't be read is one line and exit code 2.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from zodbshootout import errors
from zodbshootout.cli.commands import Command
from zodbshootout.cli.numbers import CONCURRENCY, TIMEOUT, Number
from zodbshootout.cli.parsing import add_format, add_output
from zodbshootout.cli.running import exit_for_mode, run_mode, said_by, setup_failed
from zodbshootout.cli.say import emit
from zodbshootout.errors import UsageError
from zodbshootout.outputfile import written_name
from zodbshootout.results.histogram import require_hdrhistogram

if TYPE_CHECKING:  # the runner imports ZODB: only a replay loads it
    from zodbshootout.cli.outputs import RunOutputs
    from zodbshootout.replay.runner import ReplayOptions
    from zodbshootout.results.record import RunResult

DESCRIPTION = (
    "Replay traces recorded with <recording> (zodbshootout.recording) on every database of "
    "CONFIG: a dataset of the recorded objects' sizes, then the recorded transactions' storage "
    "calls, flat out or on the recorded schedule (--speed); throughput, latency percentiles "
    "and conflicts per transaction kind, as mix prints them."
)

#: Without -c, one worker per recorded connection, up to this many.
MAX_DEFAULT_WORKERS = 64
#: --speed: from a thousandth of the recorded pace to a thousand times it.
SPEED = Number(float, 0.001, 1000.0, "times the recorded pace", suffix="x")
INTERVAL = Number(float, 0.1, 3600.0, "seconds")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "traces", metavar="TRACE", nargs="+", help="trace files (*.zodbtrace) or directories"
    )
    parser.add_argument("config", metavar="CONFIG", help="the ZConfig file of the databases")
    parser.add_argument(
        "-c",
        "--concurrency",
        type=CONCURRENCY,
        default=None,
        help="workers; the recorded connections are shared among them (default: one per "
        f"recorded connection, at most {MAX_DEFAULT_WORKERS})",
    )
    parser.add_argument(
        "--speed",
        metavar="Nx",
        type=SPEED,
        default=None,
        help="open loop: each transaction starts at its recorded time ÷ N (1x: as recorded, "
        "2x: twice as fast), latency counted from then (default: flat out)",
    )
    parser.add_argument(
        "--free-order",
        action="store_true",
        help="let the workers' transactions interleave as they go, instead of keeping the "
        "recorded order of polls and commits across workers (default: recorded order; free: "
        "more concurrency, but loads the recording didn't make and conflicts it didn't have)",
    )
    parser.add_argument(
        "--threads", action="store_true", help="workers are threads sharing one storage"
    )
    parser.add_argument(
        "--interval", type=INTERVAL, default=1.0, help="seconds per interval (default 1)"
    )
    parser.add_argument(
        "--timeout",
        metavar="SECONDS",
        type=TIMEOUT,
        default=300.0,
        help="seconds allowed on top of the recorded duration ÷ --speed (default 300)",
    )
    add_output(parser, "FILE.json", "save the result ('zodbshootout show' prints it again)")
    parser.add_argument(
        "--save-to", type=written_name, metavar="DIR", help="save the result in DIR too"
    )
    parser.add_argument("--label", help="a name for this run in compare and history")
    add_format(parser, "table", {"table": "aligned text, default", "csv": "one row per kind"})


def replay_options(args: argparse.Namespace) -> ReplayOptions:
    """The plan of the traces and the run's options; a UsageError for what can't be."""
    from zodbshootout.recording.reader import open_trace, trace_paths
    from zodbshootout.replay.plan import read_plan
    from zodbshootout.replay.runner import ReplayOptions

    paths = trace_paths(args.traces)
    plan = read_plan([open_trace(path) for path in paths])
    workers = args.concurrency
    if workers is None:
        workers = len(plan.streams)
        if workers > MAX_DEFAULT_WORKERS:
            raise UsageError(
                f"the traces hold {workers} connections; choose how many workers replay "
                f"them with -c (at most {MAX_DEFAULT_WORKERS} by default)"
            )
    elif workers > len(plan.streams):
        raise UsageError(
            f"-c {workers}: the traces hold {len(plan.streams)} connections, one worker "
            "replays one or more of them"
        )
    return ReplayOptions(
        plan, tuple(paths), workers, args.speed, args.threads, args.interval, args.timeout,
        ordered=not args.free_order,
    )  # fmt: skip


def _said(options: ReplayOptions) -> list[str]:
    """What the plan replays differently, or left out (warnings)."""
    plan = options.plan
    lines = [f"{text}: {count}" for text, count in plan.notes.items()]
    if plan.partial_tail_bytes:
        lines.append(
            f"{plan.partial_tail_bytes} bytes at the end of the traces are a record cut "
            "short (a process killed, or still writing): not replayed"
        )
    return lines


def run(args: argparse.Namespace) -> int:
    require_hdrhistogram()
    from zodbshootout.cli.outputs import RunOutputs
    from zodbshootout.replay.runner import ReplayRunner

    options = replay_options(args)
    if not args.quiet:
        for line in _said(options):
            emit(f"zodbshootout replay: warning: {line}", sys.stderr)
    outputs = RunOutputs(args)
    say = said_by("replay", bool(args.quiet))
    return run_mode(
        args,
        outputs,
        lambda config: ReplayRunner(config, options, say, outputs.database_done),
        lambda result: _finish(result, outputs),
    )


def _finish(result: RunResult, outputs: RunOutputs) -> int:
    from zodbshootout.render.formats import get_format
    from zodbshootout.results.mix import MixRun

    if setup_failed(result, bool(result.mix), "replay"):
        return errors.EXIT_USAGE
    if outputs.table_on_stdout:
        for line in get_format(outputs.format).mix(MixRun.of(result)):
            emit(line)
    return exit_for_mode(result, outputs)


COMMAND = Command(description=DESCRIPTION, add_arguments=add_arguments, run=run)
