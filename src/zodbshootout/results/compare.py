"""Compare two saved runs cell by cell: both rates, the ratio, and whether it is real.

A ratio alone can be noise: two runs of the same code on the same machine
differ by a few percent.  Each cell's repetitions are therefore compared
with Welch's t-test (unequal variances, as two runs need not be equally
noisy).  A comparison tests many cells at once (24 for three databases and
eight phases), and at p < 0.05 one in twenty identical cells would look
different by chance; the p-values are therefore adjusted with Holm's
step-down method (Holm-Bonferroni), which keeps the chance of any false
"significant" in the whole comparison below 5% and is never less powerful
than plain Bonferroni.  A cell measured once on either side can't be tested
and says so.

A verdict that finds no difference is not proof of sameness: with few,
noisy repetitions only large changes reach significance.  Each cell
therefore states the smallest change its runs could have detected: the
difference of the mean rates that Welch's test would call significant at
Holm's strictest level, alpha / m for m tested cells (the level one changed
cell among m unchanged ones is held to).  Its verdict is "slower" or
"faster" when the change is significant, else "inconclusive"; a gate
(``--fail-if-slower``) asked to catch a smaller change than the runs can see
says so instead of passing, and says how many repetitions would do.

The geometric mean of the cells' ratios summarises a comparison: unlike an
arithmetic mean it treats a 2x speed-up and a 2x slowdown as cancelling
out, and a cell with a huge rate (steamin) weighs no more than any other.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

from zodbshootout.errors import UsageError
from zodbshootout.results.index_cost import IndexCost, index_costs
from zodbshootout.results.noise import busy_load
from zodbshootout.results.record import DATABASE_ORDER, CellKey, RunResult
from zodbshootout.results.stats import (
    Stats,
    TTest,
    cell_stats,
    student_t_quantile,
    welch_t_test,
)

#: A difference with a smaller (Holm-adjusted) two-sided p-value is significant.
ALPHA = 0.05
#: The verdicts of a cell measured in both runs.
SLOWER, FASTER, INCONCLUSIVE = "slower", "faster", "inconclusive"
#: Advice for more repetitions stops here ("more than" beyond it).
MAX_ADVISED_REPETITIONS = 1000


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
    #: How many cells were tested together (Holm's m); 0 before the correction.
    tested_together: int = 0

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

    @property
    def verdict(self) -> str | None:
        """slower, faster (significant) or inconclusive; None if a side has no measurement."""
        if self.base is None or self.changed is None:
            return None
        if not self.significant or self.test is None:
            return INCONCLUSIVE
        return SLOWER if self.test.t < 0 else FASTER

    @property
    def detectable_rate_change(self) -> float | None:
        """The smallest difference of mean rates (objects per second) these runs could
        have called significant at Holm's strictest level; None when untested."""
        if self.base is None or self.changed is None or self.test is None:
            return None
        return detectable_difference(
            self.base.stddev,
            self.base.count,
            self.changed.stddev,
            self.changed.count,
            max(1, self.tested_together),
        )

    @property
    def detectable_slowdown_percent(self) -> float | None:
        """The smallest slowdown (longer time per object, percent) the runs could detect.

        Infinite when even a rate of zero would not be significant; None when untested.
        """
        change = self.detectable_rate_change
        if change is None or self.base is None:
            return None
        return slowdown_percent_of(change, self.base.mean)

    def repetitions_to_detect(self, percent: float) -> int | None:
        """Repetitions per run that would make a *percent* slowdown detectable.

        Assumes both runs keep their spread (standard deviation of the rates);
        None when untested or more than MAX_ADVISED_REPETITIONS would be needed.
        """
        if self.base is None or self.changed is None or self.test is None:
            return None
        wanted = self.base.mean * (1.0 - 1.0 / (1.0 + percent / 100.0))
        base_stddev, changed_stddev = self.base.stddev, self.changed.stddev
        tests = max(1, self.tested_together)

        def enough(count: int) -> bool:
            change = detectable_difference(base_stddev, count, changed_stddev, count, tests)
            return change <= wanted

        if not enough(MAX_ADVISED_REPETITIONS):
            return None
        # The detectable change shrinks as repetitions grow: bisect for the fewest.
        low, high = 1, MAX_ADVISED_REPETITIONS  # not enough at low (or untried), enough at high
        while high - low > 1:
            middle = (low + high) // 2
            if enough(middle):
                high = middle
            else:
                low = middle
        return max(2, high)

    def interval_level(self) -> float:
        """The two-sided level at which this cell's difference was judged.

        Holm's adjusted p is the raw p times a factor; a confidence interval
        at ALPHA divided by that factor excludes no change exactly when the
        adjusted p is below ALPHA, so a chart drawing it agrees with the verdict.
        """
        m = max(1, self.tested_together)
        if self.test is None or self.p_adjusted is None or self.test.p_value <= 0.0:
            return ALPHA / m
        return ALPHA * self.test.p_value / max(self.p_adjusted, self.test.p_value)

    def ratio_interval(self) -> tuple[float, float] | None:
        """changed ÷ base mean rate's interval at :meth:`interval_level`: it excludes 1
        exactly when the verdict is slower or faster.  None when untested."""
        if self.base is None or self.changed is None or self.test is None:
            return None
        if not self.base.mean:
            return None
        spread = math.sqrt(
            self.base.stddev**2 / self.base.count + self.changed.stddev**2 / self.changed.count
        )
        half = 0.0
        if spread and math.isfinite(self.test.df):
            half = student_t_quantile(1.0 - self.interval_level() / 2.0, self.test.df) * spread
        difference = self.changed.mean - self.base.mean
        return (
            1.0 + (difference - half) / self.base.mean,
            1.0 + (difference + half) / self.base.mean,
        )


def detectable_difference(
    base_stddev: float, base_count: int, changed_stddev: float, changed_count: int, tests: int
) -> float:
    """The difference of two means that Welch's test calls significant at ALPHA / *tests*.

    Rates in objects per second; 0.0 when neither run has any spread.
    """
    var_base = base_stddev**2 / base_count
    var_changed = changed_stddev**2 / changed_count
    if var_base + var_changed == 0.0:
        return 0.0
    df = (var_base + var_changed) ** 2 / (
        var_base**2 / (base_count - 1) + var_changed**2 / (changed_count - 1)
    )
    return student_t_quantile(1.0 - ALPHA / (2.0 * tests), df) * math.sqrt(var_base + var_changed)


def slowdown_percent_of(rate_change: float, base_rate: float) -> float:
    """How much longer per object (percent) a rate lower by *rate_change* takes."""
    if rate_change >= base_rate:
        return math.inf
    return (base_rate / (base_rate - rate_change) - 1.0) * 100.0


@dataclass(frozen=True)
class Gate:
    """``--fail-if-slower``'s answer: the cells slower than the threshold, and the blind ones.

    A blind cell is not found slower but could not have shown a slowdown of
    the threshold (it can see only larger ones, or was measured once).
    """

    percent: float
    slower: list[CellComparison]
    blind: list[CellComparison]

    @property
    def advised_repetitions(self) -> int | None:
        """Repetitions per run that would let every blind cell see the threshold."""
        counts = [c.repetitions_to_detect(self.percent) for c in self.blind]
        if not counts or any(count is None for count in counts):
            return None
        return max(count for count in counts if count is not None)


@dataclass(frozen=True)
class Comparison:
    """A changed run against the base: the cells both planned, and those only one did."""

    base_name: str
    changed_name: str
    aggregate: str
    cells: list[CellComparison]
    only_in_base: list[CellKey] = field(default_factory=list)
    only_in_changed: list[CellKey] = field(default_factory=list)
    #: When exactly one run wrote index entries: their cost per add/update cell.
    index_costs: list[IndexCost] = field(default_factory=list)
    #: ``--only-significant``: the tables list only the slower and faster cells.
    only_significant: bool = False
    #: The runs measured on a busy machine: (name, ``load 10.6 on 2 cores``).
    busy: tuple[tuple[str, str], ...] = ()

    @property
    def shown(self) -> list[CellComparison]:
        """The cells a table lists: all, or only the significant ones (--only-significant).

        The summary (geometric mean, sensitivity) is always of every cell.
        """
        if not self.only_significant:
            return self.cells
        return [c for c in self.cells if c.verdict in (SLOWER, FASTER)]

    @property
    def hidden(self) -> list[CellComparison]:
        """The cells --only-significant leaves out of the tables."""
        shown = {id(c) for c in self.shown}
        return [c for c in self.cells if id(c) not in shown]

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
        return [
            c for c in self.cells if c.verdict == SLOWER and (c.slowdown_percent or 0.0) > percent
        ]

    @property
    def least_sensitive(self) -> CellComparison | None:
        """The measured cell with the largest detectable slowdown (untested ones first)."""
        cells = [c for c in self.cells if c.verdict is not None]
        if not cells:
            return None

        def blindness(c: CellComparison) -> float:
            seen = c.detectable_slowdown_percent
            return math.inf if seen is None else seen

        return max(cells, key=blindness)

    def gate(self, percent: float) -> Gate:
        """Which cells are slower than *percent*, and which could not have shown it."""
        slower = self.slower_than(percent)
        blind = [
            c
            for c in self.cells
            if c.verdict == INCONCLUSIVE
            and (c.detectable_slowdown_percent is None or c.detectable_slowdown_percent > percent)
        ]
        return Gate(percent, slower, blind)


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
        cells[index] = dataclasses.replace(
            raw[index], p_adjusted=p_adjusted, tested_together=len(tested)
        )
    return Comparison(
        base_name,
        changed_name,
        aggregate,
        cells,
        only_in_base=[k for k in _planned_cells(base) if not _planned(changed, k)],
        only_in_changed=[k for k in _planned_cells(changed) if not _planned(base, k)],
        index_costs=index_costs(base, changed, aggregate),
        busy=tuple(
            (name, load)
            for name, result in ((base_name, base), (changed_name, changed))
            if (load := busy_load(result.metadata))
        ),
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
    return result.cell_keys(DATABASE_ORDER)


def _cells(base: RunResult, changed: RunResult) -> list[CellKey]:
    return [key for key in _planned_cells(base) if _planned(changed, key)]


def _planned(result: RunResult, key: CellKey) -> bool:
    return (
        key.database in result.databases
        and key.concurrency in result.concurrencies
        and key.object_count in result.object_counts
        and key.phase in result.phases
    )
