"""``zodbshootout trace-stats TRACE...``: what a recorded application asked of its storage.

The traces are :mod:`zodbshootout.recording`'s (``<recording>`` or
``record()``), or ZEO / RelStorage client cache traces (what they lack is
printed with the figures); a file that is neither, or is damaged, is one
line and exit code 2; a recording cut in the middle of a record (a process
killed, or still writing) is counted up to its last whole record, with a
warning.  ``--html DIR`` also writes the analysis as a page with charts.
"""

from __future__ import annotations

import argparse
import sys

from zodbshootout.cli.commands import Command
from zodbshootout.cli.commands.cachesim import add_max_trace_size
from zodbshootout.cli.numbers import Number
from zodbshootout.cli.parsing import add_files
from zodbshootout.cli.say import emit
from zodbshootout.errors import EXIT_OK, UsageError
from zodbshootout.inputs import open_input
from zodbshootout.outputfile import written_name

DESCRIPTION = (
    "Analyze traces recorded with <recording> or zodbshootout.recording.record(), or "
    "ZEO / RelStorage cache traces: operation counts, loads and stores per transaction, "
    "record sizes, popularity (zipf fit), working set, inter-arrival times, conflict "
    "candidates; --html DIR also draws them."
)

#: The longest conflict window: an hour.
CONFLICT_WINDOW = Number(float, 0, 3600, "seconds")
#: The default decompressed size of a cache trace read (its accesses are streamed).
DEFAULT_CACHE_TRACE_BYTES = 1 << 30


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_files(
        parser,
        "traces",
        "TRACE",
        "trace files (*.zodbtrace) or directories of them; or ZEO / RelStorage cache "
        "traces (a directory of *.trace files: --cache-trace's)",
    )
    parser.add_argument(
        "--conflict-window",
        metavar="SECONDS",
        type=CONFLICT_WINDOW,
        default=1.0,
        help="a store of an object that another connection stored this long before or "
        "less is a conflict candidate (default: 1)",
    )
    parser.add_argument(
        "--html",
        metavar="DIR",
        type=written_name,
        help="also write the analysis as a page with charts into DIR (a report directory)",
    )
    add_max_trace_size(
        parser,
        DEFAULT_CACHE_TRACE_BYTES,
        "read at most this much of a cache trace, decompressed (default: 1GB)",
    )


def _paths(paths: list[str]) -> list[str]:
    """*paths*, a directory replaced by its recordings (*.zodbtrace), else by its cache
    traces (*.trace, as --cache-trace writes them)."""
    import os

    from zodbshootout.recording.reader import trace_paths
    from zodbshootout.recording.writer import SUFFIX

    found = []
    for path in paths:
        names = sorted(os.listdir(path)) if os.path.isdir(path) else []
        if names and not any(n.endswith(SUFFIX) for n in names):
            cache = [os.path.join(path, n) for n in names if n.endswith(".trace")]
            if cache:
                found += cache
                continue
        found += trace_paths([path])
    return found


def _is_recording(path: str) -> bool:
    from zodbshootout.recording.format import MAGIC
    from zodbshootout.recording.reader import MAX_TRACE_BYTES

    with open_input(path, "trace", MAX_TRACE_BYTES) as stream:
        return stream.read(len(MAGIC)) == MAGIC


def run(args: argparse.Namespace) -> int:
    from zodbshootout.results.trace_analysis import TraceAnalysis

    if args.html:
        from zodbshootout.outputfile import check_report_directory

        check_report_directory(args.html)  # before reading: a mistake costs no time
    paths = _paths(args.traces)
    recorded = [_is_recording(path) for path in paths]
    window_ns = round(args.conflict_window * 1e9)
    if all(recorded):
        analysis = TraceAnalysis(window_ns)
        counts = _recordings(paths, analysis, args.quiet)
        title = f"zodbshootout trace-stats: {len(paths)} recorded trace file(s)"
    elif not any(recorded):
        from zodbshootout.cachesim.trace_import import LACKS

        analysis = TraceAnalysis(
            window_ns, transactions=False, connections=False, lacks=LACKS, resolution_ns=10**9
        )
        counts = _cache_traces(paths, analysis, args.max_trace_size)
        title = f"zodbshootout trace-stats: {len(paths)} cache trace file(s)"
    else:
        raise UsageError(
            "trace-stats reads recordings (*.zodbtrace) or cache traces, not both at once"
        )
    summary = analysis.summary()
    from zodbshootout.render.trace_report import analysis_lines

    for line in [*counts, "", *analysis_lines(summary)]:
        emit(line)
    if args.html:
        _write_page(args, title, counts, summary)
    return EXIT_OK


def _recordings(paths: list[str], analysis: object, quiet: bool) -> list[str]:
    from zodbshootout.recording.analysis import Feed
    from zodbshootout.recording.reader import open_trace
    from zodbshootout.recording.stats import format_stats, trace_stats

    traces = [open_trace(path) for path in paths]
    stats = trace_stats(traces, Feed(analysis, traces))  # type: ignore[arg-type]
    if stats.partial_tail_bytes and not quiet:
        emit(
            f"zodbshootout trace-stats: warning: {stats.partial_tail_bytes} bytes at the end "
            "of the traces are a record cut short (a process killed, or still writing): "
            "not counted",
            sys.stderr,
        )
    return format_stats(stats)


def _cache_traces(paths: list[str], analysis: object, max_bytes: int) -> list[str]:
    from zodbshootout.cachesim.trace_import import import_cache_traces

    counts = import_cache_traces(paths, analysis, max_bytes)  # type: ignore[arg-type]
    span = (counts.last_seconds or 0) - (counts.first_seconds or 0)
    lines = [
        f"{counts.files} ZEO / RelStorage cache trace file(s), {counts.records} records, "
        f"{span} s (whole seconds)",
        "",
    ]
    rows = [["cache record", "count"]] + [
        [kind, str(count)] for kind, count in sorted(counts.kinds.items())
    ]
    from zodbshootout.render.trace_report import text_table

    lines += text_table(rows)
    if counts.unsized_loads:
        lines.append(f"{counts.unsized_loads} loads of a size no record gave (counted as 0)")
    return lines


def _write_page(args: argparse.Namespace, title: str, counts: list[str], summary: object) -> None:
    from zodbshootout.cli.commands.report import write_page
    from zodbshootout.render.trace_report import trace_report

    write_page(trace_report(title, counts, summary), args.html, args.quiet)  # type: ignore[arg-type]


COMMAND = Command(description=DESCRIPTION, add_arguments=add_arguments, run=run)
