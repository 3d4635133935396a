"""What a comparison of mix runs shows, in every format: a row per database, operation and metric.

Both values, the change, and Holm's p where the metric was tested (tx/s and
p99 of each database over the runs' intervals); the formats lay the rows
out (:mod:`zodbshootout.render.formats`).  Pure functions of
:mod:`zodbshootout.results.mix_compare`'s rows.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from zodbshootout.render.comparison import busy_lines
from zodbshootout.render.mix import (
    MIX_TABLE_FORMAT_VERSION,
    UNITS,
    figure_text,
    finite,
    number_text,
)
from zodbshootout.results.mix_compare import (
    ALPHA,
    FAIRNESS,
    THROUGHPUT,
    MetricComparison,
    MixComparison,
)

#: How the p-values were reached, said under the aligned table.
TABLE_METHOD = (
    "tx/s and p99 of each database are tested over the runs' intervals (Welch); p is each "
    "row's own, p (Holm) corrected for every row tested; * marks p (Holm) < 0.05"
)

#: How the p-values were reached, said under the Markdown table.
MARKDOWN_METHOD = (
    "tx/s and p99 of each database are tested over the runs' intervals (Welch's t-test); "
    "p is each row's own, p (Holm) corrected for every row tested (Holm's method); "
    f"\\* marks p (Holm) < {ALPHA:g}."
)

#: The header of every row of the CSV, one row per changed run, database, operation, metric.
CSV_HEADER = [
    "base",
    "changed",
    "database",
    "operation",
    "metric",
    "base_value",
    "changed_value",
    "ratio",
    "p_value",
    "p_adjusted",
    "significant",
]


def p_text(row: MetricComparison) -> str:
    """Holm's p of *row* with ``*`` when significant; ``-`` untested.

    A p that underflowed to 0 is shown as below the smallest a double
    prints, not as a p of exactly 0.
    """
    if row.p_adjusted is None:
        return "-"
    shown = f"{row.p_adjusted:.3g}" if row.p_adjusted > 0 else "<1e-300"
    return shown + (" *" if row.significant else "")


def raw_p_text(row: MetricComparison) -> str:
    """The row's own p, before the correction; ``-`` untested."""
    if row.p_value is None:
        return "-"
    return f"{row.p_value:.3g}" if row.p_value > 0 else "<1e-300"


def kind_text(kind: Sequence[tuple[str, str, str]]) -> str:
    """``closed loop vs --rate 400/s (poisson); workload ycsb-b vs ycsb-a``."""
    return "; ".join(
        f"{ours} vs {theirs}" if aspect == "loop" else f"{aspect} {ours} vs {theirs}"
        for aspect, ours, theirs in kind
    )


def notes(comparison: MixComparison) -> list[str]:
    """What the table alone would not say: runs of different kinds, busy machines, and
    the rows --only-significant hid; one sentence each."""
    lines = []
    if any(row.metric == FAIRNESS for row in comparison.shown):
        lines.append(
            "workers jain: Jain's fairness index of the workers' committed transactions "
            "(1: every worker alike, 1/c: one worker made them all), untested."
        )
    if comparison.kind:
        lines.append(
            f"Warning: {comparison.base_name} and {comparison.changed_name} are different "
            f"kinds of mix run ({kind_text(comparison.kind)}): their tx/s and latencies "
            "measure different things, and the changes above are not one change's."
        )
    lines += busy_lines(comparison.busy)
    if comparison.only_significant:
        hidden = len(comparison.rows) - len(comparison.shown)
        alone = sum(
            1
            for row in comparison.rows
            if not row.significant and row.p_value is not None and row.p_value < ALPHA
        )
        line = (
            f"{hidden} of {len(comparison.rows)} rows hidden (--only-significant): untested or "
            "not significant after Holm's correction"
        )
        if alone:
            line += f"; {alone} of them with p < {ALPHA:g} on its own"
        lines.append(line + ".")
    return lines


def change_text(row: MetricComparison) -> str:
    """``+12.5%``: the changed run's value relative to the base's; ``-`` without a base."""
    return "-" if math.isnan(row.ratio) else f"{row.ratio - 1:+.1%}"


def table_rows(comparison: MixComparison, markdown: bool = False) -> list[list[str]]:
    """The table's rows, header first, as the aligned table shows them or the *markdown* one.

    The two show a value that does not exist alike (``-``), and round alike
    but for Markdown's figures, which are rounded to thousandths first, as
    the other formats carry them.
    """
    where = ["Database", "Operation", "Metric"] if markdown else ["database", "operation", "metric"]
    change = "Change" if markdown else "change"
    table = [[*where, comparison.base_name, comparison.changed_name, change, "p", "p (Holm)"]]
    for row in comparison.shown:
        digits = {THROUGHPUT: 1, FAIRNESS: 3}.get(row.metric, 2)
        if markdown:
            values = [figure_text(finite(v), digits) for v in (row.base, row.changed)]
        else:
            values = [number_text(v, digits) for v in (row.base, row.changed)]
        metric = row.metric if row.metric in (THROUGHPUT, FAIRNESS) else f"{row.metric} ms"
        p_values = [raw_p_text(row), p_text(row)]
        table.append([row.database, row.operation, metric, *values, change_text(row), *p_values])
    return table


def metric_column(metric: str) -> str:
    """A compared metric as the show formats name it: ``tx_per_second``, ``p99_ms``."""
    if metric == FAIRNESS:
        return "jain_index"
    return "tx_per_second" if metric == THROUGHPUT else f"{metric}_ms"


def entry(row: MetricComparison) -> dict[str, Any]:
    """One row as plain values: None where a value does not exist (no NaN, no infinity)."""
    return {
        "database": row.database,
        "operation": row.operation,
        "metric": metric_column(row.metric),
        "base": finite(row.base),
        "changed": finite(row.changed),
        "ratio": finite(row.ratio, 6),
        "p_value": finite(row.p_value, None),
        "p_adjusted": finite(row.p_adjusted, None),
        "significant": None if row.p_adjusted is None else row.significant,
    }


def csv_rows(comparison: MixComparison) -> list[list[Any]]:
    """The CSV's rows of one comparison (see :data:`CSV_HEADER`); None for an empty cell."""
    rows = []
    for row in comparison.shown:
        plain = entry(row)
        rows.append(
            [
                comparison.base_name,
                comparison.changed_name,
                row.database,
                row.operation,
                plain["metric"],
                plain["base"],
                plain["changed"],
                plain["ratio"],
                plain["p_value"],
                plain["p_adjusted"],
                None if row.p_adjusted is None else str(row.significant).lower(),
            ]
        )
    return rows


def document(comparison: MixComparison) -> dict[str, Any]:
    """One comparison as JSON-compatible data."""
    return {
        "base": comparison.base_name,
        "changed": comparison.changed_name,
        "units": UNITS,
        "test": "Welch's t-test over the runs' intervals, two-sided (tx/s and p99 of each "
        "database; other rows untested)",
        "correction": "holm",
        "alpha": ALPHA,
        "rows": [entry(row) for row in comparison.shown],
        # --only-significant: the rows left out (untested or not significant).
        "hidden_not_significant": len(comparison.rows) - len(comparison.shown),
        "busy": {name: load for name, load in comparison.busy},
        "kind_differences": [
            {"aspect": aspect, "base": ours, "changed": theirs}
            for aspect, ours, theirs in comparison.kind
        ],
    }


def comparisons_document(comparisons: list[MixComparison]) -> dict[str, Any]:
    """Every comparison (each changed run against the base) as one JSON-compatible document."""
    return {
        "format": "zodbshootout-mix-comparison",
        "version": MIX_TABLE_FORMAT_VERSION,
        "comparisons": [document(c) for c in comparisons],
    }
