"""``compare`` and ``plot`` of saved mix runs (``show`` prints them with render.mix).

The subcommands hand over here when a result file holds mix records.
"""

from __future__ import annotations

import argparse
import sys

from zodbshootout.errors import EXIT_CELLS_FAILED, EXIT_OK, UsageError
from zodbshootout.render.mix_formats import format_mix_comparisons
from zodbshootout.results.mix import MixRun
from zodbshootout.results.mix_compare import (
    MetricComparison,
    MixComparison,
    compare_mix,
    slower_p99,
)
from zodbshootout.results.record import RunResult


def compare_mix_runs(args: argparse.Namespace, results: list[RunResult], names: list[str]) -> int:
    """Each changed run against the base; exit 1 when --fail-if-slower's p99 test trips."""
    if not all(result.mix for result in results):
        raise UsageError("a mix run can only be compared with another mix run")
    base, base_name = MixRun.of(results[0]), names[0]
    slower: list[tuple[str, MetricComparison]] = []
    comparisons: list[MixComparison] = []
    for changed, name in zip(results[1:], names[1:], strict=True):
        rows = compare_mix(base, MixRun.of(changed))
        if not rows:
            raise UsageError(f"{base_name} and {name} have no database in common")
        comparisons.append(MixComparison(rows, base_name, name))
        if args.fail_if_slower is not None:
            slower.extend((name, row) for row in slower_p99(rows, args.fail_if_slower))
    for line in format_mix_comparisons(comparisons, args.format):
        print(line)
    if not slower:
        return EXIT_OK
    print(
        f"zodbshootout compare: p99 significantly slower than the base by more than "
        f"{args.fail_if_slower:g}% (--fail-if-slower):",
        file=sys.stderr,
    )
    for name, row in slower:
        print(
            f"  {name}: {row.database}: p99 {row.base:.2f} ms -> {row.changed:.2f} ms "
            f"(adjusted p={row.p_adjusted:.3g})",
            file=sys.stderr,
        )
    return EXIT_CELLS_FAILED
