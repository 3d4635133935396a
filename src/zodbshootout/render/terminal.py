"""The ``table`` format, for people at a terminal: aligned columns, spread, the best value.

A run's table is drawn with ``rich``, a dependency of zodbshootout: each
cell shows the aggregated rate (objects per second) and, with several
repetitions, ``±`` the relative standard deviation; the fastest database of
each row is bold green, or marked ``*`` when colours are off.  Laid out from
:func:`build_table`, like every format, so it cannot disagree with the CSV.
Every other shape is aligned text (:mod:`zodbshootout.render.table_writer`)
with its notes below: a mix run a block per database, comparisons with
their method, history with its legend, cachesim with its versions.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table as RichTable
from rich.text import Text

from zodbshootout.render import cachesim, comparison, history, mix, mix_comparison
from zodbshootout.render.csv import format_footnotes
from zodbshootout.render.formats import Format
from zodbshootout.render.markdown import insight_text
from zodbshootout.render.safe_text import terminal_safe
from zodbshootout.render.table import Block, Cell, build_table
from zodbshootout.render.table_writer import aligned, dashes
from zodbshootout.results.record import RunResult

if TYPE_CHECKING:
    from zodbshootout.results.cachesim import Simulation
    from zodbshootout.results.compare import Comparison
    from zodbshootout.results.history import HistoryRow, SavedRun
    from zodbshootout.results.mix import MixRecord, MixRun
    from zodbshootout.results.mix_compare import MixComparison

BEST_STYLE = "bold green"
# Wide enough for any table: rich draws a table no wider than its content.
_NATURAL_WIDTH = 100_000


def format_terminal(
    result: RunResult, aggregate: str = "mean", color: bool = False, width: int | None = 100
) -> list[str]:
    """rich's table of *result* as lines, for a terminal of *width* (see :class:`Terminal`)."""
    return Terminal(color, width).run(result, aggregate)


def _block_table(databases: list[str], block: Block, title: str, color: bool) -> RichTable:
    rich_table = RichTable(title=title, title_justify="left")
    rich_table.add_column("Transaction", justify="left", no_wrap=True)
    for database in databases:
        # Text, not str: rich would read a name's [brackets] as markup.  Made
        # safe here, since the colours rich adds are the only escapes kept.
        rich_table.add_column(_safe(database), justify="right", no_wrap=True)
    for label, cells in block.rows:
        best = _best_index(cells)
        rich_table.add_row(
            _safe(label),
            *(_cell_text(cell, index == best, color) for index, cell in enumerate(cells)),
        )
    if block.insight:
        rich_table.add_section()  # a rule between the rates and the insight rows
    for row in block.insight:
        rich_table.add_row(
            _safe(row.label),
            *(_safe(insight_text(cell), "dim" if cell.footnote else "") for cell in row.cells),
        )
    return rich_table


def _safe(text: str, style: str = "") -> Text:
    """*text* from a file as rich text: no markup read, no control character kept."""
    return Text(terminal_safe(text), style=style)


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


def _mix_record(record: MixRecord, run: MixRun) -> list[str]:
    """One database of a mix run: what ran, its operations, its notes."""
    table = mix.operation_table(record)
    lines = [f"{record.database}: {mix.describe_record(record, run)}"]
    lines += aligned(table, right=range(1, len(table[0])), indent="  ", strip=False)
    workers = mix.worker_table(record) if run.per_worker else []
    if workers:
        first = workers[0].index("tx/s")
        lines += aligned(workers, right=range(first, len(workers[0])), indent="  ", strip=False)
    counted = mix.work_table(record)
    if counted:
        lines += [f"  {mix.work_title(record)}"]
        lines += aligned(counted, right=range(2, len(counted[0])), indent="  ", strip=False)
    return lines + [f"  {note}" for note in mix.mix_notes(record, run)]


def _comparison(c: Comparison) -> list[str]:
    """The cells aligned, a rule, the geometric mean, the method; the index cost if any."""
    header, rows, summary = comparison.comparison_rows(c)
    every = [header, *rows, summary]
    lines = aligned(every, right=comparison.rate_columns(c, header))
    lines[-1:-1] = [dashes(every)]
    lines += ["", *comparison.method_lines(c)]
    title, costs = comparison.index_cost_rows(c)
    if costs:
        lines += ["", title, *aligned(costs, right={1, *range(3, len(costs[0]))})]
    return lines


@dataclass(frozen=True)
class Terminal(Format):
    """rich's table of a run; aligned text of every other shape.

    *width* is the terminal's width in characters: a run's table wider than
    that is squeezed by rich rather than wrapped by the terminal; None
    (output to a file or a pipe): the table's natural width, nothing cut.
    ANSI styles only when *color* is true.
    """

    color: bool = False
    width: int | None = 100

    def on_terminal(self, color: bool, width: int | None) -> Terminal:
        return Terminal(color, width)

    def run(self, result: RunResult, aggregate: str = "mean") -> list[str]:
        table = build_table(result, aggregate)
        out = io.StringIO()
        console = Console(
            file=out,
            width=self.width or _NATURAL_WIDTH,
            force_terminal=self.color,
            color_system="standard" if self.color else None,
            highlight=False,
            emoji=False,
            _environ={},
        )
        what = "mean" if aggregate == "mean" else "best"
        for block in table.blocks:
            title = f"objects/s, {what} of {result.repetitions}"
            if len(table.blocks) > 1 or block.concurrency != 1:
                title = f"Concurrency {block.concurrency}: " + title
            console.print(_block_table(table.databases, block, title, self.color))
        marked = any(_best_index(cells) is not None for b in table.blocks for _l, cells in b.rows)
        if marked and not self.color:
            console.print(Text("* the fastest database of its row"))
        for line in format_footnotes(table)[1:]:
            console.print(_safe(line))
        return [line.rstrip() for line in out.getvalue().splitlines()]

    def mix(self, run: MixRun) -> list[str]:
        """Every database's block, then the databases that could not be measured."""
        blocks = [_mix_record(record, run) for record in run.records]
        blocks += [block for block in mix.warmup_blocks(run) if block]
        blocks += [[note] for note in mix.failure_notes(run)]
        lines: list[str] = []
        for block in blocks:
            lines += ["", *block] if lines else block
        return lines

    def comparisons(self, comparisons: Sequence[Comparison]) -> list[str]:
        if len(comparisons) == 1:
            return _comparison(comparisons[0])
        lines: list[str] = []
        for c in comparisons:
            if lines:
                lines.append("")
            lines += [f"== {c.changed_name} against {c.base_name} ==", "", *_comparison(c)]
        return lines

    def mix_comparisons(self, comparisons: Sequence[MixComparison]) -> list[str]:
        lines: list[str] = []
        for c in comparisons:
            table = mix_comparison.table_rows(c)
            lines += [*aligned(table, right=range(3, len(table[0]))), mix_comparison.TABLE_METHOD]
            lines += mix_comparison.notes(c)
        return lines

    def history(
        self, runs: Sequence[SavedRun], rows: Sequence[HistoryRow], aggregate: str
    ) -> list[str]:
        header, table, labels = history.history_table(runs, rows, aggregate)
        return [
            *aligned([header, *table], right=range(labels, len(header))),
            "",
            history.what_line(aggregate, runs),
            *history.history_legend(runs),
        ]

    def mix_history(self, runs: Sequence[tuple[str, MixRun]]) -> list[str]:
        table = mix.history_table(runs)
        return [*aligned(table, right=range(2, len(table[0]))), mix.HISTORY_NOTE]

    def simulation(self, simulation: Simulation) -> list[str]:
        rows = cachesim.text_rows(simulation)
        lines = aligned(rows, right=range(1, len(rows[0])))
        lines.insert(1, "-" * len(lines[0]))
        notes = cachesim.notes(simulation)
        return lines + (["", *notes] if notes else [])


FORMAT = Terminal()
