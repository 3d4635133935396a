"""What ``history`` shows of classic runs, in every format: a row per cell, a column per run.

A value is the cell's rate in objects per second (aggregated over the run's
repetitions) with its relative standard deviation; ``-`` where the run did
not measure the cell.  Under the table each run is listed with its file,
start time and versions, so that a column can be traced back to its run.
The formats lay these out (:mod:`zodbshootout.render.formats`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
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


def _cell_columns(rows: Sequence[HistoryRow]) -> tuple[list[str], list[list[str]]]:
    several_levels = len({row.key.concurrency for row in rows}) > 1
    header = ["Database", "Transaction"] + (["Concurrency"] if several_levels else [])
    cells = []
    for row in rows:
        cell = [row.key.database, phase_label(row.key.phase, row.key.object_count)]
        cells.append(cell + ([str(row.key.concurrency)] if several_levels else []))
    return header, cells


def _legend(runs: Sequence[SavedRun]) -> list[str]:
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


def what_line(aggregate: str, runs: Sequence[SavedRun]) -> str:
    """What the values are, in one sentence."""
    what = "mean" if aggregate == "mean" else "best"
    return (
        f"Objects per second ({what} of each run's repetitions, ± the relative standard "
        f"deviation) in {len(runs)} runs, oldest first; - where a run did not measure the cell."
    )


def _rate(stats: Stats | None, aggregate: str) -> float | None:
    if stats is None:
        return None
    rate = stats.aggregate(aggregate)
    return rate if math.isfinite(rate) else None


def csv_table(
    runs: Sequence[SavedRun], rows: Sequence[HistoryRow], aggregate: str
) -> tuple[list[str], list[list[Any]]]:
    """The CSV's header and rows: a row per cell, a rate per run (None: not measured)."""
    header = ["database", "concurrency", "object_count", "phase", *column_names(runs)]
    table = []
    for row in rows:
        rates = [_rate(stats, aggregate) for stats in row.stats]
        table.append(
            [row.key.database, row.key.concurrency, row.key.object_count, row.key.phase]
            + [None if rate is None else repr(rate) for rate in rates]
        )
    return header, table


def document(
    runs: Sequence[SavedRun], rows: Sequence[HistoryRow], aggregate: str
) -> dict[str, Any]:
    """The history as JSON-compatible data."""
    return {
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


def history_table(
    runs: Sequence[SavedRun], rows: Sequence[HistoryRow], aggregate: str = "mean"
) -> tuple[list[str], list[list[str]], int]:
    """The header, one row per cell (values as the table shows them), and how many of
    the leading columns are labels rather than numbers; for layouts of their own."""
    header, keys = _cell_columns(rows)
    values = [[_value(stats, aggregate) for stats in row.stats] for row in rows]
    table = [[*key, *row] for key, row in zip(keys, values, strict=True)]
    return header + column_names(runs), table, len(header)


def history_legend(runs: Sequence[SavedRun]) -> list[str]:
    """``1. NAME: PATH, started ..., zodbshootout VERSION``: one line per run, oldest first."""
    return _legend(runs)
