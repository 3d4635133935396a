"""Compare two saved runs cell by cell: both rates, the ratio, and whether it is real.

A ratio alone can be noise: two runs of the same code on the same machine
differ by a few percent.  Each cell's repetitions are therefore compared
with Welch's t-test (unequal variances, as two runs need not be equally
noisy); a difference counts as significant when p < 0.05.  A cell measured
once on either side can't be tested and says so.
"""

from __future__ import annotations

from dataclasses import dataclass

from zodbshootout.render.labels import phase_label
from zodbshootout.results import CellKey, RunResult
from zodbshootout.stats import Stats, TTest, cell_stats, welch_t_test

#: A difference with a smaller two-sided p-value is reported as significant.
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

    @property
    def ratio(self) -> float | None:
        """changed ÷ base rate: above 1 the changed run is faster."""
        if not self.base_rate or self.changed_rate is None:
            return None
        return self.changed_rate / self.base_rate

    @property
    def significant(self) -> bool | None:
        """Whether the rates differ beyond noise; None when that can't be tested."""
        if self.test is None:
            return None
        return self.test.significant(ALPHA)


def compare_results(
    base: RunResult, changed: RunResult, aggregate: str = "mean"
) -> list[CellComparison]:
    """Every cell of either run, in the base run's order, then cells only the changed run has."""
    comparisons = []
    for key in _cells(base, changed):
        base_stats = cell_stats(base, key)
        changed_stats = cell_stats(changed, key)
        test = None
        if base_stats is not None and changed_stats is not None:
            test = welch_t_test(changed_stats.rates, base_stats.rates)
        comparisons.append(
            CellComparison(
                key,
                base_stats,
                changed_stats,
                None if base_stats is None else base_stats.aggregate(aggregate),
                None if changed_stats is None else changed_stats.aggregate(aggregate),
                test,
            )
        )
    return comparisons


def _cells(base: RunResult, changed: RunResult) -> list[CellKey]:
    def ordered(items: list, more: list) -> list:
        return list(dict.fromkeys([*items, *more]))

    keys = []
    for concurrency in ordered(base.concurrencies, changed.concurrencies):
        for database in ordered(base.databases, changed.databases):
            for count in ordered(base.object_counts, changed.object_counts):
                for phase in ordered(base.phases, changed.phases):
                    keys.append(CellKey(database, concurrency, count, phase))
    return [key for key in keys if _planned(base, key) or _planned(changed, key)]


def _planned(result: RunResult, key: CellKey) -> bool:
    return (
        key.database in result.databases
        and key.concurrency in result.concurrencies
        and key.object_count in result.object_counts
        and key.phase in result.phases
    )


def format_ratio(ratio: float | None) -> str:
    """``1.32x faster``, ``1.10x slower`` or ``same``, from a changed ÷ base rate ratio."""
    if ratio is None:
        return "-"
    if round(ratio, 2) == 1.0:
        return "same"
    if ratio > 1.0:
        return f"{ratio:.2f}x faster"
    if ratio <= 0.0:
        return "-"
    return f"{1.0 / ratio:.2f}x slower"


def format_significance(comparison: CellComparison) -> str:
    if comparison.base is None or comparison.changed is None:
        return "-"
    if comparison.test is None:
        return "untested (needs 2+ repetitions on each side)"
    p = comparison.test.p_value
    verdict = "significant" if comparison.significant else "not significant"
    return f"{verdict} (p={p:.3f})" if p >= 0.001 else f"{verdict} (p<0.001)"


def _rate_text(stats: Stats | None, rate: float | None) -> str:
    if stats is None or rate is None:
        return "n/a"
    text = f"{rate:.0f}"
    if stats.count > 1:
        text += f" ±{stats.relative_stddev:.0%}"
    return text


def format_comparison(
    comparisons: list[CellComparison],
    base_name: str = "base",
    changed_name: str = "changed",
    aggregate: str = "mean",
) -> list[str]:
    """An aligned table (one line per cell) and a one-line summary.

    Rates are objects per second, aggregated by *aggregate*; ``±`` is the
    relative standard deviation of the repetitions.
    """
    several_levels = len({c.key.concurrency for c in comparisons}) > 1
    header = ["Database", "Transaction", base_name, changed_name, "Change", "Significance"]
    if several_levels:
        header.insert(1, "Concurrency")
    rows = [header]
    for c in comparisons:
        row = [
            c.key.database,
            phase_label(c.key.phase, c.key.object_count),
            _rate_text(c.base, c.base_rate),
            _rate_text(c.changed, c.changed_rate),
            format_ratio(c.ratio),
            format_significance(c),
        ]
        if several_levels:
            row.insert(1, str(c.key.concurrency))
        rows.append(row)
    numeric = {header.index(base_name), header.index(changed_name)}
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = []
    for row in rows:
        parts = [
            text.rjust(width) if i in numeric else text.ljust(width)
            for i, (text, width) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append("  ".join(parts).rstrip())
    tested = [c for c in comparisons if c.significant is not None]
    differ = [c for c in tested if c.significant]
    what = "mean" if aggregate == "mean" else "best"
    lines.append("")
    lines.append(
        f"Rates in objects per second ({what} of the repetitions); change is "
        f"{changed_name} relative to {base_name}; Welch's t-test, significant at p < {ALPHA}."
    )
    lines.append(f"{len(differ)} of {len(tested)} tested cells differ significantly.")
    return lines
