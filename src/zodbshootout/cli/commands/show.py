"""``zodbshootout show RESULT.json``: a saved run's table again, in any format, or its metadata."""

from __future__ import annotations

import argparse

from zodbshootout.cli.commands import Command
from zodbshootout.cli.parsing import add_aggregate, add_format
from zodbshootout.cli.printing import print_lines, print_spread_warning, print_table
from zodbshootout.cli.saved import saved_aggregate
from zodbshootout.errors import EXIT_OK
from zodbshootout.render.formats import FORMATS, get_format
from zodbshootout.results import file as resultfile
from zodbshootout.results.mix import MixRun


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("result", metavar="RESULT.json", help="a file saved with -o or --save-to")
    add_format(parser, "csv", {}, last=", ", saved=True)
    parser.add_argument(
        "--metadata",
        action="store_true",
        help="print where and how the run was measured (label, date, machine, versions, "
        "options) instead of the table",
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="after the table, name every cell each footnote applies to, and every noisy "
        "cell (the table and its warning count them when there are many)",
    )
    parser.add_argument(
        "--per-worker",
        action="store_true",
        help="a mix run: a row per worker (host, tx/s, p99, committed transactions, share) "
        "under each database's operations",
    )
    add_aggregate(parser)


def run(args: argparse.Namespace) -> int:
    result = resultfile.load(args.result)
    if args.metadata:
        from zodbshootout.render.metadata import format_metadata

        print_lines(format_metadata(result))
        return EXIT_OK
    saved = result.metadata.get("format")
    if result.maintenance:
        from zodbshootout.results.maintenance import MaintenanceRun

        format_name = args.format or (saved if saved in FORMATS else "table")
        print_lines(get_format(format_name).maintenance(MaintenanceRun.of(result)))
        return EXIT_OK
    if result.mix:
        # Runs saved before mix took --format say "mix": the table.
        format_name = args.format or (saved if saved in FORMATS else "table")
        print_lines(get_format(format_name).mix(MixRun.of(result, args.per_worker)))
        return EXIT_OK
    format_name = args.format or (saved if saved in FORMATS else "csv")
    aggregate = saved_aggregate(result, args.aggregate)
    print_table(result, format_name, aggregate)
    if args.verbose:
        from zodbshootout.render.table import build_table, format_flagged_cells

        print_lines(format_flagged_cells(build_table(result, aggregate)))
    if not args.quiet:
        print_spread_warning(result, every=args.verbose)
    return EXIT_OK


COMMAND = Command(
    description="Print the table of a saved run (-o) again, in any format, or its metadata.",
    add_arguments=add_arguments,
    run=run,
    quiet_help="don't repeat the warning about noisy cells",
)
