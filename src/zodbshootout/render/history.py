"""``history``'s output: one row per cell, one column per run, in text, Markdown, CSV or JSON.

A value is the cell's rate in objects per second (aggregated over the run's
repetitions) with its relative standard deviation; ``-`` where the run did
not measure the cell.  Under the table each run is listed with its file,
start time and versions, so that a column can be traced back to its run.
"""

from __future__ import annotations

import csv
import io
import json
import math
from typing import Any

from zodbshootout.render.labels import phase_label
from zodbshootout.render.metadata import format_timestamp
from zodbshootout.results.history import HistoryRow, SavedRun, column_names
from zodbshootout.results.noise import busy_load
from zodbshootout.results.stats import Stats


def _value(stats: Stats | None, aggregate: str) -> str:
    if stats is None:
        return "-"
    text = f"{stats.aggregate(aggregate):.0f}"
    if stats.count > 1:
        text += f" ±{stats.relative_stddev:.0%}"
    return text


def _cell_columns(rows: list[HistoryRow]) -> tuple[list[str], list[list[str]]]:
    several_levels = len({row.key.concurrency for row in rows}) > 1
    header = ["Database", "Transaction"] + (["Concurrency"] if several_levels else [])
    cells = []
    for row in rows:
        cell = [row.key.database, phase_label(row.key.phase, row.key.object_count)]
        cells.append(cell + ([str(row.key.concurrency)] if several_levels else []))
    return header, cells


def _legend(runs: list[SavedRun]) -> list[str]:
    lines = []
    for index, (run, name) in enumerate(zip(runs, column_names(runs), strict=True), 1):
        environment = run.result.metadata.get("environment") or {}
        git = environment.get("git") or {}
        started = format_timestamp(run.result.metadata.get("started"))
        line = f"{index}. {name}: {run.path}, started {started}"
        if environment.get("zodbshootout"):
            line += f", zodbshootout {environment['zodbshootout']}"
        if git.get("commit"):
            line += f" (git {git['commit'][:12]})"
        busy = busy_load(run.result.metadata)
        if busy:
            line += f"; measured on a busy machine ({busy}): its rates may be low for that"
        lines.append(line)
    return lines


def _what(aggregate: str, runs: list[SavedRun]) -> str:
    what = "mean" if aggregate == "mean" else "best"
    return (
        f"Objects per second ({what} of each run's repetitions, ± the relative standard "
        f"deviation) in {len(runs)} runs, oldest first; - where a run did not measure the cell."
    )


def format_history(
    runs: list[SavedRun],
    rows: list[HistoryRow],
    aggregate: str = "mean",
    format_name: str = "table",
) -> list[str]:
    """The history table in *format_name* (table, markdown, csv or json)."""
    names = column_names(runs)
    header, keys = _cell_columns(rows)
    values = [[_value(stats, aggregate) for stats in row.stats] for row in rows]
    if format_name == "csv":
        return _csv(runs, rows, aggregate)
    if format_name == "json":
        return _json(runs, rows, aggregate)
    table = [[*key, *row] for key, row in zip(keys, values, strict=True)]
    full_header = header + names
    if format_name == "markdown":
        numeric = range(len(header), len(full_header))

        def line(row: list[str]) -> str:
            return "| " + " | ".join(text.replace("|", "\\|") for text in row) + " |"

        rule = "| " + " | ".join("---:" if i in numeric else "---" for i in range(len(full_header)))
        return [
            _what(aggregate, runs),
            "",
            line(full_header),
            rule + " |",
            *(line(row) for row in table),
            "",
            *(f"{text}" for text in _legend(runs)),
        ]
    widths = [max(len(row[i]) for row in [full_header, *table]) for i in range(len(full_header))]

    def aligned(row: list[str]) -> str:
        parts = [
            text.ljust(width) if i < len(header) else text.rjust(width)
            for i, (text, width) in enumerate(zip(row, widths, strict=True))
        ]
        return "  ".join(parts).rstrip()

    return [
        aligned(full_header),
        *(aligned(row) for row in table),
        "",
        _what(aggregate, runs),
        *_legend(runs),
    ]


def _rate(stats: Stats | None, aggregate: str) -> float | None:
    if stats is None:
        return None
    rate = stats.aggregate(aggregate)
    return rate if math.isfinite(rate) else None


def _csv(runs: list[SavedRun], rows: list[HistoryRow], aggregate: str) -> list[str]:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["database", "concurrency", "object_count", "phase", *column_names(runs)])
    for row in rows:
        rates = [_rate(stats, aggregate) for stats in row.stats]
        writer.writerow(
            [row.key.database, row.key.concurrency, row.key.object_count, row.key.phase]
            + ["" if rate is None else repr(rate) for rate in rates]
        )
    return out.getvalue().splitlines()


def _json(runs: list[SavedRun], rows: list[HistoryRow], aggregate: str) -> list[str]:
    document: dict[str, Any] = {
        "unit": "objects per second",
        "aggregate": aggregate,
        "runs": [
            {"name": name, "path": run.path, "started": run.result.metadata.get("started")}
            for run, name in zip(runs, column_names(runs), strict=True)
        ],
        "cells": [
            {
                "database": row.key.database,
                "concurrency": row.key.concurrency,
                "object_count": row.key.object_count,
                "phase": row.key.phase,
                "rates": [_rate(stats, aggregate) for stats in row.stats],
            }
            for row in rows
        ],
    }
    return json.dumps(document, indent=1, allow_nan=False).splitlines()


def history_table(
    runs: list[SavedRun], rows: list[HistoryRow], aggregate: str = "mean"
) -> tuple[list[str], list[list[str]], int]:
    """The header, one row per cell (values as the table shows them), and how many of
    the leading columns are labels rather than numbers; for layouts of their own."""
    header, keys = _cell_columns(rows)
    values = [[_value(stats, aggregate) for stats in row.stats] for row in rows]
    table = [[*key, *row] for key, row in zip(keys, values, strict=True)]
    return header + column_names(runs), table, len(header)


def history_legend(runs: list[SavedRun]) -> list[str]:
    """``1. NAME: PATH, started ..., zodbshootout VERSION``: one line per run, oldest first."""
    return _legend(runs)
