"""The classic table: aligned CSV with a "Transaction" header, one column per database.

Example::

    "Transaction",                postgresql, mysql,   zeo_fs
    "Add 1000 Objects",                 6529,   10027,   5212

Headers are left-aligned and numbers right-aligned within each column, so a
CSV reader (with leading spaces skipped) and a person read the same thing.
A cell that could not be measured reads ``n/a[K]``; footnote K says why.
A rate less precise than ``--precision`` asked for stays a plain number (the
classic contract: a measured cell parses as a number); its footnote lists
the cells it applies to.
"""

from __future__ import annotations

from zodbshootout.render.insight import INDEX_KEYS_PER_SECOND, InsightCell
from zodbshootout.render.table import Block, Cell, Table, build_table
from zodbshootout.results.record import RunResult


def format_csv(result: RunResult, aggregate: str = "mean") -> list[str]:
    """The classic table as lines of text (no trailing newlines)."""
    # The classic table: rates only, so of the insight rows only index keys/s.
    table = build_table(result, aggregate, insight=(INDEX_KEYS_PER_SECOND,))
    lines: list[str] = []
    several = len(table.blocks) > 1
    for block in table.blocks:
        if several:
            if lines:
                lines.append("")
            lines.append(f"** concurrency={block.concurrency} **")
        lines.extend(_format_block(table.databases, block))
    lines.extend(format_footnotes(table, _marked_cells(table)))
    return lines


def format_footnotes(table: Table, cells: dict[int, list[str]] | None = None) -> list[str]:
    """The footnotes and notes under a table, if any.

    *cells* lists, by footnote number, the cells a footnote applies to that
    carry no mark of their own (the csv's imprecise rates).
    """
    cells = cells or {}
    lines = []
    if table.footnotes or table.notes:
        lines.append("")
    for number, text in enumerate(table.footnotes, 1):
        named = cells.get(number)
        lines.append(f"[{number}] {text}" + (f"; cells: {'; '.join(named)}" if named else ""))
    lines.extend(f"Note: {text}" for text in table.notes)
    return lines


def _marked_cells(table: Table) -> dict[int, list[str]]:
    """The measured cells with a footnote (less precise than asked), by footnote number."""
    several = len(table.blocks) > 1
    found: dict[int, list[str]] = {}
    for block in table.blocks:
        for label, cells in block.rows:
            for database, cell in zip(table.databases, cells, strict=True):
                if cell.rate is not None and cell.footnote is not None:
                    where = f"{database} {label}"
                    if several:
                        where += f" (concurrency {block.concurrency})"
                    found.setdefault(cell.footnote, []).append(where)
    return found


def _cell_text(cell: Cell) -> str:
    if cell.rate is None:
        return f"n/a[{cell.footnote}]"
    return f"{cell.rate:.0f}"


def _keys_text(cell: InsightCell) -> str:
    """An index keys/s figure as the csv shows rates: a whole number, no separators."""
    if cell.value is None:
        return f"n/a[{cell.footnote}]"
    return f"{cell.value:.0f}"


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
