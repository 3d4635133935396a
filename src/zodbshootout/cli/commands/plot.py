"""``zodbshootout plot RESULT.json... -o CHART.png``: saved runs as a chart.

One run: a bar chart per phase and database (a maintain run: each
operation's time against the size, log-log; a mix run: its latency
spectrum, latency and throughput over time and its series below them; an
--rtt ladder: throughput, and a mix run's p99, against the RTT); two
runs: a comparison chart; a directory
of runs (--save-to), or three or more: a history.
"""

from __future__ import annotations

import argparse
import sys

from zodbshootout.cli.commands import Command
from zodbshootout.cli.parsing import add_aggregate, add_files, add_output
from zodbshootout.cli.saved import is_pair, is_single, run_names, saved_aggregate, warn
from zodbshootout.cli.say import emit
from zodbshootout.errors import EXIT_OK, UsageError
from zodbshootout.results import file as resultfile

DESCRIPTION = (
    "Draw saved runs: one run as a bar chart per phase and database; two runs "
    "as a comparison chart; a directory of runs (--save-to) or three or more as a "
    "history: rate over runs with each run's confidence interval."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_files(
        parser,
        "results",
        "RESULT.json",
        "one saved run, two (BASE.json CHANGED.json) for a comparison chart, or a "
        "directory or three or more for a history",
    )
    add_output(parser, "FILE.png", "where to write the chart (.png, .svg, .pdf)", required=True)
    add_aggregate(parser)
    parser.add_argument(
        "--series",
        metavar="PATTERN",
        action="append",
        help="a mix run: the series drawn below latency and throughput, by name "
        "(client.rss, zeo.commits, postgresql.object_state.dead_rows; shell-style "
        "patterns: '*' is every series); repeat it for more. Default: the client's "
        "caches and memory, and each server's commits, conflicts, reads and lock waits",
    )


def run(args: argparse.Namespace) -> int:
    paths: list[str] = args.results
    if is_single(paths):
        _plot_one(paths[0], args)
    elif is_pair(paths):
        _plot_two(paths, args)
    else:
        _plot_history(paths, args)
    if not args.quiet:
        emit(f"zodbshootout: wrote {args.output}", sys.stderr)
    return EXIT_OK


def _plot_one(path: str, args: argparse.Namespace) -> None:
    result = resultfile.load(path)
    from zodbshootout.render.rtt_plot import is_ladder, plot_rtt

    if is_ladder(result) and not args.series:
        plot_rtt(result, args.output, saved_aggregate(result, args.aggregate))
    elif result.maintenance:
        from zodbshootout.render.maintenance_plot import plot_maintenance
        from zodbshootout.results.maintenance import MaintenanceRun

        plot_maintenance(MaintenanceRun.of(result), args.output)
    elif result.mix:
        from zodbshootout.render.mix_plot import plot_mix
        from zodbshootout.results.mix import MixRun

        plot_mix(MixRun.of(result), args.output, args.series)
    else:
        if args.series:
            raise UsageError("--series chooses a mix run's series; this is a classic run")
        from zodbshootout.render.plot import plot_result

        plot_result(result, args.output, saved_aggregate(result, args.aggregate))


def _plot_two(paths: list[str], args: argparse.Namespace) -> None:
    base, changed = (resultfile.load(path) for path in paths)
    base_name, changed_name = run_names(paths, [base, changed])
    if base.mix or changed.mix:
        from zodbshootout.render.mix_plot import plot_mix_comparison
        from zodbshootout.results.mix import MixRun

        if not (base.mix and changed.mix):
            raise UsageError("a mix run can only be compared with another mix run")
        plot_mix_comparison(
            MixRun.of(base), MixRun.of(changed), base_name, changed_name, args.output
        )
        return
    from zodbshootout.render.ratio_chart import plot_comparison
    from zodbshootout.results.compare import compare_results, require_common_cells

    aggregate = saved_aggregate(base, args.aggregate)
    comparison = compare_results(base, changed, aggregate, base_name, changed_name)
    require_common_cells(comparison)
    plot_comparison(comparison, args.output)


def _plot_history(paths: list[str], args: argparse.Namespace) -> None:
    from zodbshootout.render.plot import plot_history
    from zodbshootout.results.history import history_cells, load_runs

    runs, warnings = load_runs(paths)
    if any(run.result.mix for run in runs):
        # No history chart of mix runs yet; refused, not a division by zero.
        raise UsageError(
            "plot draws one mix run, or two compared (BASE.json CHANGED.json); "
            "'zodbshootout history' lines up more"
        )
    warn("plot", warnings, args.quiet)
    aggregate = args.aggregate or saved_aggregate(runs[-1].result, None)
    plot_history(runs, history_cells(runs), args.output, aggregate)


COMMAND = Command(
    description=DESCRIPTION,
    add_arguments=add_arguments,
    run=run,
    quiet_help="no warnings, and don't say which file was written",
)
