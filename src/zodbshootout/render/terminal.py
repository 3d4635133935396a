"""The table for people at a terminal: aligned columns, spread, the best value per row.

Each cell shows the aggregated rate (objects per second) and, with several
repetitions, ``±`` the relative standard deviation; the fastest database of
each row is bold green, or marked ``*`` when colours are off.  Drawn with ``rich``, a
dependency of zodbshootout.  Laid out from :func:`build_table`, like every
format, so it cannot disagree with the CSV.
"""

from __future__ import annotations

import io

from rich.console import Console
from rich.table import Table as RichTable
from rich.text import Text

from zodbshootout.render.csv import format_footnotes
from zodbshootout.render.markdown import insight_text
from zodbshootout.render.table import Block, Cell, build_table
from zodbshootout.results.record import RunResult

BEST_STYLE = "bold green"
# Wide enough for any table: rich draws a table no wider than its content.
_NATURAL_WIDTH = 100_000


def format_terminal(
    result: RunResult, aggregate: str = "mean", color: bool = False, width: int | None = 100
) -> list[str]:
    """The rich table as lines; ANSI styles only when *color* is true.

    *width* is the terminal's width in characters; a table wider than that
    is squeezed by rich rather than wrapped by the terminal.  None (output
    to a file or a pipe): the table's natural width, nothing cut.
    """
    table = build_table(result, aggregate)
    out = io.StringIO()
    console = Console(
        file=out,
        width=width or _NATURAL_WIDTH,
        force_terminal=color,
        color_system="standard" if color else None,
        highlight=False,
        emoji=False,
        _environ={},
    )
    what = "mean" if aggregate == "mean" else "best"
    for block in table.blocks:
        title = f"objects/s, {what} of {result.repetitions}"
        if len(table.blocks) > 1 or block.concurrency != 1:
            title = f"Concurrency {block.concurrency}: " + title
        console.print(_block_table(table.databases, block, title, color))
    marked = any(_best_index(cells) is not None for b in table.blocks for _l, cells in b.rows)
    if marked and not color:
        console.print(Text("* the fastest database of its row"))
    for line in format_footnotes(table)[1:]:
        console.print(Text(line))
    return [line.rstrip() for line in out.getvalue().splitlines()]


def _block_table(databases: list[str], block: Block, title: str, color: bool) -> RichTable:
    rich_table = RichTable(title=title, title_justify="left")
    rich_table.add_column("Transaction", justify="left", no_wrap=True)
    for database in databases:
        rich_table.add_column(database, justify="right", no_wrap=True)
    for label, cells in block.rows:
        best = _best_index(cells)
        rich_table.add_row(
            label,
            *(_cell_text(cell, index == best, color) for index, cell in enumerate(cells)),
        )
    if block.insight:
        rich_table.add_section()  # a rule between the rates and the insight rows
    for row in block.insight:
        rich_table.add_row(
            row.label,
            *(Text(insight_text(cell), style="dim" if cell.footnote else "") for cell in row.cells),
        )
    return rich_table


def _best_index(cells: list[Cell]) -> int | None:
    """The column with the highest rate; None if fewer than two cells were measured."""
    measured = [(cell.rate, index) for index, cell in enumerate(cells) if cell.rate is not None]
    if len(measured) < 2:
        return None
    return max(measured)[1]


def _cell_text(cell: Cell, best: bool, color: bool) -> Text:
    if cell.rate is None:
        return Text(f"n/a [{cell.footnote}]", style="dim")
    text = Text(f"{cell.rate:,.0f}", style=BEST_STYLE if best else "")
    if cell.stats is not None and cell.stats.count > 1:
        text.append(f" ±{cell.stats.relative_stddev:.0%}", style="dim")
    if cell.footnote is not None:
        text.append(f" [{cell.footnote}]", style="dim")
    if best and not color:
        # Without styles, a mark is the only way to point at the best value.
        text.append(" *")
    return text
