"""``zodbshootout report RESULT.json|DIR... -o REPORT_DIR``: saved runs as a static web page.

One run, two (BASE.json CHANGED.json) compared, or a directory of runs (or
three or more) as a history: index.html and its SVG charts, to publish.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from zodbshootout.cli.commands import Command
from zodbshootout.cli.parsing import add_aggregate, add_files, add_output
from zodbshootout.cli.saved import (
    format_differences,
    is_pair,
    is_single,
    run_names,
    saved_aggregate,
    warn,
)
from zodbshootout.cli.say import emit
from zodbshootout.errors import EXIT_OK, UsageError
from zodbshootout.outputfile import REPORT_MARKER
from zodbshootout.results import file as resultfile
from zodbshootout.results import metadata
from zodbshootout.results.noise import format_busy_warning
from zodbshootout.results.record import RunResult

if TYPE_CHECKING:  # the report's page and charts load only when one is written
    from zodbshootout.render.html import Report

DESCRIPTION = (
    "Write saved runs as a static web page (index.html and SVG charts) to "
    "publish: one run, two (BASE.json CHANGED.json) compared, or a directory of runs or "
    "three or more as a history."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_files(
        parser,
        "results",
        "RESULT.json|DIR",
        "one saved run, two (BASE.json CHANGED.json) for a comparison, or a "
        "directory or three or more for a history",
    )
    add_output(
        parser,
        "DIR",
        "the report's directory: new, empty, or an earlier report's (one holding "
        f"{REPORT_MARKER}: the files it wrote are replaced)",
        required=True,
    )
    add_aggregate(parser)
    parser.add_argument(
        "--series",
        metavar="PATTERN",
        action="append",
        help="one mix run: the series its chart page draws, as plot --series chooses them",
    )


def run(args: argparse.Namespace) -> int:
    from zodbshootout import outputfile
    from zodbshootout.render import html

    paths: list[str] = args.results
    if args.series and not is_single(paths):
        raise UsageError("--series chooses the series of one mix run's page")
    outputfile.check_report_directory(args.output)  # before drawing: a mistake costs no time
    if is_single(paths):
        result = resultfile.load(paths[0])
        if result.mix:
            from zodbshootout.results.mix import MixRun

            run = MixRun.of(result)
            if args.series:
                from zodbshootout.render.mix_plot import check_patterns

                check_patterns(run, args.series)
            report = html.mix_report(run, result, paths[0], args.series)
        else:
            if args.series:
                raise UsageError("--series chooses a mix run's series; this is a classic run")
            report = html.run_report(result, saved_aggregate(result, args.aggregate), paths[0])
    elif is_pair(paths):
        report = _comparison_report(paths, args.aggregate)
    else:
        from zodbshootout.results.history import history_cells, load_runs

        runs, skipped = load_runs(paths)
        _refuse_mix_report([run.result for run in runs])
        warn("report", skipped, args.quiet)
        aggregate = args.aggregate or saved_aggregate(runs[-1].result, None)
        report = html.history_report(runs, history_cells(runs), aggregate)
    write_page(report, args.output, args.quiet)
    return EXIT_OK


def write_page(report: Report, directory: str, quiet: bool) -> None:
    """*report* written into *directory* (report's and trace-stats --html's), and said."""
    from zodbshootout.render import html

    try:
        written = html.write_report(report, directory)
    except OSError as e:
        raise UsageError(f"cannot write {directory}: {e.strerror or e}") from None
    if not quiet:
        emit(f"zodbshootout: wrote {written[0]} ({len(written)} files)", sys.stderr)


def _comparison_report(paths: list[str], chosen: str | None) -> Report:
    """The page of two runs compared, with a warning for each difference in their conditions."""
    from zodbshootout.render import html
    from zodbshootout.results.compare import compare_results, require_common_cells

    base, changed = (resultfile.load(path) for path in paths)
    _refuse_mix_report([base, changed])
    names = run_names(paths, [base, changed])
    comparison = compare_results(base, changed, saved_aggregate(base, chosen), *names)
    require_common_cells(comparison)
    differences = metadata.differing_facts(base.metadata, changed.metadata)
    warnings = [format_differences(names[1], names[0], differences)] if differences else []
    for name, result in zip(names, (base, changed), strict=True):
        warnings += [f"{name}: {line}" for line in format_busy_warning(result.metadata)]
    return html.comparison_report(comparison, (base, changed), warnings)


def _refuse_mix_report(results: list[RunResult]) -> None:
    """The web report has a page for one mix run, not yet for two or a history of them."""
    if any(result.mix for result in results):
        raise UsageError(
            "report writes a page for one mix run; for two or more use compare or history "
            "--format markdown, and plot"
        )


COMMAND = Command(
    description=DESCRIPTION,
    add_arguments=add_arguments,
    run=run,
    quiet_help="no warnings, and don't say which files were written",
)
