"""The command line's outputs and its subcommands: save, render, show, compare, plot, export.

Together with :mod:`zodbshootout.cli` this is the program's edge, the only
place that prints.  ``cli.main`` hands over when the first argument names a
subcommand::

    zodbshootout show RESULT.json [--format FORMAT] [--aggregate mean|min]
    zodbshootout compare BASE.json CHANGED.json [--aggregate mean|min]
    zodbshootout plot RESULT.json -o CHART.png [--aggregate mean|min]
    zodbshootout export RESULT.json -o PYPERF.json

and uses :class:`RunOutputs` for a run's ``-o``, ``--format`` and ``--pyperf``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from collections.abc import Sequence
from typing import Any, NoReturn, TextIO

from zodbshootout import metadata, resultfile
from zodbshootout.errors import UsageError
from zodbshootout.options import RunOptions
from zodbshootout.render.formats import FORMATS, format_result
from zodbshootout.results import RunResult
from zodbshootout.stats import AGGREGATES, format_spread_warning

SUBCOMMANDS = ("show", "compare", "plot", "export")

EXIT_OK = 0
EXIT_USAGE = 2


# --- A run's outputs ----------------------------------------------------------


def add_output_arguments(parser: argparse.ArgumentParser) -> None:
    """The run's options for what it writes: -o, --format, --pyperf."""
    parser.add_argument(
        "-o",
        "--output",
        metavar="FILE.json",
        help="save every raw timing and the run's metadata to FILE.json after each "
        "database ('-': stdout instead of the table); see 'zodbshootout show'",
    )
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="csv",
        help="how to print the table: csv (classic, default), markdown, json, "
        "table (for a terminal, with spread)",
    )
    parser.add_argument(
        "--pyperf",
        metavar="FILE.json",
        help="also write the run as a pyperf benchmark suite (pyperf compare_to, hist)",
    )


class RunOutputs:
    """The files a run writes, kept up to date as databases finish.

    The result file is rewritten (atomically) after every database, so an
    interruption or a crash later keeps everything measured so far.  A save
    that fails makes the run fail (``save_failed``), and the message says
    what the path holds instead: never an earlier file taken for this run's.
    """

    def __init__(self, args: argparse.Namespace) -> None:
        self.output: str | None = getattr(args, "output", None)
        self.pyperf: str | None = getattr(args, "pyperf", None)
        self.format: str = getattr(args, "format", None) or "csv"
        self.save_failed = False  # a final save failed: the run fails too
        self._warned = False  # an intermediate save failed (said once)
        self._saved: set[str] = set()  # paths this run has written at least once
        for path in (self.output, self.pyperf):
            _check_writable(path, getattr(args, "config", None))

    def describe(
        self, result: RunResult, options: RunOptions, config_path: str, config_text: str
    ) -> None:
        """Record environment, options and the redacted configuration in *result*."""
        result.metadata.update(metadata.run_metadata(options, config_path, config_text))
        # So that ``show`` prints the table the run printed.
        result.metadata["format"] = self.format

    def database_done(self, result: RunResult) -> None:
        """Save what was measured so far (the runner calls this after every database).

        A failed save must not end the run: the table is still printed, and
        the final save is tried again (and reported) by :meth:`finish`.
        """
        if self.output and self.output != "-":
            try:
                resultfile.save(result, self.output)
                self._saved.add(self.output)
            except (OSError, UsageError) as e:
                if not self._warned:
                    print(f"zodbshootout: warning: {_save_error(self.output, e)}", file=sys.stderr)
                self._warned = True

    def finish(self, result: RunResult) -> None:
        """Write the final files: the result (with its end time) and the pyperf suite.

        A file that can't be written is reported on stderr and sets
        ``save_failed``; the table is still printed, since the measurements
        are worth more than the file.
        """
        files = []
        if self.output:
            files.append((self.output, resultfile.dumps(result)))
        if self.pyperf:
            from zodbshootout.pyperf_export import dumps_pyperf

            files.append((self.pyperf, dumps_pyperf(result)))
        for path, text in files:
            try:
                resultfile.write_atomically(path, text)
                self._saved.add(path)
            except (OSError, UsageError) as e:
                self.save_failed = True
                print(
                    f"zodbshootout: error: {_save_error(path, e)}{self._left_at(path)}",
                    file=sys.stderr,
                )

    def _left_at(self, path: str) -> str:
        """What a failed save leaves at *path*, so nobody takes it for this run's result."""
        if path in self._saved:
            return f"; {path} holds this run's results only up to the last database saved"
        if os.path.lexists(path):
            return (
                f"; {path} is left as it was: it still holds an earlier file, not this run's result"
            )
        return ""

    @property
    def table_on_stdout(self) -> bool:
        """``-o -`` puts the result document on stdout, so the table stays off it."""
        return self.output != "-"


def _save_error(path: str, error: OSError | UsageError) -> str:
    """``cannot save PATH: reason`` (a refused target says so in its own words)."""
    if isinstance(error, UsageError):
        return str(error)
    return f"cannot save {path}: {error.strerror or error}"


def _check_writable(path: str | None, config: str | None = None) -> None:
    """Refuse before the run, not after it, an output file that can't be written.

    Nor may it be the configuration file (``-o`` after the CONFIG, mistyped).
    """
    if not path or path == "-":
        return
    resultfile.check_output_target(path)
    if (
        config
        and os.path.exists(path)
        and os.path.exists(config)
        and os.path.samefile(path, config)
    ):
        raise UsageError(f"refusing to write {path}: it is the configuration file {config}")
    directory = os.path.dirname(os.path.abspath(path))
    if not os.access(directory, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise UsageError(f"cannot write {path}: permission denied")


def print_table(
    result: RunResult, format_name: str, aggregate: str, stream: TextIO | None = None
) -> None:
    """Print the table to *stream* (stdout); the terminal table gets colours on a terminal."""
    stream = stream or sys.stdout
    color = _isatty(stream) and "NO_COLOR" not in os.environ
    width = shutil.get_terminal_size((100, 24)).columns if _isatty(stream) else 100
    for line in format_result(result, format_name, aggregate, color=color, width=width):
        print(line, file=stream)


def print_spread_warning(result: RunResult) -> None:
    """Tell the user on stderr which cells are too noisy to trust, and what to do."""
    for index, line in enumerate(format_spread_warning(result)):
        print(f"zodbshootout: {line}" if index == 0 else line, file=sys.stderr)


def _isatty(stream: Any) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty is not None and isatty())


# --- Subcommands ----------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see zodbshootout {self.prog.split()[-1]} --help)")


def _subcommand_parser(name: str) -> argparse.ArgumentParser:
    descriptions = {
        "show": "Print the table of a saved run (-o) again, in any format.",
        "compare": "Compare two saved runs cell by cell: rates, ratio, and whether the "
        "difference is significant (Welch's t-test over the repetitions).",
        "plot": "Draw a saved run: a bar chart of rate per phase and database (log scale), "
        "and rate against object count or concurrency when the run has several.",
        "export": "Write a saved run as a pyperf benchmark suite (for pyperf compare_to, "
        "stats, hist).",
    }
    parser = _Parser(prog=f"zodbshootout {name}", description=descriptions[name])
    if name == "compare":
        parser.add_argument("base", metavar="BASE.json", help="the run to compare against")
        parser.add_argument("changed", metavar="CHANGED.json", help="the run with the change")
    else:
        parser.add_argument("result", metavar="RESULT.json", help="a file saved with -o")
    if name == "show":
        parser.add_argument(
            "--format",
            choices=FORMATS,
            default=None,
            help="csv, markdown, json or table (default: what the run printed)",
        )
    if name in ("plot", "export"):
        suffix = ".png" if name == "plot" else ".json"
        parser.add_argument(
            "-o",
            "--output",
            metavar=f"FILE{suffix}",
            required=True,
            help="where to write the chart (.png, .svg, .pdf)"
            if name == "plot"
            else "where to write the pyperf suite ('-': stdout)",
        )
    if name != "export":
        parser.add_argument(
            "--aggregate",
            choices=AGGREGATES,
            default=None,
            help="combine repetitions by mean or best (default: what the run used)",
        )
    parser.add_argument("-q", "--quiet", action="store_true", help="no warnings on stderr")
    parser.add_argument("--debug", action="store_true", help="show tracebacks of errors")
    return parser


def main_subcommand(argv: Sequence[str]) -> int:
    """Run ``zodbshootout SUBCOMMAND ...``; return the exit code."""
    name, rest = argv[0], list(argv[1:])
    debug = "--debug" in rest
    try:
        args = _subcommand_parser(name).parse_args(rest)
        return _COMMANDS[name](args)
    except UsageError as e:
        if debug:
            raise
        print(f"zodbshootout {name}: error: {e}", file=sys.stderr)
        return EXIT_USAGE


def saved_aggregate(result: RunResult, chosen: str | None) -> str:
    """The aggregate to show a saved run with: the user's choice, else the run's own."""
    if chosen:
        return chosen
    used = result.metadata.get("options", {}).get("aggregate")
    return used if used in AGGREGATES else "mean"


def _show(args: argparse.Namespace) -> int:
    result = resultfile.load(args.result)
    saved_format = result.metadata.get("format")
    format_name = args.format or (saved_format if saved_format in FORMATS else "csv")
    print_table(result, format_name, saved_aggregate(result, args.aggregate))
    if not args.quiet:
        print_spread_warning(result)
    return EXIT_OK


def _compare(args: argparse.Namespace) -> int:
    from zodbshootout.compare import compare_results, format_comparison

    base = resultfile.load(args.base)
    changed = resultfile.load(args.changed)
    aggregate = args.aggregate or saved_aggregate(base, None)
    base_name, changed_name = os.path.basename(args.base), os.path.basename(args.changed)
    if base_name == changed_name:
        base_name, changed_name = "base", "changed"
    comparisons = compare_results(base, changed, aggregate)
    for line in format_comparison(comparisons, base_name, changed_name, aggregate):
        print(line)
    return EXIT_OK


def _plot(args: argparse.Namespace) -> int:
    from zodbshootout.render.plot import plot_result

    result = resultfile.load(args.result)
    plot_result(result, args.output, saved_aggregate(result, args.aggregate))
    if not args.quiet:
        print(f"zodbshootout: wrote {args.output}", file=sys.stderr)
    return EXIT_OK


def _export(args: argparse.Namespace) -> int:
    from zodbshootout.pyperf_export import dumps_pyperf

    result = resultfile.load(args.result)
    try:
        resultfile.write_atomically(args.output, dumps_pyperf(result))
    except OSError as e:
        raise UsageError(f"cannot write {args.output}: {e.strerror or e}") from None
    return EXIT_OK


_COMMANDS = {"show": _show, "compare": _compare, "plot": _plot, "export": _export}
