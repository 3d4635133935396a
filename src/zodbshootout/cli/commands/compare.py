"""``zodbshootout compare BASE.json CHANGED.json...``: each changed run against the base.

A versions file (``zodbshootout versions -o``) stands for its variants, the
first the base; ``FILE.json#NAME`` for one of them.

Classic runs cell by cell (rates, ratio, whether the difference is
significant: Welch's t-test, Holm-corrected; a geometric-mean summary);
mix runs per database, operation and metric.  ``--fail-if-slower PCT``
turns a significant slowdown into exit code 1, and a gate the runs could
not have passed or failed into exit code 3 (inconclusive).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Sequence
from typing import Any

from zodbshootout.cli.commands import Command
from zodbshootout.cli.parsing import add_aggregate, add_format, percent
from zodbshootout.cli.printing import print_lines
from zodbshootout.cli.saved import busy_lines, format_differences, run_names, saved_aggregate, warn
from zodbshootout.cli.say import emit
from zodbshootout.errors import EXIT_CELLS_FAILED, EXIT_INCONCLUSIVE, EXIT_OK, UsageError
from zodbshootout.render.formats import get_format
from zodbshootout.results import metadata
from zodbshootout.results.record import RunResult
from zodbshootout.results.work import WORK_COUNTS

DESCRIPTION = (
    "Compare saved runs cell by cell with the first (the base): rates, ratio, "
    "whether the difference is significant (Welch's t-test, Holm-corrected), and a "
    "geometric-mean summary; --fail-if-slower turns a slowdown into exit code 1."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "base",
        metavar="BASE.json",
        help="the run to compare against; a versions file (zodbshootout versions -o) "
        "stands for its variants, the first the base; FILE.json#NAME for one variant",
    )
    parser.add_argument(
        "changed",
        metavar="CHANGED.json",
        nargs="*",
        help="one or more runs with the change, each compared with BASE.json",
    )
    add_format(parser, "table", {"table": "aligned text, default", "markdown": "for pull requests"})
    parser.add_argument(
        "--fail-if-slower",
        metavar="PCT",
        type=percent,
        default=None,
        help="exit with code 1 when a cell is significantly slower (after the Holm "
        "correction) by more than PCT percent, and name those cells; with code 3 "
        "(inconclusive) when some cell's runs could not have shown such a slowdown",
    )
    add_work_gate(parser)
    add_only_significant(parser)
    add_aggregate(parser, "the base run")


def add_work_gate(parser: argparse.ArgumentParser) -> None:
    """``--fail-if-more-work COUNT``: compare's and versions' exact gate."""
    parser.add_argument(
        "--fail-if-more-work",
        metavar="COUNT",
        choices=tuple(WORK_COUNTS),
        default=None,
        help="exit with code 1 when a cell's COUNT per transaction (one of "
        f"{', '.join(WORK_COUNTS)}) grew from the base, and name those cells; exact counts "
        "of runs made with --work, so the gate holds on a busy machine",
    )


def add_only_significant(parser: argparse.ArgumentParser) -> None:
    """``--only-significant``: compare's and versions' shorter table."""
    parser.add_argument(
        "--only-significant",
        action="store_true",
        help="list only the cells (mix: the rows) that differ significantly after Holm's "
        "correction, and say how many were hidden (the summary still covers every cell)",
    )


def run(args: argparse.Namespace) -> int:
    results, names, variants = load_compared([args.base, *args.changed])
    return compare_runs(results, names, args, expected=VARIANT_FACTS if variants else ())


def load_compared(paths: list[str]) -> tuple[list[RunResult], list[str], bool]:
    """The runs to compare, their names, and whether all are variants of versions files.

    A versions file stands for all its variants, ``FILE#NAME`` for one of them.
    """
    from zodbshootout.results.versions import load_runs

    loaded = [(path, name, result) for path in paths for name, result in load_runs(path)]
    if len(loaded) < 2:
        raise UsageError("compare needs two runs (BASE.json CHANGED.json) or a versions file")
    plain = [(path, result) for path, name, result in loaded if name is None]
    plain_names = iter(run_names([p for p, _r in plain], [r for _p, r in plain]))
    names = [name if name is not None else next(plain_names) for _p, name, _r in loaded]
    return [r for _p, _n, r in loaded], names, not plain


#: What differs between variants on purpose: not worth a warning when comparing them.
VARIANT_FACTS = ("Python", "ZODB", "ZEO", "RelStorage")


def compare_runs(
    results: list[RunResult],
    names: list[str],
    args: argparse.Namespace,
    expected: Sequence[str] = (),
) -> int:
    """Print each run compared with the first; the exit code of --fail-if-slower.

    *expected* names the facts the runs differ in on purpose (no warning).
    """
    from zodbshootout.results.compare import compare_results, require_common_cells

    if any(result.mix for result in results):
        return _compare_mix_runs(args, results, names)
    base, base_name = results[0], names[0]
    work_count = args.fail_if_more_work
    if work_count is not None:
        _require_work(results, names)
    aggregate = args.aggregate or saved_aggregate(base, None)
    comparisons = []
    for changed, name in zip(results[1:], names[1:], strict=True):
        # Refused before any warning: an error is one line.
        comparison = compare_results(base, changed, aggregate, base_name, name)
        require_common_cells(comparison)
        if args.only_significant:
            comparison = dataclasses.replace(comparison, only_significant=True)
        differences = [
            fact
            for fact in metadata.differing_facts(base.metadata, changed.metadata)
            if fact[0] not in expected
        ]
        if differences:
            warn("compare", [format_differences(name, base_name, differences)], args.quiet)
        warn("compare", busy_lines(base_name, base, name, changed), args.quiet)
        comparisons.append(comparison)
    print_lines(get_format(args.format).comparisons(comparisons))
    more_work = _work_gate(results, names, work_count)
    if args.fail_if_slower is None:
        return more_work
    return max(more_work, _gate(comparisons, args.fail_if_slower))


def _require_work(results: list[RunResult], names: list[str]) -> None:
    """A UsageError when a run has no work counts (it was made without --work)."""
    from zodbshootout.results.work import has_work

    for result, name in zip(results, names, strict=True):
        if not has_work(result):
            raise UsageError(
                f"--fail-if-more-work: {name} has no work counts; make both runs with --work"
            )


def _work_gate(results: list[RunResult], names: list[str], count: str | None) -> int:
    """--fail-if-more-work: 1 if a cell's *count* per transaction grew, else 0."""
    from zodbshootout.render.comparison import describe_cell
    from zodbshootout.render.insight import work_text
    from zodbshootout.results.work import more_work

    if count is None:
        return EXIT_OK
    grown = [
        (name, cell)
        for changed, name in zip(results[1:], names[1:], strict=True)
        for cell in more_work(results[0], changed, count)
    ]
    if not grown:
        return EXIT_OK
    emit(
        f"zodbshootout compare: {len(grown)} cell(s) did more {count} per transaction "
        f"than the base (--fail-if-more-work {count}):",
        sys.stderr,
    )
    for name, cell in grown:
        emit(
            f"  {name}: {describe_cell(cell.key)}: {work_text(cell.base)} -> "
            f"{work_text(cell.changed)}",
            sys.stderr,
        )
    return EXIT_CELLS_FAILED


def _say_slower(heading: str, cells: list[str]) -> None:
    """The cells that trip --fail-if-slower, under *heading*, on stderr."""
    emit(f"zodbshootout compare: {heading} (--fail-if-slower):", sys.stderr)
    for cell in cells:
        emit(f"  {cell}", sys.stderr)


def _gate(comparisons: list[Any], percent: float) -> int:
    """--fail-if-slower: 1 if a cell is slower by more than *percent*, 3 if the runs
    could not have shown such a slowdown somewhere, else 0; the reasons on stderr."""
    from zodbshootout.render.comparison import describe_cell, format_ratio

    gates = [(c, c.gate(percent)) for c in comparisons]
    slower = [(c, cell) for c, gate in gates for cell in gate.slower]
    if slower:
        _say_slower(
            f"{len(slower)} cell(s) significantly slower than the base by more than {percent:g}%",
            [
                f"{c.changed_name}: {describe_cell(cell.key)}: "
                f"{format_ratio(cell.ratio)} (adjusted p={cell.p_adjusted:.3g})"
                for c, cell in slower
            ],
        )
        return EXIT_CELLS_FAILED
    blind = [(c, cell) for c, gate in gates for cell in gate.blind]
    if not blind:
        return EXIT_OK
    counts = [gate.advised_repetitions for _c, gate in gates if gate.blind]
    for line in _inconclusive_lines(percent, blind, counts):
        emit(line, sys.stderr)
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


def _compare_mix_runs(args: argparse.Namespace, results: list[RunResult], names: list[str]) -> int:
    """Each changed mix run against the base; exit 1 when --fail-if-slower's p99 test trips."""
    from zodbshootout.results.mix import MixRun
    from zodbshootout.results.mix_compare import MetricComparison, slower_p99

    if not all(result.mix for result in results):
        raise UsageError("a mix run can only be compared with another mix run")
    base, base_name = MixRun.of(results[0]), names[0]
    slower: list[tuple[str, MetricComparison]] = []
    comparisons = []
    for changed, name in zip(results[1:], names[1:], strict=True):
        comparison = _mix_comparison(args, (results[0], base, base_name), changed, name)
        comparisons.append(comparison)
        if args.fail_if_slower is not None:
            slower.extend((name, row) for row in slower_p99(comparison.rows, args.fail_if_slower))
    print_lines(get_format(args.format).mix_comparisons(comparisons))
    if not slower:
        return EXIT_OK
    _say_slower(
        f"p99 significantly slower than the base by more than {args.fail_if_slower:g}%",
        [
            f"{name}: {row.database}: p99 {row.base:.2f} ms -> {row.changed:.2f} ms "
            f"(adjusted p={row.p_adjusted:.3g})"
            for name, row in slower
        ],
    )
    return EXIT_CELLS_FAILED


def _mix_comparison(
    args: argparse.Namespace, base: tuple[RunResult, Any, str], changed: RunResult, name: str
) -> Any:
    """One changed mix run against the base, with the warnings of their kind and load.

    Runs of different kinds (closed loop against --rate, another workload,
    dataset or key choice) are still compared, as the user asked, but said
    to be incomparable on stderr and under the table.
    """
    from zodbshootout.render.mix_comparison import kind_text
    from zodbshootout.results.mix import MixRun
    from zodbshootout.results.mix_compare import MixComparison, compare_mix, kind_differences
    from zodbshootout.results.noise import busy_load

    base_result, base_run, base_name = base
    rows = compare_mix(base_run, MixRun.of(changed))
    if not rows:
        raise UsageError(f"{base_name} and {name} have no database in common")
    kind = kind_differences(base_result, changed)
    if kind:
        warn(
            "compare",
            [
                f"{base_name} and {name} are different kinds of mix run ({kind_text(kind)}): "
                "their tx/s and latencies measure different things; compare runs of one kind"
            ],
            args.quiet,
        )
    warn("compare", busy_lines(base_name, base_result, name, changed), args.quiet)
    busy = tuple(
        (run_name, load)
        for run_name, result in ((base_name, base_result), (name, changed))
        if (load := busy_load(result.metadata))
    )
    return MixComparison(
        rows,
        base_name,
        name,
        only_significant=args.only_significant,
        busy=busy,
        kind=tuple(kind),
    )


COMMAND = Command(description=DESCRIPTION, add_arguments=add_arguments, run=run)
