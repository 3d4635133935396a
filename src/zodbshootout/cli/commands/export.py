"""``zodbshootout export RESULT.json -o PYPERF.json``: a saved run as a pyperf suite."""

from __future__ import annotations

import argparse

from zodbshootout.cli.commands import Command
from zodbshootout.cli.parsing import add_output
from zodbshootout.errors import EXIT_OK, UsageError
from zodbshootout.results import file as resultfile


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("result", metavar="RESULT.json", help="a file saved with -o or --save-to")
    add_output(parser, "FILE.json", "where to write the pyperf suite ('-': stdout)", required=True)


def run(args: argparse.Namespace) -> int:
    from zodbshootout.results.pyperf_export import dumps_pyperf

    result = resultfile.load(args.result)
    try:
        resultfile.write_atomically(args.output, dumps_pyperf(result))
    except OSError as e:
        raise UsageError(f"cannot write {args.output}: {e.strerror or e}") from None
    return EXIT_OK


COMMAND = Command(
    description="Write a saved run as a pyperf benchmark suite "
    "(for pyperf compare_to, stats, hist).",
    add_arguments=add_arguments,
    run=run,
)
