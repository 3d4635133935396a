"""``zodbshootout cachesim TRACE...``: the hit rate traced workloads get per cache and size.

The replays are :mod:`zodbshootout.cachesim.replay`'s; the table is any
format's, the chart (``--plot``) render's.
"""

from __future__ import annotations

import argparse
import sys

from zodbshootout.cachesim.records import DEFAULT_MAX_BYTES, MAX_MAX_BYTES
from zodbshootout.cachesim.replay import (
    DEFAULT_POLICIES,
    DEFAULT_SIZES_BYTES,
    MAX_SIZE_BYTES,
    parse_max_trace_size,
    parse_policies,
    parse_sizes,
)
from zodbshootout.cli.commands import Command
from zodbshootout.cli.numbers import Parsed
from zodbshootout.cli.parsing import add_files, add_format
from zodbshootout.cli.printing import print_lines
from zodbshootout.cli.saved import warn
from zodbshootout.cli.say import emit
from zodbshootout.errors import EXIT_OK
from zodbshootout.outputfile import written_name
from zodbshootout.render.formats import get_format

DESCRIPTION = (
    "Replay cache traces (written with --cache-trace, or UMass SPC traces) through "
    "ZEO's cache simulation, RelStorage's own local cache and a plain LRU, and show "
    "the hit rate each would get at each cache size."
)


def add_max_trace_size(parser: argparse.ArgumentParser, default: int, help: str) -> None:
    """--max-trace-size: the decompressed bytes of a trace read (cachesim's, trace-stats')."""
    parser.add_argument(
        "--max-trace-size",
        metavar="SIZE",
        type=Parsed(parse_max_trace_size, ("{}", "{}GB"), (str(MAX_MAX_BYTES + 1),), "size"),
        default=default,
        help=help,
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_files(
        parser,
        "traces",
        "TRACE",
        "trace files (ZEO format, or SPC text, also .gz/.bz2) or directories of *.trace",
    )
    parser.add_argument(
        "--sizes",
        metavar="SIZE[,SIZE...]",
        type=Parsed(parse_sizes, ("{}", "{}KB", "64KB,{}"), (str(MAX_SIZE_BYTES + 1),), "sizes"),
        default=list(DEFAULT_SIZES_BYTES),
        help="cache sizes to simulate, e.g. 1MB,4MB,16MB (at least 16KB; default: "
        "64KB,256KB,1MB,4MB,20MB)",
    )
    parser.add_argument(
        "--policy",
        metavar="NAME[,NAME...]",
        type=parse_policies,
        default=list(DEFAULT_POLICIES),
        help="caches to replay through: zeo, relstorage, lru (default: all three)",
    )
    add_max_trace_size(
        parser,
        DEFAULT_MAX_BYTES,
        "read at most this much of each trace, decompressed, e.g. 2GB (default: 128MB; "
        "at most 64GB): every access is kept in memory and replayed per policy and size",
    )
    add_format(parser, "table", {"table": "aligned text, default"})
    parser.add_argument(
        "--plot",
        type=written_name,
        metavar="FILE.png",
        default=None,
        help="also draw hit rate against cache size per policy (.png, .svg, .pdf)",
    )


def run(args: argparse.Namespace) -> int:
    from zodbshootout.cachesim.replay import simulate

    if args.plot:
        from zodbshootout.render.cachesim_plot import check_plot_target

        check_plot_target(args.plot)  # before the replays, which may take long
    simulation = simulate(args.traces, sorted(set(args.sizes)), args.policy, args.max_trace_size)
    warn("cachesim", simulation.skipped, args.quiet)
    if args.plot:
        from zodbshootout.render.cachesim_plot import plot_simulation

        plot_simulation(simulation, args.plot)
        if not args.quiet:
            emit(f"zodbshootout: wrote {args.plot}", sys.stderr)
    print_lines(get_format(args.format).simulation(simulation))
    return EXIT_OK


COMMAND = Command(description=DESCRIPTION, add_arguments=add_arguments, run=run)
