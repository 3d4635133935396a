"""``zodbshootout trace-stats TRACE...``: what a recorded application asked of its storage.

The traces are :mod:`zodbshootout.recording`'s (``<recording>`` or
``record()``); a file that is not one, or is damaged, is one line and exit
code 2; a file cut in the middle of a record (a process killed, or still
writing) is counted up to its last whole record, with a warning.
"""

from __future__ import annotations

import argparse
import sys

from zodbshootout.cli.commands import Command
from zodbshootout.cli.parsing import add_files
from zodbshootout.cli.say import emit
from zodbshootout.errors import EXIT_OK

DESCRIPTION = (
    "Summarize traces recorded with <recording> or zodbshootout.recording.record(): "
    "operation counts, loads and stores per transaction, record sizes."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_files(parser, "traces", "TRACE", "trace files (*.zodbtrace) or directories of them")


def run(args: argparse.Namespace) -> int:
    from zodbshootout.recording.reader import open_trace, trace_paths
    from zodbshootout.recording.stats import format_stats, trace_stats

    traces = [open_trace(path) for path in trace_paths(args.traces)]
    stats = trace_stats(traces)
    if stats.partial_tail_bytes and not args.quiet:
        emit(
            f"zodbshootout trace-stats: warning: {stats.partial_tail_bytes} bytes at the end "
            "of the traces are a record cut short (a process killed, or still writing): "
            "not counted",
            sys.stderr,
        )
    for line in format_stats(stats):
        emit(line)
    return EXIT_OK


COMMAND = Command(description=DESCRIPTION, add_arguments=add_arguments, run=run)
