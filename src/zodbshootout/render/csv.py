"""The ``csv`` format: the classic aligned table of a run; plain CSV of every other shape.

A run's table is the classic one: aligned CSV with a "Transaction" header,
one column per database.  Example::

    "Transaction",                postgresql, mysql,   zeo_fs
    "Add 1000 Objects",                 6529,   10027,   5212

Headers are left-aligned and numbers right-aligned within each column, so a
CSV reader (with leading spaces skipped) and a person read the same thing.
A cell that could not be measured reads ``n/a[K]``; footnote K says why.
A rate less precise than ``--precision`` asked for stays a plain number (the
classic contract: a measured cell parses as a number); its footnote lists
the cells it applies to.

Every other shape (a mix run, comparisons, history, cachesim) is plain CSV
for other programs: a header row, then one row per record of plain numbers,
an empty cell where a value does not exist; a mix run's notes follow after
a blank line as ``Note:`` lines, as the classic table's do.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from zodbshootout.render import cachesim, comparison, history, maintenance, mix, mix_comparison
from zodbshootout.render.formats import Format
from zodbshootout.render.insight import INDEX_KEYS_PER_SECOND, WORK_PER_TRANSACTION, InsightCell
from zodbshootout.render.table import Block, Cell, Table, build_table, flagged_cells
from zodbshootout.results.mix_stats import summarize
from zodbshootout.results.record import RunResult

if TYPE_CHECKING:
    from zodbshootout.results.cachesim import Simulation
    from zodbshootout.results.compare import Comparison
    from zodbshootout.results.history import HistoryRow, SavedRun
    from zodbshootout.results.maintenance import MaintenanceRun
    from zodbshootout.results.mix import MixRun
    from zodbshootout.results.mix_compare import MixComparison


#: A footnote names its cells up to this many; beyond, it counts them (``show
#: --verbose`` names every one), so that it stays one short line.
NAMED_CELLS = 3


def format_footnotes(table: Table, cells: dict[int, list[str]] | None = None) -> list[str]:
    """The footnotes and notes under a table, if any.

    *cells* lists, by footnote number, the cells a footnote applies to that
    carry no mark of their own (the csv's imprecise rates): named when they
    are few, else counted.
    """
    cells = cells or {}
    lines = []
    if table.footnotes or table.notes:
        lines.append("")
    for number, text in enumerate(table.footnotes, 1):
        named = cells.get(number) or []
        if len(named) > NAMED_CELLS:
            text += f"; {len(named)} cells (show --verbose names them)"
        elif named:
            text += f"; cells: {'; '.join(named)}"
        lines.append(f"[{number}] {text}")
    lines.extend(f"Note: {text}" for text in table.notes)
    return lines


def _cell_text(cell: Cell) -> str:
    if cell.rate is None:
        return f"n/a[{cell.footnote}]"
    return f"{cell.rate:.0f}"


def _keys_text(cell: InsightCell) -> str:
    """An index keys/s figure as the csv shows rates: a whole number, no separators."""
    if cell.value is None:
        return f"n/a[{cell.footnote}]"
    return cell.text if cell.detail.get("name") else f"{cell.value:.0f}"


def _format_block(databases: list[str], block: Block) -> list[str]:
    header = ['"Transaction"', *databases]
    rows = [[f'"{label}"', *(_cell_text(c) for c in cells)] for label, cells in block.rows]
    rows += [[f'"{row.label}"', *(_keys_text(c) for c in row.cells)] for row in block.insight]
    last = len(header) - 1

    def with_comma(row: list[str]) -> list[str]:
        return [text + ("," if i < last else "") for i, text in enumerate(row)]

    header = with_comma(header)
    rows = [with_comma(row) for row in rows]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    titles = [text.ljust(width) for text, width in zip(header, widths, strict=True)]
    lines = [" ".join(titles).rstrip()]
    for row in rows:
        parts = [row[0].ljust(widths[0])]
        parts += [text.rjust(width) for text, width in zip(row[1:], widths[1:], strict=True)]
        lines.append(" ".join(parts).rstrip())
    return lines


def csv_lines(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    """*rows* under *header* as CSV lines, one per row; None is an empty cell.

    A row is one line even when a value holds a newline (quoted, as CSV
    allows): the command line then shows that newline instead of letting a
    file's text start a line of its own (see render/safe_text.py).
    """
    return [_csv_row(header), *(_csv_row(row) for row in rows)]


def _csv_row(row: Sequence[Any]) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="").writerow(
        ["" if value is None else str(value) for value in row]
    )
    return out.getvalue()


def _with_notes(lines: list[str], notes: list[str]) -> list[str]:
    return [*lines, "", *(f"Note: {note}" for note in notes)] if notes else lines


class Csv(Format):
    """The classic aligned table of a run; plain CSV of every other shape."""

    def run(self, result: RunResult, aggregate: str = "mean") -> list[str]:
        """The classic table as lines of text (no trailing newlines)."""
        # The classic table: rates only, so of the insight rows only index keys/s,
        # and the work per transaction a --work run counted.
        table = build_table(
            result, aggregate, insight=(INDEX_KEYS_PER_SECOND, WORK_PER_TRANSACTION)
        )
        lines: list[str] = []
        several = len(table.blocks) > 1
        for block in table.blocks:
            if several:
                if lines:
                    lines.append("")
                lines.append(f"** concurrency={block.concurrency} **")
            lines.extend(_format_block(table.databases, block))
        lines.extend(format_footnotes(table, flagged_cells(table)))
        return lines

    def mix(self, run: MixRun) -> list[str]:
        """One row per database and operation, plain numbers; the notes below."""
        names = mix.figure_names(run.open_loop)
        rows = []
        notes = []
        for record in run.records:
            for row in summarize(record):
                figures = mix.operation_figures(row, run.open_loop)
                rows.append([record.database, row.operation, *(figures[n] for n in names)])
            notes += [f"{record.database}: {note}" for note in mix.mix_notes(record, run)]
        lines = csv_lines(["database", "operation", *names], rows)
        return _with_notes(lines, notes + mix.failure_notes(run))

    def comparisons(self, comparisons: Sequence[Comparison]) -> list[str]:
        rows = [row for c in comparisons for row in comparison.csv_rows(c)]
        return csv_lines(comparison.CSV_HEADER, rows)

    def mix_comparisons(self, comparisons: Sequence[MixComparison]) -> list[str]:
        rows = [row for c in comparisons for row in mix_comparison.csv_rows(c)]
        return csv_lines(mix_comparison.CSV_HEADER, rows)

    def history(
        self, runs: Sequence[SavedRun], rows: Sequence[HistoryRow], aggregate: str
    ) -> list[str]:
        return csv_lines(*history.csv_table(runs, rows, aggregate))

    def mix_history(self, runs: Sequence[tuple[str, MixRun]]) -> list[str]:
        rows = [[database, figure, *values] for database, figure, values in mix.history_rows(runs)]
        return csv_lines(["database", "metric", *(name for name, _run in runs)], rows)

    def simulation(self, simulation: Simulation) -> list[str]:
        return csv_lines(*cachesim.csv_table(simulation))

    def maintenance(self, run: MaintenanceRun) -> list[str]:
        return csv_lines(maintenance.KEYS, maintenance.plain_rows(run))


FORMAT = Csv()

#: The classic table of a run, as a function.
format_csv = FORMAT.run
