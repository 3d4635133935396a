"""``zodbshootout history DIR|RESULT.json...``: saved runs side by side, oldest first.

Classic runs: a row per cell, a column per run, in objects per second;
mix runs: per database, throughput and latency of every operation together.
"""

from __future__ import annotations

import argparse

from zodbshootout.cli.commands import Command
from zodbshootout.cli.parsing import add_aggregate, add_files, add_format
from zodbshootout.cli.printing import print_lines
from zodbshootout.cli.saved import saved_aggregate, warn
from zodbshootout.errors import EXIT_OK, UsageError
from zodbshootout.render.formats import get_format

DESCRIPTION = (
    "Print a table of saved runs (a --save-to directory or files): one row "
    "per cell, one column per run, values in objects per second."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_files(
        parser,
        "runs",
        "DIR|RESULT.json",
        "a directory of saved runs (--save-to), or result files, ordered by start time",
    )
    add_format(parser, "table", {"table": "aligned text, default"})
    add_aggregate(parser, "the newest run")


def run(args: argparse.Namespace) -> int:
    from zodbshootout.results.history import history_cells, load_runs

    runs, warnings = load_runs(args.runs)
    warn("history", warnings, args.quiet)
    output = get_format(args.format)
    if any(run.result.mix for run in runs):
        from zodbshootout.results.mix import MixRun

        if not all(run.result.mix for run in runs):
            raise UsageError("a history holds either mix runs or classic runs, not both")
        print_lines(output.mix_history([(run.name, MixRun.of(run.result)) for run in runs]))
        return EXIT_OK
    aggregate = args.aggregate or saved_aggregate(runs[-1].result, None)
    print_lines(output.history(runs, history_cells(runs), aggregate))
    return EXIT_OK


COMMAND = Command(description=DESCRIPTION, add_arguments=add_arguments, run=run)
