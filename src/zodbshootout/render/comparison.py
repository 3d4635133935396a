"""What ``compare`` shows of classic runs, in every format.

Each comparison (a changed run against the base) lists its cells with both
rates, the ratio in words and the verdict, then a geometric-mean summary
row, the method (Welch's t-test, Holm's correction) and the cells that only
one of the two runs planned, and the index cost when one run wrote index
entries and the other did not.  The formats lay these out
(:mod:`zodbshootout.render.formats`).  Pure functions of comparisons.
"""

from __future__ import annotations

import math
from typing import Any

from zodbshootout.render.labels import phase_label
from zodbshootout.results.compare import ALPHA, INCONCLUSIVE, CellComparison, Comparison
from zodbshootout.results.record import CellKey
from zodbshootout.results.stats import Stats


def format_ratio(ratio: float | None) -> str:
    """``1.32x faster``, ``1.10x slower`` or ``same``, from a changed ÷ base rate ratio."""
    if ratio is None or ratio <= 0.0:
        return "-"
    if round(ratio, 2) == 1.0:
        return "same"
    if ratio > 1.0:
        return f"{ratio:.2f}x faster"
    return f"{1.0 / ratio:.2f}x slower"


def format_p(p: float) -> str:
    """``0.013``, ``<0.001``: a p-value in a column headed p."""
    return f"{p:.3f}" if p >= 0.001 else "<0.001"


def format_verdict(comparison: CellComparison) -> str:
    """slower, faster or inconclusive (Holm-corrected); ``-`` without a measurement."""
    verdict = comparison.verdict
    if verdict is None:
        return "-"
    if comparison.test is None or comparison.p_adjusted is None:
        return f"{INCONCLUSIVE} (untested: needs 2+ repetitions on each side)"
    return verdict


def format_raw_p(comparison: CellComparison) -> str:
    """The cell's own p-value, as if it were the only cell tested; ``-`` untested."""
    if comparison.test is None:
        return "-"
    return format_p(comparison.test.p_value)


def format_holm_p(comparison: CellComparison) -> str:
    """Holm's adjusted p when it is significant, else ``n.s.``; ``-`` untested."""
    if comparison.p_adjusted is None:
        return "-"
    return format_p(comparison.p_adjusted) if comparison.significant else "n.s."


def format_percent(percent: float | None) -> str:
    """A detectable slowdown: ``12%``, ``4.5%``; ``none`` when no slowdown could show."""
    if percent is None:
        return "-"
    if math.isinf(percent):
        return "none"
    return f"{percent:.1f}%" if percent < 10 else f"{percent:.0f}%"


def _rate_text(stats: Stats | None, rate: float | None) -> str:
    if stats is None or rate is None:
        return "n/a"
    text = f"{rate:.0f}"
    if stats.count > 1:
        text += f" ±{stats.relative_stddev:.0%}"
    return text


def describe_cell(key: CellKey) -> str:
    """``postgresql, cold, 1000 objects, concurrency 2``: a cell named in a sentence."""
    return f"{key.database}, {key.phase}, {key.object_count} objects, concurrency {key.concurrency}"


def method_lines(comparison: Comparison) -> list[str]:
    """What the numbers are and how the verdicts were reached, in words."""
    what = "mean" if comparison.aggregate == "mean" else "best"
    tested = comparison.tested
    differ = [c for c in tested if c.significant]
    return [
        f"Rates in objects per second ({what} of the repetitions); change is "
        f"{comparison.changed_name} relative to {comparison.base_name}; geometric mean of the "
        f"{len(comparison.measured_in_both)} cells measured in both.",
        f"Welch's t-test over the repetitions: p is each cell's own; Holm p is adjusted for "
        f"the {len(tested)} cells tested together by Holm's method (Holm-Bonferroni), n.s. "
        f"when not below {ALPHA}; slower or faster at Holm p < {ALPHA}, else inconclusive.",
        "Detectable: the smallest slowdown (longer time per object) each cell's runs could "
        f"have shown at that confidence (p < {ALPHA}/{max(1, len(tested))}, from their spread "
        "and repetitions); an inconclusive cell may hide a smaller change.",
        *_sensitivity_lines(comparison),
        *_only_lines(comparison),
        *busy_lines(comparison.busy),
        f"{len(differ)} of {len(tested)} tested cells differ significantly.",
        *_hidden_lines(comparison),
    ]


def busy_lines(busy: tuple[tuple[str, str], ...]) -> list[str]:
    """A line per run measured on a busy machine: marked in the output itself, which a
    pull request quotes without the warnings on stderr."""
    return [
        f"Busy: {name} was measured on a busy machine ({load}): a difference may come from "
        "the load rather than the change."
        for name, load in busy
    ]


def _hidden_lines(comparison: Comparison) -> list[str]:
    """What --only-significant left out: how many rows, and how many a per-cell test keeps."""
    if not comparison.only_significant:
        return []
    hidden = comparison.hidden
    untested = sum(1 for c in hidden if c.significant is None)
    alone = sum(1 for c in hidden if c.test is not None and c.test.p_value < ALPHA)
    line = (
        f"{len(hidden)} of {len(comparison.cells)} rows hidden (--only-significant): "
        f"{len(hidden) - untested} not significant after Holm's correction"
    )
    if untested:
        line += f", {untested} untested or not measured in both"
    if alone:
        line += (
            f"; {alone} of them with p < {ALPHA} on its own, which a test of each cell "
            "alone (as pyperf compare_to does) would show"
        )
    return [line + "."]


def _sensitivity_lines(comparison: Comparison) -> list[str]:
    """The overall detectable change: that of the least sensitive cell."""
    worst = comparison.least_sensitive
    if worst is None:
        return []
    seen = worst.detectable_slowdown_percent
    if seen is None:
        return [
            f"Overall: untested cells (e.g. {describe_cell(worst.key)}) could show no change: "
            "run both with -r 5 or more."
        ]
    if math.isinf(seen):
        return [
            f"Overall: no slowdown, however large, could show in {describe_cell(worst.key)} "
            "(too few repetitions for its spread): run both with more repetitions."
        ]
    return [
        f"Overall: these runs could detect a slowdown of {format_percent(seen)} or more in "
        f"every cell; the least sensitive is {describe_cell(worst.key)}."
    ]


def _only_lines(comparison: Comparison) -> list[str]:
    lines = []
    for name, keys in (
        (comparison.base_name, comparison.only_in_base),
        (comparison.changed_name, comparison.only_in_changed),
    ):
        if keys:
            lines.append(
                f"Only in {name} ({len(keys)} cells, not compared): "
                + "; ".join(describe_cell(key) for key in keys)
            )
    return lines


def comparison_rows(comparison: Comparison) -> tuple[list[str], list[list[str]], list[str]]:
    """The header, one row per cell and the geometric-mean row, as every table shows them."""
    several_levels = len({c.key.concurrency for c in comparison.cells}) > 1
    header = [
        "Database",
        "Transaction",
        comparison.base_name,
        comparison.changed_name,
        "Change",
        "Verdict",
        "p",
        "Holm p",
        "Detectable",
    ]
    if several_levels:
        header.insert(1, "Concurrency")
    rows = []
    for c in comparison.shown:
        row = [
            c.key.database,
            phase_label(c.key.phase, c.key.object_count),
            _rate_text(c.base, c.base_rate),
            _rate_text(c.changed, c.changed_rate),
            format_ratio(c.ratio),
            format_verdict(c),
            format_raw_p(c),
            format_holm_p(c),
            format_percent(c.detectable_slowdown_percent),
        ]
        if several_levels:
            row.insert(1, str(c.key.concurrency))
        rows.append(row)
    summary = ["Geometric mean", f"({len(comparison.measured_in_both)} cells)", "", ""]
    worst = comparison.least_sensitive
    overall = None if worst is None else worst.detectable_slowdown_percent
    summary += [format_ratio(comparison.geometric_mean), "-", "", "", format_percent(overall)]
    if several_levels:
        summary.insert(1, "")
    return header, rows, summary


def index_cost_rows(comparison: Comparison) -> tuple[str, list[list[str]]]:
    """The title and rows (header first) of the index cost, or no rows."""
    costs = comparison.index_costs
    if not costs:
        return "", []
    entries = costs[0].entries
    title = (
        f"Index cost of --index-entries {entries} (the run without index entries against "
        f"the run with them): keys/s counts each record's key and its {entries} index "
        "entries; µs/entry is the time one entry adds to one object in one worker."
    )
    rows = [["database", "c", "phase", "records/s", "keys/s", f"records/s K={entries}"]]
    rows[0] += [f"keys/s K={entries}", "µs/entry"]
    for cost in costs:
        per_entry = cost.microseconds_per_entry
        rows.append(
            [
                cost.key.database,
                str(cost.key.concurrency),
                phase_label(cost.key.phase, cost.key.object_count),
                f"{cost.plain_rate:,.0f}",
                f"{cost.plain_keys_per_second:,.0f}",
                f"{cost.indexed_rate:,.0f}",
                f"{cost.indexed_keys_per_second:,.0f}",
                "-" if per_entry is None else f"{per_entry:.2f}",
            ]
        )
    return title, rows


#: The CSV's header: a row per changed run and cell, then its geometric mean.
CSV_HEADER = [
    "base",
    "changed",
    "database",
    "concurrency",
    "object_count",
    "phase",
    "base_objects_per_second",
    "changed_objects_per_second",
    "ratio",
    "p_value",
    "p_adjusted",
    "significant",
    "verdict",
    "detectable_slowdown_percent",
]


def _number(value: float | None) -> str:
    return "" if value is None else repr(value)


def csv_rows(comparison: Comparison) -> list[list[str]]:
    rows = []
    for c in comparison.shown:
        rows.append(
            [
                comparison.base_name,
                comparison.changed_name,
                c.key.database,
                str(c.key.concurrency),
                str(c.key.object_count),
                c.key.phase,
                _number(c.base_rate),
                _number(c.changed_rate),
                _number(c.ratio),
                _number(c.test.p_value if c.test else None),
                _number(c.p_adjusted),
                "" if c.significant is None else str(c.significant).lower(),
                c.verdict or "",
                _number(_finite(c.detectable_slowdown_percent)),
            ]
        )
    summary = [comparison.base_name, comparison.changed_name, "*", "", "", "geometric_mean"]
    worst = comparison.least_sensitive
    overall = None if worst is None else _finite(worst.detectable_slowdown_percent)
    rows.append(
        [*summary, "", "", _number(comparison.geometric_mean), "", "", "", "", _number(overall)]
    )
    return rows


def _finite(value: float | None) -> float | None:
    """JSON has no infinity: a rate too fast to time (zero duration) becomes null."""
    return value if value is None or math.isfinite(value) else None


def document(comparison: Comparison) -> dict[str, Any]:
    return {
        "base": comparison.base_name,
        "changed": comparison.changed_name,
        "aggregate": comparison.aggregate,
        "unit": "objects per second",
        "test": "Welch's t-test, two-sided",
        "correction": "holm",
        "alpha": ALPHA,
        "geometric_mean_ratio": _finite(comparison.geometric_mean),
        "cells": [
            {
                "database": c.key.database,
                "concurrency": c.key.concurrency,
                "object_count": c.key.object_count,
                "phase": c.key.phase,
                "base_rate": _finite(c.base_rate),
                "changed_rate": _finite(c.changed_rate),
                "ratio": _finite(c.ratio),
                "p_value": _finite(c.test.p_value if c.test else None),
                "p_adjusted": _finite(c.p_adjusted),
                "significant": c.significant,
                "verdict": c.verdict,
                # null: untested, or no slowdown could have shown (infinite).
                "detectable_slowdown_percent": _finite(c.detectable_slowdown_percent),
            }
            for c in comparison.shown
        ],
        # --only-significant: the cells left out (not significant after the correction).
        "hidden_not_significant": len(comparison.hidden),
        "busy": {name: load for name, load in comparison.busy},
        "only_in_base": [key.__dict__ for key in comparison.only_in_base],
        "only_in_changed": [key.__dict__ for key in comparison.only_in_changed],
        "index_cost": [
            {
                **cost.key.__dict__,
                "index_entries": cost.entries,
                "records_per_second": _finite(cost.plain_rate),
                "keys_per_second": _finite(cost.plain_keys_per_second),
                "indexed_records_per_second": _finite(cost.indexed_rate),
                "indexed_keys_per_second": _finite(cost.indexed_keys_per_second),
                "microseconds_per_entry": _finite(cost.microseconds_per_entry),
            }
            for cost in comparison.index_costs
        ],
    }


def rate_columns(comparison: Comparison, header: list[str]) -> set[int]:
    """The columns of *header* (of :func:`comparison_rows`) that hold the two runs' rates."""
    return {header.index(comparison.base_name), header.index(comparison.changed_name)}


def comparisons_document(comparisons: list[Comparison]) -> dict[str, Any]:
    """Every comparison (each changed run against the base) as one JSON-compatible document."""
    return {"comparisons": [document(c) for c in comparisons]}
