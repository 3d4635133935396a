"""The subcommands on saved runs and traces: show, compare, plot, export, history, cachesim.

Part of cli/, the program's edge, the only package that prints.
``cli.entry.main`` hands over to :func:`main_subcommand` when the first
argument names a subcommand (their arguments are in
:mod:`zodbshootout.cli.subcommand_parser`)::

    zodbshootout show RESULT.json [--format FORMAT] [--metadata] [--aggregate mean|min]
    zodbshootout compare BASE.json CHANGED.json... [--format F] [--fail-if-slower PCT]
    zodbshootout plot RESULT.json... -o CHART.png [--aggregate mean|min]
    zodbshootout export RESULT.json -o PYPERF.json
    zodbshootout history DIR|RESULT.json... [--format F]
    zodbshootout cachesim TRACE... [--policy zeo,relstorage,lru] [--sizes 1MB,4MB] [--format F]
    zodbshootout report DIR|RESULT.json... -o REPORT_DIR [--aggregate mean|min]
    zodbshootout mix CONFIG ...  (see zodbshootout.cli.mix)

The table and warning printers here serve a run too (:mod:`zodbshootout.cli.measure`).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from zodbshootout.cli.report import report_error, shorten_long_words
from zodbshootout.cli.subcommand_parser import build_subcommand_parser
from zodbshootout.errors import (
    EXIT_CELLS_FAILED,
    EXIT_INCONCLUSIVE,
    EXIT_OK,
    EXIT_SIGINT,
    EXIT_USAGE,
    UsageError,
)
from zodbshootout.render.formats import FORMATS, MIX_FORMATS, format_result
from zodbshootout.results import file as resultfile
from zodbshootout.results import metadata
from zodbshootout.results.mix import MixRun
from zodbshootout.results.noise import busy_load, format_busy_warning
from zodbshootout.results.record import RunResult
from zodbshootout.results.stats import AGGREGATES, format_spread_warning


def print_table(
    result: RunResult, format_name: str, aggregate: str, stream: TextIO | None = None
) -> None:
    """Print the table to *stream* (stdout); the terminal table gets colours on a terminal."""
    stream = stream or sys.stdout
    color = _isatty(stream) and "NO_COLOR" not in os.environ
    # A file or a pipe gets the table's natural width: nothing is cut.
    width = shutil.get_terminal_size((100, 24)).columns if _isatty(stream) else None
    for line in format_result(result, format_name, aggregate, color=color, width=width):
        print(line, file=stream)


def print_spread_warning(result: RunResult) -> None:
    """Tell the user on stderr which cells are too noisy to trust, and what to do;
    and whether the machine was busy while they were measured."""
    for index, line in enumerate(format_spread_warning(result)):
        print(f"zodbshootout: {line}" if index == 0 else line, file=sys.stderr)
    for line in format_busy_warning(result.metadata):
        print(f"zodbshootout: warning: {line}", file=sys.stderr)


def _isatty(stream: Any) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty is not None and isatty())


# --- Subcommands ----------------------------------------------------------------
# Their arguments are defined in zodbshootout.cli.arguments; cli.main_subcommand
# parses them and calls the handler named by COMMANDS.


def saved_aggregate(result: RunResult, chosen: str | None) -> str:
    """The aggregate to show a saved run with: the user's choice, else the run's own."""
    if chosen:
        return chosen
    used = result.metadata.get("options", {}).get("aggregate")
    return used if used in AGGREGATES else "mean"


def _warn(command: str, lines: list[str], quiet: bool) -> None:
    if quiet:
        return
    for line in lines:
        print(f"zodbshootout {command}: warning: {line}", file=sys.stderr)


def _show(args: argparse.Namespace) -> int:
    result = resultfile.load(args.result)
    if result.mix and not args.metadata:
        from zodbshootout.render.mix_formats import format_mix_as

        # Runs saved before mix took --format say "mix": the table.
        saved = result.metadata.get("format")
        for line in format_mix_as(
            MixRun.of(result), args.format or (saved if saved in MIX_FORMATS else "table")
        ):
            print(line)
        return EXIT_OK
    if args.metadata:
        from zodbshootout.render.metadata import format_metadata

        for line in format_metadata(result):
            print(line)
        return EXIT_OK
    saved_format = result.metadata.get("format")
    format_name = args.format or (saved_format if saved_format in FORMATS else "csv")
    print_table(result, format_name, saved_aggregate(result, args.aggregate))
    if not args.quiet:
        print_spread_warning(result)
    return EXIT_OK


def run_names(paths: list[str], results: list[RunResult] | None = None) -> list[str]:
    """How each compared run is called in the output.

    Its label (``--label``) when every run has a different one, else its
    file's base name, else its path if two base names match.
    """
    labels = [str(r.metadata.get("label") or "") for r in results or []]
    if labels and all(labels) and len(set(labels)) == len(labels):
        return labels
    names = [os.path.basename(path) for path in paths]
    if len(set(names)) == len(names):
        return names
    if len(set(paths)) == len(paths):
        return list(paths)
    return [
        "base",
        *(f"changed{'' if len(paths) == 2 else index}" for index in range(1, len(paths))),
    ]


def format_differences(name: str, base_name: str, differences: list[tuple[str, Any, Any]]) -> str:
    """The warning for runs measured in different conditions, naming each differing fact."""
    facts = ", ".join(f"{fact} ({ours!r} vs {theirs!r})" for fact, ours, theirs in differences)
    return (
        f"{base_name} and {name} were measured in different conditions: {facts}; "
        "part of any difference may come from them"
    )


def busy_lines(base_name: str, base: RunResult, name: str, changed: RunResult) -> list[str]:
    """A warning per run of a comparison measured on a busy machine."""
    lines = []
    for run_name, result in ((base_name, base), (name, changed)):
        busy = busy_load(result.metadata)
        if busy:
            lines.append(
                f"{run_name} was measured on a busy machine ({busy}): a difference "
                "may come from the load rather than the change"
            )
    return lines


def _compare(args: argparse.Namespace) -> int:
    from zodbshootout.render.comparison import format_comparisons
    from zodbshootout.results.compare import compare_results, require_common_cells

    paths = [args.base, *args.changed]
    results = [resultfile.load(path) for path in paths]
    names = run_names(paths, results)
    if any(result.mix for result in results):
        from zodbshootout.cli.mix_saved import compare_mix_runs

        return compare_mix_runs(args, results, names)
    base, base_name = results[0], names[0]
    aggregate = args.aggregate or saved_aggregate(base, None)
    comparisons = []
    for changed, name in zip(results[1:], names[1:], strict=True):
        # Refused before any warning: an error is one line.
        comparison = compare_results(base, changed, aggregate, base_name, name)
        require_common_cells(comparison)
        differences = metadata.differing_facts(base.metadata, changed.metadata)
        if differences:
            _warn("compare", [format_differences(name, base_name, differences)], args.quiet)
        _warn("compare", busy_lines(base_name, base, name, changed), args.quiet)
        comparisons.append(comparison)
    for line in format_comparisons(comparisons, args.format):
        print(line)
    if args.fail_if_slower is None:
        return EXIT_OK
    return _gate(comparisons, args.fail_if_slower)


def _gate(comparisons: list[Any], percent: float) -> int:
    """--fail-if-slower: 1 if a cell is slower by more than *percent*, 3 if the runs
    could not have shown such a slowdown somewhere, else 0; the reasons on stderr."""
    from zodbshootout.render.comparison import describe_cell, format_ratio

    gates = [(c, c.gate(percent)) for c in comparisons]
    slower = [(c, cell) for c, gate in gates for cell in gate.slower]
    if slower:
        print(
            f"zodbshootout compare: {len(slower)} cell(s) significantly slower than the base "
            f"by more than {percent:g}% (--fail-if-slower):",
            file=sys.stderr,
        )
        for comparison, cell in slower:
            print(
                f"  {comparison.changed_name}: {describe_cell(cell.key)}: "
                f"{format_ratio(cell.ratio)} (adjusted p={cell.p_adjusted:.3g})",
                file=sys.stderr,
            )
        return EXIT_CELLS_FAILED
    blind = [(c, cell) for c, gate in gates for cell in gate.blind]
    if not blind:
        return EXIT_OK
    counts = [gate.advised_repetitions for _c, gate in gates if gate.blind]
    for line in _inconclusive_lines(percent, blind, counts):
        print(line, file=sys.stderr)
    return EXIT_INCONCLUSIVE


def _inconclusive_lines(
    percent: float, blind: list[tuple[Any, Any]], counts: list[int | None]
) -> list[str]:
    """Why the gate can't pass: the cells that could not show *percent*, and the advice."""
    from zodbshootout.render.comparison import describe_cell, format_percent, format_ratio

    lines = [
        f"zodbshootout compare: inconclusive: asked to catch a {percent:g}% slowdown "
        f"(--fail-if-slower {percent:g}), but {len(blind)} cell(s) could not have shown it:"
    ]
    for comparison, cell in blind[:10]:
        seen = cell.detectable_slowdown_percent
        can = "untested (1 repetition)" if seen is None else f"can detect {format_percent(seen)}"
        lines.append(
            f"  {comparison.changed_name}: {describe_cell(cell.key)}: "
            f"{format_ratio(cell.ratio)}, {can}"
        )
    if len(blind) > 10:
        lines.append(f"  ... and {len(blind) - 10} more")
    if counts and all(counts):
        advice = f"run both with -r {max(c for c in counts if c)} (at today's spread)"
    else:
        advice = "more repetitions alone won't do at today's spread"
    lines.append(
        f"  To resolve {percent:g}%: {advice}, on a quieter machine, or raise the threshold."
    )
    return lines


def _plot(args: argparse.Namespace) -> int:
    paths: list[str] = args.results
    aggregate_of = saved_aggregate
    if len(paths) == 1 and not os.path.isdir(paths[0]):
        from zodbshootout.render.plot import plot_result

        result = resultfile.load(paths[0])
        if result.mix:
            from zodbshootout.render.mix_plot import plot_mix

            plot_mix(MixRun.of(result), args.output)
        else:
            plot_result(result, args.output, aggregate_of(result, args.aggregate))
    elif len(paths) == 2 and not any(os.path.isdir(path) for path in paths):
        from zodbshootout.render.plot import plot_comparison
        from zodbshootout.results.compare import compare_results, require_common_cells

        base, changed = (resultfile.load(path) for path in paths)
        base_name, changed_name = run_names(paths, [base, changed])
        if base.mix or changed.mix:
            from zodbshootout.render.mix_plot import plot_mix_comparison

            if not (base.mix and changed.mix):
                raise UsageError("a mix run can only be compared with another mix run")
            plot_mix_comparison(
                MixRun.of(base), MixRun.of(changed), base_name, changed_name, args.output
            )
        else:
            comparison = compare_results(
                base, changed, aggregate_of(base, args.aggregate), base_name, changed_name
            )
            require_common_cells(comparison)
            plot_comparison(comparison, args.output)
    else:
        from zodbshootout.render.plot import plot_history
        from zodbshootout.results.history import history_cells, load_runs

        runs, warnings = load_runs(paths)
        if any(run.result.mix for run in runs):
            # No history chart of mix runs yet; refused, not a division by zero.
            raise UsageError(
                "plot draws one mix run, or two compared (BASE.json CHANGED.json); "
                "'zodbshootout history' lines up more"
            )
        _warn("plot", warnings, args.quiet)
        aggregate = args.aggregate or saved_aggregate(runs[-1].result, None)
        plot_history(runs, history_cells(runs), args.output, aggregate)
    if not args.quiet:
        print(f"zodbshootout: wrote {args.output}", file=sys.stderr)
    return EXIT_OK


def _export(args: argparse.Namespace) -> int:
    from zodbshootout.results.pyperf_export import dumps_pyperf

    result = resultfile.load(args.result)
    try:
        resultfile.write_atomically(args.output, dumps_pyperf(result))
    except OSError as e:
        raise UsageError(f"cannot write {args.output}: {e.strerror or e}") from None
    return EXIT_OK


def _history(args: argparse.Namespace) -> int:
    from zodbshootout.render.history import format_history
    from zodbshootout.results.history import history_cells, load_runs

    runs, warnings = load_runs(args.runs)
    _warn("history", warnings, args.quiet)
    if any(run.result.mix for run in runs):
        from zodbshootout.render.mix_formats import format_mix_history_as

        if not all(run.result.mix for run in runs):
            raise UsageError("a history holds either mix runs or classic runs, not both")
        named = [(run.name, MixRun.of(run.result)) for run in runs]
        for line in format_mix_history_as(named, args.format):
            print(line)
        return EXIT_OK
    aggregate = args.aggregate or saved_aggregate(runs[-1].result, None)
    for line in format_history(runs, history_cells(runs), aggregate, args.format):
        print(line)
    return EXIT_OK


def _cachesim(args: argparse.Namespace) -> int:
    from zodbshootout.cachesim.replay import simulate
    from zodbshootout.render.cachesim import format_simulation

    if args.plot:
        from zodbshootout.render.cachesim_plot import check_plot_target

        check_plot_target(args.plot)  # before the replays, which may take long
    simulation = simulate(args.traces, sorted(set(args.sizes)), args.policy)
    _warn("cachesim", simulation.skipped, args.quiet)
    if args.plot:
        from zodbshootout.render.cachesim_plot import plot_simulation

        plot_simulation(simulation, args.plot)
        if not args.quiet:
            print(f"zodbshootout: wrote {args.plot}", file=sys.stderr)
    for line in format_simulation(simulation, args.format):
        print(line)
    return EXIT_OK


def _report(args: argparse.Namespace) -> int:
    from zodbshootout import outputfile
    from zodbshootout.render import html

    paths: list[str] = args.results
    outputfile.check_report_directory(args.output)  # before drawing: a mistake costs no time
    if len(paths) == 1 and not os.path.isdir(paths[0]):
        result = resultfile.load(paths[0])
        _refuse_mix_report([result])
        report = html.run_report(result, saved_aggregate(result, args.aggregate), paths[0])
    elif len(paths) == 2 and not any(os.path.isdir(path) for path in paths):
        from zodbshootout.results.compare import compare_results, require_common_cells

        base, changed = (resultfile.load(path) for path in paths)
        _refuse_mix_report([base, changed])
        names = run_names(paths, [base, changed])
        comparison = compare_results(base, changed, saved_aggregate(base, args.aggregate), *names)
        require_common_cells(comparison)
        differences = metadata.differing_facts(base.metadata, changed.metadata)
        warnings = [format_differences(names[1], names[0], differences)] if differences else []
        for name, result in zip(names, (base, changed), strict=True):
            warnings += [f"{name}: {line}" for line in format_busy_warning(result.metadata)]
        report = html.comparison_report(comparison, (base, changed), warnings)
    else:
        from zodbshootout.results.history import history_cells, load_runs

        runs, skipped = load_runs(paths)
        _refuse_mix_report([run.result for run in runs])
        _warn("report", skipped, args.quiet)
        aggregate = args.aggregate or saved_aggregate(runs[-1].result, None)
        report = html.history_report(runs, history_cells(runs), aggregate)
    try:
        written = html.write_report(report, args.output)
    except OSError as e:
        raise UsageError(f"cannot write {args.output}: {e.strerror or e}") from None
    if not args.quiet:
        print(f"zodbshootout: wrote {written[0]} ({len(written)} files)", file=sys.stderr)
    return EXIT_OK


def _refuse_mix_report(results: list[RunResult]) -> None:
    """The web report has no page for mix runs yet: one line, not an error inside it."""
    if any(result.mix for result in results):
        raise UsageError(
            "report has no page for mix runs yet: use show or compare --format markdown, and plot"
        )


#: The handler of each subcommand (see zodbshootout.cli.arguments.SUBCOMMANDS).
COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "show": _show,
    "compare": _compare,
    "plot": _plot,
    "export": _export,
    "history": _history,
    "cachesim": _cachesim,
    "report": _report,
}


def main_subcommand(argv: Sequence[str]) -> int:
    """Run ``zodbshootout SUBCOMMAND ...``; return the exit code.

    A subcommand name always means the subcommand; when a file of that name
    exists too, a usage error says how to run it as a configuration instead.
    """
    name = argv[0]
    debug = "--debug" in argv
    try:
        args = build_subcommand_parser().parse_args(argv)
        if args.command == "mix":
            from zodbshootout.cli import mix as mix_command
            from zodbshootout.config.loader import data_directory

            return mix_command.run(args, data_directory)
        return COMMANDS[args.command](args)
    except UsageError as e:
        if debug:
            raise
        hint = ""
        if os.path.isfile(name):
            hint = f" (to run the configuration file {name!r}, write ./{name})"
        print(f"zodbshootout {name}: error: {shorten_long_words(str(e))}{hint}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return EXIT_SIGINT
    except BrokenPipeError:
        raise  # the reader went away: main() stops quietly
    except Exception as e:  # a bug: one line, and the traceback with --debug
        return report_error(e, argparse.Namespace(debug=debug), internal=True)
