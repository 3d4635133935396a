"""The parser of the subcommands on saved runs and cache traces.

``zodbshootout show|compare|plot|export|history|cachesim|mix|report ...``: argparse
subparsers of one parser (:func:`build_subcommand_parser`).  It imports
nothing of the run machinery (phases, storages, concurrency), so that the
subcommands load no ZODB, ZEO or RelStorage; the run's own arguments are in
:mod:`zodbshootout.cli.arguments`.
"""

from __future__ import annotations

import argparse
from typing import NoReturn

from zodbshootout.cachesim import replay as cachesim
from zodbshootout.cli import mix as mix_command
from zodbshootout.errors import UsageError
from zodbshootout.outputfile import written_name
from zodbshootout.render.formats import COMPARISON_FORMATS, FORMATS
from zodbshootout.results.stats import AGGREGATES

#: Each subcommand and what it does (its --help description starts with this).
SUBCOMMAND_SUMMARIES = {
    "show": "Print the table of a saved run (-o) again, in any format, or its metadata.",
    "compare": "Compare saved runs cell by cell with the first (the base): rates, ratio, "
    "whether the difference is significant (Welch's t-test, Holm-corrected), and a "
    "geometric-mean summary; --fail-if-slower turns a slowdown into exit code 1.",
    "plot": "Draw saved runs: one run as a bar chart per phase and database; two runs "
    "as a comparison chart; a directory of runs (--save-to) or three or more as a "
    "history: rate over runs with each run's confidence interval.",
    "export": "Write a saved run as a pyperf benchmark suite (for pyperf compare_to, stats, hist).",
    "history": "Print a table of saved runs (a --save-to directory or files): one row "
    "per cell, one column per run, values in objects per second.",
    "cachesim": cachesim.DESCRIPTION,
    "mix": mix_command.DESCRIPTION,
    "report": "Write saved runs as a static web page (index.html and SVG charts) to "
    "publish: one run, two (BASE.json CHANGED.json) compared, or a directory of runs or "
    "three or more as a history.",
}
SUBCOMMANDS = tuple(SUBCOMMAND_SUMMARIES)


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line and our exception."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see {self.prog} --help)")


def percent(text: str) -> float:
    try:
        value = float(text.strip().rstrip("%"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a percentage") from None
    if not value >= 0.0:  # 100% slower is twice as slow, so no upper bound
        raise argparse.ArgumentTypeError(f"{text!r} is not a percentage of at least 0")
    return value


# --- The subcommands -------------------------------------------------------------


def build_subcommand_parser() -> argparse.ArgumentParser:
    """``zodbshootout SUBCOMMAND ...``: one subparser per subcommand, chosen by ``command``."""
    parser = Parser(prog="zodbshootout", description="Work with saved runs.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="SUBCOMMAND")

    def add(name: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(
            name, description=SUBCOMMAND_SUMMARIES[name], help=SUBCOMMAND_SUMMARIES[name]
        )
        assert isinstance(sub, Parser)
        return sub

    show = add("show")
    show.add_argument("result", metavar="RESULT.json", help="a file saved with -o or --save-to")
    show.add_argument(
        "--format",
        choices=FORMATS,
        default=None,
        help=f"{', '.join(FORMATS)} (default: what the run printed)",
    )
    show.add_argument(
        "--metadata",
        action="store_true",
        help="print where and how the run was measured (label, date, machine, versions, "
        "options) instead of the table",
    )
    add_aggregate(show)

    compare = add("compare")
    compare.add_argument("base", metavar="BASE.json", help="the run to compare against")
    compare.add_argument(
        "changed",
        metavar="CHANGED.json",
        nargs="+",
        help="one or more runs with the change, each compared with BASE.json",
    )
    compare.add_argument(
        "--format",
        choices=COMPARISON_FORMATS,
        default=COMPARISON_FORMATS[0],
        help="table (aligned text, default), markdown (for pull requests), csv or json",
    )
    compare.add_argument(
        "--fail-if-slower",
        metavar="PCT",
        type=percent,
        default=None,
        help="exit with code 1 when a cell is significantly slower (after the Holm "
        "correction) by more than PCT percent, and name those cells; with code 3 "
        "(inconclusive) when some cell's runs could not have shown such a slowdown",
    )
    add_aggregate(compare, "the base run")

    plot = add("plot")
    plot.add_argument(
        "results",
        metavar="RESULT.json",
        nargs="+",
        help="one saved run, two (BASE.json CHANGED.json) for a comparison chart, or a "
        "directory or three or more for a history",
    )
    plot.add_argument(
        "-o",
        "--output",
        type=written_name,
        metavar="FILE.png",
        required=True,
        help="where to write the chart (.png, .svg, .pdf)",
    )
    add_aggregate(plot)

    export = add("export")
    export.add_argument("result", metavar="RESULT.json", help="a file saved with -o or --save-to")
    export.add_argument(
        "-o",
        "--output",
        type=written_name,
        metavar="FILE.json",
        required=True,
        help="where to write the pyperf suite ('-': stdout)",
    )

    history = add("history")
    history.add_argument(
        "runs",
        metavar="DIR|RESULT.json",
        nargs="+",
        help="a directory of saved runs (--save-to), or result files, ordered by start time",
    )
    history.add_argument(
        "--format",
        choices=COMPARISON_FORMATS,
        default=COMPARISON_FORMATS[0],
        help="table (aligned text, default), markdown, csv or json",
    )
    add_aggregate(history, "the newest run")

    cachesim.add_arguments(add("cachesim"))
    mix_command.add_arguments(add("mix"))
    _add_report_arguments(add("report"))

    quiet_help = {
        "show": "don't repeat the warning about noisy cells",
        "plot": "no warnings, and don't say which file was written",
        "report": "no warnings, and don't say which files were written",
    }
    for name, sub in commands.choices.items():
        sub.add_argument(
            "-q", "--quiet", action="store_true", help=quiet_help.get(name, "no warnings on stderr")
        )
        sub.add_argument("--debug", action="store_true", help="show tracebacks of errors")
    return parser


def _add_report_arguments(report: argparse.ArgumentParser) -> None:
    report.add_argument(
        "results",
        metavar="RESULT.json|DIR",
        nargs="+",
        help="one saved run, two (BASE.json CHANGED.json) for a comparison, or a "
        "directory or three or more for a history",
    )
    report.add_argument(
        "-o",
        "--output",
        type=written_name,
        metavar="DIR",
        required=True,
        help="the report's directory: new, empty, or an earlier report's (its index.html "
        "and charts are replaced)",
    )
    add_aggregate(report)


def add_aggregate(parser: argparse.ArgumentParser, whose: str = "the run") -> None:
    parser.add_argument(
        "--aggregate",
        choices=AGGREGATES,
        default=None,
        help=f"combine repetitions by mean or best (default: what {whose} used)",
    )
