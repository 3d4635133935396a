"""The command line's outputs and its subcommands: save, render, show, compare, plot,
export, history.

Together with :mod:`zodbshootout.cli` this is the program's edge, the only
place that prints.  ``cli.main`` hands over when the first argument names a
subcommand (their arguments are in :mod:`zodbshootout.arguments`)::

    zodbshootout show RESULT.json [--format FORMAT] [--metadata] [--aggregate mean|min]
    zodbshootout compare BASE.json CHANGED.json... [--format F] [--fail-if-slower PCT]
    zodbshootout plot RESULT.json... -o CHART.png [--aggregate mean|min]
    zodbshootout export RESULT.json -o PYPERF.json
    zodbshootout history DIR|RESULT.json... [--format F]
    zodbshootout cachesim TRACE... [--sizes 64KB,1MB,20MB]

and uses :class:`RunOutputs` for a run's ``-o``, ``--save-to``, ``--label``,
``--format`` and ``--pyperf``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

from zodbshootout import metadata, resultfile
from zodbshootout.errors import EXIT_CELLS_FAILED, EXIT_OK, UsageError
from zodbshootout.noise import format_busy_warning
from zodbshootout.options import RunOptions
from zodbshootout.render.formats import FORMATS, format_result
from zodbshootout.results import RunResult
from zodbshootout.stats import AGGREGATES, format_spread_warning

# --- A run's outputs ----------------------------------------------------------


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
        self.label: str | None = getattr(args, "label", None)
        self.save_failed = False  # a final save failed: the run fails too
        self._warned = False  # an intermediate save failed (said once)
        self._saved: set[str] = set()  # paths this run has written at least once
        #: The file --save-to DIR writes: named after the time the run starts, and its label.
        self.saved: str | None = None
        save_to: str | None = getattr(args, "save_to", None)
        if save_to:
            from zodbshootout.history import saved_file_name, unused_path

            if not os.path.isdir(save_to):
                try:
                    os.makedirs(save_to)
                except OSError as e:
                    raise UsageError(f"cannot create {save_to}: {e.strerror or e}") from None
            self.saved = unused_path(save_to, saved_file_name(time.time(), self.label))
        for path in (self.output, self.pyperf, self.saved):
            _check_writable(path, getattr(args, "config", None))

    @property
    def result_files(self) -> list[str]:
        """Where the result document goes: -o (unless stdout) and the --save-to file."""
        return [path for path in (self.output, self.saved) if path and path != "-"]

    def describe(
        self, result: RunResult, options: RunOptions, config_path: str, config_text: str
    ) -> None:
        """Record environment, options and the redacted configuration in *result*."""
        result.metadata.update(
            metadata.run_metadata(options, config_path, config_text, label=self.label)
        )
        # So that ``show`` prints the table the run printed.
        result.metadata["format"] = self.format

    def database_done(self, result: RunResult) -> None:
        """Save what was measured so far (the runner calls this after every database).

        A failed save must not end the run: the table is still printed, and
        the final save is tried again (and reported) by :meth:`finish`.
        """
        for path in self.result_files:
            try:
                resultfile.save(result, path)
                self._saved.add(path)
            except (OSError, UsageError) as e:
                if not self._warned:
                    print(f"zodbshootout: warning: {_save_error(path, e)}", file=sys.stderr)
                self._warned = True

    def finish(self, result: RunResult) -> None:
        """Write the final files: the result (with its end time) and the pyperf suite.

        A file that can't be written is reported on stderr and sets
        ``save_failed``; the table is still printed, since the measurements
        are worth more than the file.
        """
        environment = result.metadata.get("environment")
        if isinstance(environment, dict):
            environment["load_average_end"] = metadata.load_average()
        files = []
        document = resultfile.dumps(result)
        if self.output:
            files.append((self.output, document))
        if self.saved:
            files.append((self.saved, document))
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
# Their arguments are defined in zodbshootout.arguments; cli.main_subcommand
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


def _compare(args: argparse.Namespace) -> int:
    from zodbshootout.compare import compare_results, require_common_cells
    from zodbshootout.render.comparison import describe_cell, format_comparisons, format_ratio

    paths = [args.base, *args.changed]
    results = [resultfile.load(path) for path in paths]
    names = run_names(paths, results)
    base, base_name = results[0], names[0]
    aggregate = args.aggregate or saved_aggregate(base, None)
    comparisons = []
    for changed, name in zip(results[1:], names[1:], strict=True):
        differences = metadata.differing_facts(base.metadata, changed.metadata)
        if differences:
            _warn("compare", [format_differences(name, base_name, differences)], args.quiet)
        comparison = compare_results(base, changed, aggregate, base_name, name)
        require_common_cells(comparison)
        comparisons.append(comparison)
    for line in format_comparisons(comparisons, args.format):
        print(line)
    if args.fail_if_slower is None:
        return EXIT_OK
    slower = [(c, cell) for c in comparisons for cell in c.slower_than(args.fail_if_slower)]
    if not slower:
        return EXIT_OK
    print(
        f"zodbshootout compare: {len(slower)} cell(s) significantly slower than the base by "
        f"more than {args.fail_if_slower:g}% (--fail-if-slower):",
        file=sys.stderr,
    )
    for comparison, cell in slower:
        print(
            f"  {comparison.changed_name}: {describe_cell(cell.key)}: "
            f"{format_ratio(cell.ratio)} (adjusted p={cell.p_adjusted:.3g})",
            file=sys.stderr,
        )
    return EXIT_CELLS_FAILED


def _plot(args: argparse.Namespace) -> int:
    paths: list[str] = args.results
    aggregate_of = saved_aggregate
    if len(paths) == 1 and not os.path.isdir(paths[0]):
        from zodbshootout.render.plot import plot_result

        result = resultfile.load(paths[0])
        plot_result(result, args.output, aggregate_of(result, args.aggregate))
    elif len(paths) == 2 and not any(os.path.isdir(path) for path in paths):
        from zodbshootout.compare import compare_results, require_common_cells
        from zodbshootout.render.plot import plot_comparison

        base, changed = (resultfile.load(path) for path in paths)
        base_name, changed_name = run_names(paths, [base, changed])
        comparison = compare_results(
            base, changed, aggregate_of(base, args.aggregate), base_name, changed_name
        )
        require_common_cells(comparison)
        plot_comparison(comparison, args.output)
    else:
        from zodbshootout.history import history_cells, load_runs
        from zodbshootout.render.plot import plot_history

        runs, warnings = load_runs(paths)
        _warn("plot", warnings, args.quiet)
        aggregate = args.aggregate or saved_aggregate(runs[-1].result, None)
        plot_history(runs, history_cells(runs), args.output, aggregate)
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


def _history(args: argparse.Namespace) -> int:
    from zodbshootout.history import history_cells, load_runs
    from zodbshootout.render.history import format_history

    runs, warnings = load_runs(args.runs)
    _warn("history", warnings, args.quiet)
    aggregate = args.aggregate or saved_aggregate(runs[-1].result, None)
    for line in format_history(runs, history_cells(runs), aggregate, args.format):
        print(line)
    return EXIT_OK


def _cachesim(args: argparse.Namespace) -> int:
    from zodbshootout import cachesim

    for line in cachesim.run(args):
        print(line)
    return EXIT_OK


#: The handler of each subcommand (see zodbshootout.arguments.SUBCOMMANDS).
COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "show": _show,
    "compare": _compare,
    "plot": _plot,
    "export": _export,
    "history": _history,
    "cachesim": _cachesim,
}
