"""The ``json`` format: one document per output, for other programs.

A run's document holds every cell's aggregated rate with its statistics:
the *derived* view (what the table shows, plus spread); the raw durations
are in the result file (``-o``, :mod:`zodbshootout.results.file`).  Built
from :func:`build_table`, so it carries the same numbers and footnotes as
the other formats.  Rates are objects per second.  The other shapes'
documents come from their modules (mix, comparison, history, cachesim);
a figure that does not exist is null, never NaN.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from zodbshootout.render import cachesim, comparison, history, maintenance, mix, mix_comparison
from zodbshootout.render.formats import Format
from zodbshootout.render.insight import InsightRow
from zodbshootout.render.table import Cell, build_table
from zodbshootout.results.record import RunResult
from zodbshootout.results.stats import Stats

if TYPE_CHECKING:
    from zodbshootout.results.cachesim import Simulation
    from zodbshootout.results.compare import Comparison
    from zodbshootout.results.history import HistoryRow, SavedRun
    from zodbshootout.results.maintenance import MaintenanceRun
    from zodbshootout.results.mix import MixRun
    from zodbshootout.results.mix_compare import MixComparison

#: Version of this document's layout.  History: 1 (zodbshootout 1.0): first version;
#: 2: each block has "insight" rows (cache hit rate, bytes/object, index keys/s).
TABLE_FORMAT_VERSION = 2


def table_document(result: RunResult, aggregate: str = "mean") -> dict[str, Any]:
    """The table as JSON-compatible data."""
    table = build_table(result, aggregate)
    # build_table makes one row per object count and phase, in this order.
    row_keys = [(count, phase) for count in result.object_counts for phase in result.phases]
    blocks = []
    for block in table.blocks:
        if len(block.rows) != len(row_keys):
            raise AssertionError("build_table's row order changed; update render.json")
        rows = []
        for (count, phase), (label, cells) in zip(row_keys, block.rows, strict=True):
            rows.append(
                {
                    "label": label,
                    "phase": phase,
                    "object_count": count,
                    "cells": {
                        database: _cell(cell)
                        for database, cell in zip(table.databases, cells, strict=True)
                    },
                }
            )
        blocks.append(
            {
                "concurrency": block.concurrency,
                "rows": rows,
                "insight": [_insight_row(row, table.databases) for row in block.insight],
            }
        )
    return {
        "format": "zodbshootout-table",
        "version": TABLE_FORMAT_VERSION,
        "unit": "objects per second",
        "aggregate": aggregate,
        "repetitions": result.repetitions,
        "databases": list(table.databases),
        "blocks": blocks,
        "footnotes": list(table.footnotes),
        "notes": list(table.notes),
    }


def _insight_row(row: InsightRow, databases: list[str]) -> dict[str, Any]:
    """One insight row: its kind (the unit), phase, count, and a value or footnote per database."""
    cells: dict[str, dict[str, Any]] = {}
    for database, cell in zip(databases, row.cells, strict=True):
        if cell.value is None:
            cells[database] = {"value": None, "footnote": cell.footnote}
        else:
            cells[database] = {"value": _number(cell.value, 6), **cell.detail}
    return {
        "kind": row.kind,
        "label": row.label,
        "phase": row.phase,
        "object_count": row.object_count,
        "cells": cells,
    }


def _cell(cell: Cell) -> dict[str, Any]:
    if cell.rate is None or cell.stats is None:
        return {"rate": None, "footnote": cell.footnote}
    marked = {} if cell.footnote is None else {"footnote": cell.footnote}
    return {"rate": _number(cell.rate), **stats_document(cell.stats), **marked}


def stats_document(stats: Stats) -> dict[str, Any]:
    """One cell's statistics (objects per second) as JSON data."""
    ci95 = stats.ci95
    return {
        "repetitions": stats.count,
        "mean": _number(stats.mean),
        "stddev": _number(stats.stddev),
        "relative_stddev": _number(stats.relative_stddev, 6),
        "min": _number(stats.min),
        "max": _number(stats.max),
        "median": _number(stats.median),
        "ci95": None if ci95 is None else [_number(ci95[0]), _number(ci95[1])],
        "rates": [_number(rate) for rate in stats.rates],
    }


def _number(value: float, digits: int = 3) -> float | None:
    """*value* rounded to *digits* decimals (thousandths of an object per second are noise).

    JSON has no infinity: a rate too fast to time (zero seconds) becomes null.
    """
    if value != value or abs(value) == float("inf"):
        return None
    return round(value, digits)


def _lines(document: dict[str, Any], indent: int) -> list[str]:
    """*document* as indented JSON text, split into lines; no NaN or infinity."""
    return json.dumps(document, indent=indent, allow_nan=False).splitlines()


class Json(Format):
    """One JSON document per output."""

    def run(self, result: RunResult, aggregate: str = "mean") -> list[str]:
        """The table document as indented JSON text, split into lines."""
        return json.dumps(table_document(result, aggregate), indent=2).splitlines()

    def mix(self, run: MixRun) -> list[str]:
        return _lines(mix.mix_document(run), indent=2)

    def comparisons(self, comparisons: Sequence[Comparison]) -> list[str]:
        return _lines(comparison.comparisons_document(list(comparisons)), indent=1)

    def mix_comparisons(self, comparisons: Sequence[MixComparison]) -> list[str]:
        return _lines(mix_comparison.comparisons_document(list(comparisons)), indent=1)

    def history(
        self, runs: Sequence[SavedRun], rows: Sequence[HistoryRow], aggregate: str
    ) -> list[str]:
        return _lines(history.document(runs, rows, aggregate), indent=1)

    def mix_history(self, runs: Sequence[tuple[str, MixRun]]) -> list[str]:
        return _lines(mix.history_document(runs), indent=1)

    def simulation(self, simulation: Simulation) -> list[str]:
        return json.dumps(cachesim.document(simulation), indent=2).splitlines()

    def maintenance(self, run: MaintenanceRun) -> list[str]:
        return json.dumps(maintenance.document(run), indent=2).splitlines()


FORMAT = Json()

#: A run's table document as lines, as a function.
format_json = FORMAT.run
