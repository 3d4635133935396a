"""A mix run and a comparison of mix runs as Markdown, CSV or JSON (``--format``).

The aligned text table (``table``, the default) is :mod:`zodbshootout.render.mix`;
these formats carry the same figures for other programs and for pages:

- ``markdown``: per database, a line saying what ran, a GitHub-flavoured
  table, and its notes as ``- Note:`` items, as the classic Markdown puts them;
- ``csv``: one row per database and operation, every measured cell a plain
  number (transactions per second, latencies in milliseconds, counts), then
  the notes as ``Note:`` lines after a blank line, as the classic csv puts
  them.  A latency cell of an operation that ran no transaction is empty;
- ``json``: one document with the same figures per database and operation,
  the errors by class, and the notes; a figure that does not exist (no
  transaction) is null, never NaN.

Pure functions from results to lines, like every renderer.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Callable
from typing import Any

from zodbshootout.render.formats import MIX_FORMATS
from zodbshootout.render.mix import (
    describe_record,
    format_mix,
    format_mix_comparison,
    format_mix_history,
    mix_notes,
    p_text,
)
from zodbshootout.results.mix import MixRun
from zodbshootout.results.mix_compare import ALPHA, THROUGHPUT, MetricComparison, MixComparison
from zodbshootout.results.mix_stats import (
    PERCENTILES,
    OperationSummary,
    hit_rate,
    summarize,
    total_summary,
)

#: Version of the JSON documents' layout.  History: 1 (zodbshootout 1.0): first version.
MIX_TABLE_FORMAT_VERSION = 1

#: Service time and schedule lag columns, only in an open-loop (--rate) run.
_OPEN_LOOP = ("service_p50_ms", "service_p99_ms", "lag_mean_ms", "lag_max_ms")

#: How the comparison's p-values were reached (the aligned table says it too).
_METHOD = (
    "tx/s and p99 of each database are tested over the runs' intervals (Welch's t-test, "
    "Holm-corrected)"
)


def percentile_column(percentile: float) -> str:
    """``p99_ms``, ``p99.9_ms``: the name of a latency percentile's column and key."""
    return f"p{percentile:g}_ms"


def figure_names(open_loop: bool) -> list[str]:
    """The figures of every operation's row, in column order."""
    names = ["transactions", "tx_per_second", *(percentile_column(p) for p in PERCENTILES)]
    names.append("max_ms")
    if open_loop:
        names.extend(_OPEN_LOOP)
    return [*names, "conflicts", "retries", "failures"]


def _finite(value: float | None, digits: int | None = 3) -> float | None:
    """*value* rounded to *digits* (None: as is), or None where there is none (NaN)."""
    if value is None or not math.isfinite(value):
        return None
    return value if digits is None else round(value, digits)


def operation_figures(row: OperationSummary, open_loop: bool) -> dict[str, Any]:
    """One operation's figures by :func:`figure_names`: None where it ran no transaction."""
    figures: dict[str, Any] = {
        "transactions": row.transactions,
        "tx_per_second": _finite(row.per_second),
    }
    figures.update((percentile_column(p), _finite(row.percentiles_ms[p])) for p in PERCENTILES)
    figures["max_ms"] = _finite(row.max_ms)
    if open_loop:
        service = row.service_ms or {}
        figures["service_p50_ms"] = _finite(service.get(50.0))
        figures["service_p99_ms"] = _finite(service.get(99.0))
        figures["lag_mean_ms"] = _finite(row.lag_mean_ms)
        figures["lag_max_ms"] = _finite(row.lag_max_ms)
    figures["conflicts"] = sum(row.conflicts.values())
    figures["retries"] = row.retries
    figures["failures"] = sum(row.failures.values())
    return figures


def _failure_notes(run: MixRun) -> list[str]:
    return [f"{failure.database}: not measured: {failure.reason}" for failure in run.failures]


# --- One run ---------------------------------------------------------------------------


def format_mix_as(run: MixRun, format_name: str = "table") -> list[str]:
    """*run*'s records as lines in *format_name* (one of :data:`MIX_FORMATS`)."""
    formatter: Callable[[MixRun], list[str]] | None = {
        "table": format_mix,
        "markdown": format_mix_markdown,
        "csv": format_mix_csv,
        "json": format_mix_json,
    }.get(format_name)
    if formatter is None:
        raise ValueError(f"unknown format {format_name!r}; choose from {', '.join(MIX_FORMATS)}")
    return formatter(run)


#: The Markdown table's column titles: those of the aligned table.
_MARKDOWN_LABELS = {
    "tx_per_second": "tx/s",
    **{percentile_column(p): f"p{p:g} ms" for p in PERCENTILES},
    "max_ms": "max ms",
    "service_p50_ms": "svc p50",
    "service_p99_ms": "svc p99",
    "lag_mean_ms": "lag avg",
    "lag_max_ms": "lag max",
    "conflicts": "conflicts",
    "retries": "retries",
    "failures": "failures",
}


def _escape(text: str) -> str:
    return text.replace("|", "\\|")


def _markdown_cell(value: Any, digits: int) -> str:
    if value is None:
        return "-"
    return str(value) if isinstance(value, int) else f"{value:.{digits}f}"


def format_mix_markdown(run: MixRun) -> list[str]:
    """Per database: what ran, a GFM table of its operations, and its notes."""
    open_loop = run.open_loop
    names = [name for name in figure_names(open_loop) if name != "transactions"]
    lines = [
        "Transactions per second and latency in milliseconds per operation "
        "(all: every operation together); conflicts counts every failed attempt."
    ]
    for record in run.records:
        rows = [["Operation", *(_MARKDOWN_LABELS[name] for name in names)]]
        for row in summarize(record):
            figures = operation_figures(row, open_loop)
            cells = [_markdown_cell(figures[n], 1 if n == "tx_per_second" else 2) for n in names]
            rows.append([row.operation, *cells])
        lines += [
            "",
            f"**{_escape(record.database)}**: {_escape(describe_record(record, run))}",
        ]
        lines += ["", *_markdown_table(rows)]
        notes = mix_notes(record, run)
        if notes:
            lines.append("")
            lines.extend(f"- Note: {_escape(note)}" for note in notes)
    for note in _failure_notes(run):
        lines += ["", _escape(note)]
    return lines


def _markdown_table(rows: list[list[str]], left: int = 1) -> list[str]:
    """Rows (header first) as a GFM table: the first *left* columns left, numbers right."""
    rows = [[_escape(text) for text in row] for row in rows]
    widths = [max(3, *(len(row[i]) for row in rows)) for i in range(len(rows[0]))]

    def line(row: list[str]) -> str:
        parts = [
            text.ljust(width) if i < left else text.rjust(width)
            for i, (text, width) in enumerate(zip(row, widths, strict=True))
        ]
        return "| " + " | ".join(parts) + " |"

    rule = [":" + "-" * (w - 1) if i < left else "-" * (w - 1) + ":" for i, w in enumerate(widths)]
    return [line(rows[0]), "| " + " | ".join(rule) + " |", *(line(row) for row in rows[1:])]


def _csv_value(value: Any) -> str:
    return "" if value is None else str(value)


def format_mix_csv(run: MixRun) -> list[str]:
    """One row per database and operation, plain numbers; the notes below, as the classic csv."""
    open_loop = run.open_loop
    names = figure_names(open_loop)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["database", "operation", *names])
    notes = []
    for record in run.records:
        for row in summarize(record):
            figures = operation_figures(row, open_loop)
            writer.writerow(
                [record.database, row.operation, *(_csv_value(figures[n]) for n in names)]
            )
        notes += [f"{record.database}: {note}" for note in mix_notes(record, run)]
    notes += _failure_notes(run)
    lines = out.getvalue().splitlines()
    if notes:
        lines.append("")
        lines.extend(f"Note: {note}" for note in notes)
    return lines


def mix_document(run: MixRun) -> dict[str, Any]:
    """The run's figures as JSON-compatible data (no NaN, no infinity)."""
    open_loop = run.open_loop
    databases = []
    for record in run.records:
        rate = hit_rate(record)
        operations = []
        for row in summarize(record):
            operations.append(
                {
                    "operation": row.operation,
                    **operation_figures(row, open_loop),
                    "conflicts_by_class": dict(row.conflicts),
                    "failures_by_class": dict(row.failures),
                }
            )
        databases.append(
            {
                "database": record.database,
                "workload": record.workload or run.workload,
                "workers": record.concurrency,
                "seconds": _finite(record.seconds),
                "rate_per_second": record.rate_per_second,
                "arrival": run.arrival if open_loop else None,
                "client_cache_hit_rate": _finite(rate, 6),
                "client_cache_loads": record.counters.get("loads"),
                "operations": operations,
                "notes": mix_notes(record, run),
            }
        )
    return {
        "format": "zodbshootout-mix-table",
        "version": MIX_TABLE_FORMAT_VERSION,
        "units": {"tx_per_second": "transactions per second", "latency": "milliseconds"},
        "seed": run.seed,
        "databases": databases,
        "not_measured": [
            {"database": failure.database, "reason": failure.reason} for failure in run.failures
        ],
        "interrupted": run.interrupted,
    }


def format_mix_json(run: MixRun) -> list[str]:
    """The run's document as indented JSON text, split into lines."""
    return json.dumps(mix_document(run), indent=2, allow_nan=False).splitlines()


# --- Two runs or more: each changed run against the base ---------------------------------


def metric_column(metric: str) -> str:
    """A compared metric as the show formats name it: ``tx_per_second``, ``p99_ms``."""
    return "tx_per_second" if metric == THROUGHPUT else f"{metric}_ms"


def format_mix_comparisons(
    comparisons: list[MixComparison], format_name: str = "table"
) -> list[str]:
    """Every comparison of mix runs (each changed run against the base) in *format_name*."""
    if format_name == "table":
        lines: list[str] = []
        for c in comparisons:
            lines.extend(format_mix_comparison(c.rows, c.base_name, c.changed_name))
        return lines
    if format_name == "csv":
        return _comparison_csv(comparisons)
    if format_name == "json":
        document = {
            "format": "zodbshootout-mix-comparison",
            "version": MIX_TABLE_FORMAT_VERSION,
            "comparisons": [
                _comparison_document(c.rows, c.base_name, c.changed_name) for c in comparisons
            ],
        }
        return json.dumps(document, indent=1, allow_nan=False).splitlines()
    if format_name == "markdown":
        lines = []
        for c in comparisons:
            if lines:
                lines.append("")
            if len(comparisons) > 1:
                lines += [f"### {_escape(c.changed_name)} against {_escape(c.base_name)}", ""]
            lines += _comparison_markdown(c.rows, c.base_name, c.changed_name)
        return lines
    raise ValueError(f"unknown format {format_name!r}; choose from {', '.join(MIX_FORMATS)}")


def _change(row: MetricComparison) -> str:
    return "-" if math.isnan(row.ratio) else f"{row.ratio - 1:+.1%}"


def _comparison_markdown(
    rows: list[MetricComparison], base_name: str, changed_name: str
) -> list[str]:
    table = [["Database", "Operation", "Metric", base_name, changed_name, "Change", "p (Holm)"]]
    for row in rows:
        digits = 1 if row.metric == THROUGHPUT else 2
        table.append(
            [
                row.database,
                row.operation,
                row.metric if row.metric == THROUGHPUT else f"{row.metric} ms",
                _markdown_cell(_finite(row.base), digits),
                _markdown_cell(_finite(row.changed), digits),
                _change(row),
                p_text(row),
            ]
        )
    table = [[_escape(text) for text in row] for row in table]

    def line(row: list[str]) -> str:
        return "| " + " | ".join(row) + " |"

    rule = "| --- | --- | --- | ---: | ---: | ---: | ---: |"
    return [
        line(table[0]),
        rule,
        *(line(row) for row in table[1:]),
        "",
        f"{_METHOD}; \\* marks p < {ALPHA:g}.",
    ]


_COMPARISON_CSV_HEADER = [
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


def _comparison_csv(comparisons: list[MixComparison]) -> list[str]:
    """One row per database, operation and metric; a value that does not exist is empty."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(_COMPARISON_CSV_HEADER)
    for c in comparisons:
        for row in c.rows:
            entry = _comparison_entry(row)
            writer.writerow(
                [
                    c.base_name,
                    c.changed_name,
                    row.database,
                    row.operation,
                    entry["metric"],
                    *(_csv_value(entry[key]) for key in ("base", "changed", "ratio")),
                    _csv_value(entry["p_adjusted"]),
                    "" if row.p_adjusted is None else str(row.significant).lower(),
                ]
            )
    return out.getvalue().splitlines()


def _comparison_entry(row: MetricComparison) -> dict[str, Any]:
    return {
        "database": row.database,
        "operation": row.operation,
        "metric": metric_column(row.metric),
        "base": _finite(row.base),
        "changed": _finite(row.changed),
        "ratio": _finite(row.ratio, 6),
        "p_adjusted": _finite(row.p_adjusted, None),
        "significant": None if row.p_adjusted is None else row.significant,
    }


def _comparison_document(
    rows: list[MetricComparison], base_name: str, changed_name: str
) -> dict[str, Any]:
    return {
        "base": base_name,
        "changed": changed_name,
        "units": {"tx_per_second": "transactions per second", "latency": "milliseconds"},
        "test": "Welch's t-test over the runs' intervals, two-sided (tx/s and p99 of each "
        "database; other rows untested)",
        "correction": "holm",
        "alpha": ALPHA,
        "rows": [_comparison_entry(row) for row in rows],
    }


# --- Saved runs side by side (history) ----------------------------------------------------

#: The figures history lines up: every operation of a database together.
_HISTORY_FIGURES = ("tx_per_second", "p50_ms", "p99_ms", "p99.9_ms", "max_ms")


def _history_rows(runs: list[tuple[str, MixRun]]) -> list[tuple[str, str, list[Any]]]:
    """(database, figure, value per run: None where the run did not measure it)."""
    databases = list(dict.fromkeys(r.database for _name, run in runs for r in run.records))
    rows = []
    for database in databases:
        figures = []
        for _name, run in runs:
            record = run.record(database)
            figures.append(
                None if record is None else operation_figures(total_summary(record), False)
            )
        for name in _HISTORY_FIGURES:
            rows.append((database, name, [None if f is None else f[name] for f in figures]))
    return rows


def format_mix_history_as(runs: list[tuple[str, MixRun]], format_name: str = "table") -> list[str]:
    """Saved mix runs side by side, oldest first (*runs*: column name, result), in *format_name*."""
    if format_name == "table":
        return format_mix_history(runs)
    names = [name for name, _run in runs]
    rows = _history_rows(runs)
    if format_name == "csv":
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(["database", "metric", *names])
        for database, figure, values in rows:
            writer.writerow([database, figure, *(_csv_value(v) for v in values)])
        return out.getvalue().splitlines()
    if format_name == "json":
        document = {
            "format": "zodbshootout-mix-history",
            "version": MIX_TABLE_FORMAT_VERSION,
            "units": {"tx_per_second": "transactions per second", "latency": "milliseconds"},
            "runs": names,
            "rows": [
                {"database": database, "metric": figure, "values": values}
                for database, figure, values in rows
            ],
        }
        return json.dumps(document, indent=1, allow_nan=False).splitlines()
    if format_name == "markdown":
        table = [["Database", "Metric", *names]]
        for database, figure, values in rows:
            digits = 1 if figure == "tx_per_second" else 2
            cells = [_markdown_cell(value, digits) for value in values]
            table.append([database, _MARKDOWN_LABELS[figure], *cells])
        return [
            *_markdown_table(table, left=2),
            "",
            "Every operation together; - where a run did not measure the database.",
        ]
    raise ValueError(f"unknown format {format_name!r}; choose from {', '.join(MIX_FORMATS)}")
