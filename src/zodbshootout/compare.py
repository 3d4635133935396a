"""Compare two saved runs cell by cell: both rates, the ratio, and whether it is real.

A ratio alone can be noise: two runs of the same code on the same machine
differ by a few percent.  Each cell's repetitions are therefore compared
with Welch's t-test (unequal variances, as two runs need not be equally
noisy).  A comparison tests many cells at once (21 for three databases and
seven phases), and at p < 0.05 one in twenty identical cells would look
different by chance; the p-values are therefore adjusted with Holm's
step-down method (Holm-Bonferroni), which keeps the chance of any false
"significant" in the whole comparison below 5% and is never less powerful
than plain Bonferroni.  A cell measured once on either side can't be tested
and says so.

The geometric mean of the cells' ratios summarises a comparison: unlike an
arithmetic mean it treats a 2x speed-up and a 2x slowdown as cancelling
out, and a cell with a huge rate (steamin) weighs no more than any other.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

from zodbshootout.errors import UsageError
from zodbshootout.results import CellKey, RunResult
from zodbshootout.stats import Stats, TTest, cell_stats, welch_t_test

#: A difference with a smaller (Holm-adjusted) two-sided p-value is significant.
ALPHA = 0.05


@dataclass(frozen=True)
class CellComparison:
    """One cell in both runs; a side's stats are None where it has no measurement."""

    key: CellKey
    base: Stats | None
    changed: Stats | None
    base_rate: float | None  # objects per second, aggregated
    changed_rate: float | None
    test: TTest | None
    #: The test's p-value adjusted for all the cells tested in the same comparison.
    p_adjusted: float | None = None

    @property
    def ratio(self) -> float | None:
        """changed ÷ base rate: above 1 the changed run is faster."""
        if not self.base_rate or self.changed_rate is None:
            return None
        return self.changed_rate / self.base_rate

    @property
    def significant(self) -> bool | None:
        """Whether the rates differ beyond noise (Holm-adjusted); None when untested."""
        if self.test is None or self.p_adjusted is None:
            return None
        return self.p_adjusted < ALPHA

    @property
    def slowdown_percent(self) -> float | None:
        """How much longer the changed run takes per object, in percent; None if not slower.

        A rate that halves is 100% slower: the work takes twice as long.
        """
        ratio = self.ratio
        if ratio is None or ratio >= 1.0 or ratio <= 0.0:
            return None
        return (1.0 / ratio - 1.0) * 100.0


@dataclass(frozen=True)
class Comparison:
    """A changed run against the base: the cells both planned, and those only one did."""

    base_name: str
    changed_name: str
    aggregate: str
    cells: list[CellComparison]
    only_in_base: list[CellKey] = field(default_factory=list)
    only_in_changed: list[CellKey] = field(default_factory=list)

    @property
    def tested(self) -> list[CellComparison]:
        return [c for c in self.cells if c.significant is not None]

    @property
    def measured_in_both(self) -> list[CellComparison]:
        return [c for c in self.cells if c.ratio is not None and c.ratio > 0.0]

    @property
    def geometric_mean(self) -> float | None:
        """The geometric mean of the ratios of every cell measured in both runs."""
        ratios = [c.ratio for c in self.measured_in_both if c.ratio is not None]
        if not ratios:
            return None
        return math.exp(math.fsum(math.log(r) for r in ratios) / len(ratios))

    def slower_than(self, percent: float) -> list[CellComparison]:
        """Cells significantly slower (after the correction) by more than *percent*."""
        return [c for c in self.cells if c.significant and (c.slowdown_percent or 0.0) > percent]


def holm_adjust(p_values: list[float]) -> list[float]:
    """Holm's step-down adjustment of *p_values*, returned in their original order.

    Sorted ascending, the i-th smallest (0-based) of m values is multiplied
    by m - i; each adjusted value is at least the one before it, and at most 1.
    """
    m = len(p_values)
    order = sorted(range(m), key=lambda index: p_values[index])
    adjusted = [0.0] * m
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted


def compare_results(
    base: RunResult,
    changed: RunResult,
    aggregate: str = "mean",
    base_name: str = "base",
    changed_name: str = "changed",
) -> Comparison:
    """Every cell both runs planned, in the base run's order; the others listed apart."""
    raw = []
    for key in _cells(base, changed):
        base_stats = cell_stats(base, key)
        changed_stats = cell_stats(changed, key)
        test = None
        if base_stats is not None and changed_stats is not None:
            test = welch_t_test(changed_stats.rates, base_stats.rates)
        raw.append(
            CellComparison(
                key,
                base_stats,
                changed_stats,
                None if base_stats is None else base_stats.aggregate(aggregate),
                None if changed_stats is None else changed_stats.aggregate(aggregate),
                test,
            )
        )
    tested = [index for index, c in enumerate(raw) if c.test is not None]
    p_values = [raw[index].test.p_value for index in tested]  # type: ignore[union-attr]
    cells = list(raw)
    for index, p_adjusted in zip(tested, holm_adjust(p_values), strict=True):
        cells[index] = dataclasses.replace(raw[index], p_adjusted=p_adjusted)
    return Comparison(
        base_name,
        changed_name,
        aggregate,
        cells,
        only_in_base=[k for k in _planned_cells(base) if not _planned(changed, k)],
        only_in_changed=[k for k in _planned_cells(changed) if not _planned(base, k)],
    )


def require_common_cells(comparison: Comparison) -> None:
    """A UsageError when the two runs have no measured cell in common: nothing to compare."""
    if not comparison.measured_in_both:
        raise UsageError(
            f"{comparison.changed_name} and {comparison.base_name} have 0 cells in common "
            "(measured in both): compare runs of the same databases, phases, object counts "
            "and concurrency levels"
        )


def _planned_cells(result: RunResult) -> list[CellKey]:
    return [
        CellKey(database, concurrency, count, phase)
        for concurrency in result.concurrencies
        for database in result.databases
        for count in result.object_counts
        for phase in result.phases
    ]


def _cells(base: RunResult, changed: RunResult) -> list[CellKey]:
    return [key for key in _planned_cells(base) if _planned(changed, key)]


def _planned(result: RunResult, key: CellKey) -> bool:
    return (
        key.database in result.databases
        and key.concurrency in result.concurrencies
        and key.object_count in result.object_counts
        and key.phase in result.phases
    )
