"""What a comparison of mix runs shows, in every format: a row per database, operation and metric.

Both values, the change, and Holm's p where the metric was tested (tx/s and
p99 of each database over the runs' intervals); the formats lay the rows
out (:mod:`zodbshootout.render.formats`).  Pure functions of
:mod:`zodbshootout.results.mix_compare`'s rows.
"""

from __future__ import annotations

import math
from typing import Any

from zodbshootout.render.mix import (
    MIX_TABLE_FORMAT_VERSION,
    UNITS,
    figure_text,
    finite,
    number_text,
)
from zodbshootout.results.mix_compare import ALPHA, THROUGHPUT, MetricComparison, MixComparison

#: How the p-values were reached, said under the aligned table.
TABLE_METHOD = (
    "tx/s and p99 of each database are tested over the runs' intervals (Welch, "
    "Holm-corrected); * marks p < 0.05"
)

#: How the p-values were reached, said under the Markdown table.
MARKDOWN_METHOD = (
    "tx/s and p99 of each database are tested over the runs' intervals (Welch's t-test, "
    f"Holm-corrected); \\* marks p < {ALPHA:g}."
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
    table = [[*where, comparison.base_name, comparison.changed_name, change, "p (Holm)"]]
    for row in comparison.rows:
        digits = 1 if row.metric == THROUGHPUT else 2
        if markdown:
            values = [figure_text(finite(v), digits) for v in (row.base, row.changed)]
        else:
            values = [number_text(v, digits) for v in (row.base, row.changed)]
        metric = row.metric if row.metric == THROUGHPUT else f"{row.metric} ms"
        table.append([row.database, row.operation, metric, *values, change_text(row), p_text(row)])
    return table


def metric_column(metric: str) -> str:
    """A compared metric as the show formats name it: ``tx_per_second``, ``p99_ms``."""
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
        "p_adjusted": finite(row.p_adjusted, None),
        "significant": None if row.p_adjusted is None else row.significant,
    }


def csv_rows(comparison: MixComparison) -> list[list[Any]]:
    """The CSV's rows of one comparison (see :data:`CSV_HEADER`); None for an empty cell."""
    rows = []
    for row in comparison.rows:
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
        "rows": [entry(row) for row in comparison.rows],
    }


def comparisons_document(comparisons: list[MixComparison]) -> dict[str, Any]:
    """Every comparison (each changed run against the base) as one JSON-compatible document."""
    return {
        "format": "zodbshootout-mix-comparison",
        "version": MIX_TABLE_FORMAT_VERSION,
        "comparisons": [document(c) for c in comparisons],
    }
