"""The ``markdown`` format: GitHub-flavoured Markdown, for pull requests, issues and reports.

A run's table: one per concurrency level; each cell shows the aggregated
rate in objects per second and, with several repetitions, the relative
standard deviation (``6529 ±2%``).  Unmeasured cells read ``n/a [K]`` with
footnote K below the table.  Every other shape is its tables with their
notes: a mix run per database (what ran, its operations, ``- Note:``
items), comparisons (the geometric mean in bold, the method below),
history, cachesim.  Laid out with :mod:`zodbshootout.render.table_writer`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from zodbshootout.render import cachesim, comparison, history, maintenance, mix, mix_comparison
from zodbshootout.render.formats import Format
from zodbshootout.render.insight import InsightCell
from zodbshootout.render.table import Block, Cell, build_table
from zodbshootout.render.table_writer import escape_markdown, markdown
from zodbshootout.results.mix_stats import summarize
from zodbshootout.results.record import RunResult

if TYPE_CHECKING:
    from zodbshootout.results.cachesim import Simulation
    from zodbshootout.results.compare import Comparison
    from zodbshootout.results.history import HistoryRow, SavedRun
    from zodbshootout.results.maintenance import MaintenanceRun
    from zodbshootout.results.mix import MixRun
    from zodbshootout.results.mix_compare import MixComparison


def cell_text(cell: Cell) -> str:
    """A cell as ``6529 ±2%``, ``6529`` (one repetition) or ``n/a [1]``."""
    if cell.rate is None:
        return f"n/a [{cell.footnote}]"
    text = f"{cell.rate:.0f}"
    if cell.stats is not None and cell.stats.count > 1:
        text += f" ±{cell.stats.relative_stddev:.0%}"
    if cell.footnote is not None:
        text += f" [{cell.footnote}]"
    return text


def insight_text(cell: InsightCell) -> str:
    """An insight figure as shown, or ``n/a [K]`` with its footnote."""
    return cell.text if cell.footnote is None else f"n/a [{cell.footnote}]"


def _format_block(databases: list[str], block: Block) -> list[str]:
    rows = [["Transaction", *databases]]
    rows += [[label, *(cell_text(c) for c in cells)] for label, cells in block.rows]
    rows += [[row.label, *(insight_text(c) for c in row.cells)] for row in block.insight]
    return markdown(rows, right=range(1, len(rows[0])), padded=True)


def _titled(sections: list[tuple[str, list[str]]]) -> list[str]:
    """One section alone as it is; several each under a ``###`` heading, a blank line between."""
    if len(sections) == 1:
        return sections[0][1]
    lines: list[str] = []
    for title, section in sections:
        if lines:
            lines.append("")
        lines += [f"### {title}", "", *section]
    return lines


def _comparison(c: Comparison) -> list[str]:
    """The table, the geometric mean in bold, the method below; the index cost if any."""
    header, rows, summary = comparison.comparison_rows(c)
    summary = [f"**{text}**" if text and text != "-" else text for text in summary]
    lines = markdown([header, *rows, summary], right=comparison.rate_columns(c, header))
    # Blank lines between: one Markdown paragraph each.
    lines += [part for text in comparison.method_lines(c) for part in ("", escape_markdown(text))]
    title, costs = comparison.index_cost_rows(c)
    if costs:
        right = {1, *range(3, len(costs[0]))}
        lines += ["", escape_markdown(title), "", *markdown(costs, right=right)]
    return lines


class Markdown(Format):
    """GitHub-flavoured Markdown tables with their notes."""

    def run(self, result: RunResult, aggregate: str = "mean") -> list[str]:
        """A table per concurrency level, its footnotes and notes below."""
        table = build_table(result, aggregate)
        what = "mean" if aggregate == "mean" else "best"
        lines = [
            f"Objects per second ({what} of {result.repetitions} repetition"
            f"{'s' if result.repetitions != 1 else ''}; ± is the relative standard deviation)."
        ]
        for block in table.blocks:
            lines.append("")
            if len(table.blocks) > 1:
                lines.extend([f"**Concurrency {block.concurrency}**", ""])
            lines.extend(_format_block(table.databases, block))
        if table.footnotes or table.notes:
            lines.append("")
        lines.extend(
            f"{number}. {escape_markdown(text)}" for number, text in enumerate(table.footnotes, 1)
        )
        lines.extend(f"- Note: {escape_markdown(text)}" for text in table.notes)
        return lines

    def mix(self, run: MixRun) -> list[str]:
        """Per database: what ran, a table of its operations, and its notes."""
        names = [name for name in mix.figure_names(run.open_loop) if name != "transactions"]
        lines = [
            "Transactions per second and latency in milliseconds per operation "
            "(all: every operation together); conflicts counts every failed attempt."
        ]
        for record in run.records:
            rows = [["Operation", *(mix.FIGURE_LABELS[name] for name in names)]]
            for row in summarize(record):
                figures = mix.operation_figures(row, run.open_loop)
                digits = [1 if name == "tx_per_second" else 2 for name in names]
                cells = [mix.figure_text(figures[n], d) for n, d in zip(names, digits, strict=True)]
                rows.append([row.operation, *cells])
            described = escape_markdown(mix.describe_record(record, run))
            lines += ["", f"**{escape_markdown(record.database)}**: {described}", ""]
            lines += markdown(rows, right=range(1, len(rows[0])), padded=True)
            workers = mix.worker_table(record) if run.per_worker else []
            if workers:
                escaped = [[escape_markdown(cell) for cell in row] for row in workers]
                first = workers[0].index("tx/s")
                lines += ["", *markdown(escaped, right=range(first, len(escaped[0])), padded=True)]
            counted = mix.work_table(record)
            if counted:
                lines += ["", escape_markdown(mix.work_title(record) or ""), ""]
                lines += markdown(counted, right=range(2, len(counted[0])), padded=True)
            notes = mix.mix_notes(record, run)
            if notes:
                lines.append("")
                lines.extend(f"- Note: {escape_markdown(note)}" for note in notes)
        for note in mix.failure_notes(run):
            lines += ["", escape_markdown(note)]
        return lines

    def comparisons(self, comparisons: Sequence[Comparison]) -> list[str]:
        return _titled(
            [(f"{c.changed_name} against {c.base_name}", _comparison(c)) for c in comparisons]
        )

    def mix_comparisons(self, comparisons: Sequence[MixComparison]) -> list[str]:
        sections = []
        for c in comparisons:
            table = markdown(mix_comparison.table_rows(c, markdown=True), right={3, 4, 5, 6, 7})
            title = f"{escape_markdown(c.changed_name)} against {escape_markdown(c.base_name)}"
            notes = [part for n in mix_comparison.notes(c) for part in ("", escape_markdown(n))]
            sections.append((title, [*table, "", mix_comparison.MARKDOWN_METHOD, *notes]))
        return _titled(sections)

    def history(
        self, runs: Sequence[SavedRun], rows: Sequence[HistoryRow], aggregate: str
    ) -> list[str]:
        header, table, labels = history.history_table(runs, rows, aggregate)
        return [
            history.what_line(aggregate, runs),
            "",
            *markdown([header, *table], right=range(labels, len(header))),
            "",
            *history.history_legend(runs),
        ]

    def mix_history(self, runs: Sequence[tuple[str, MixRun]]) -> list[str]:
        table = [["Database", "Metric", *(name for name, _run in runs)]]
        for database, figure, values in mix.history_rows(runs):
            digits = 1 if figure == "tx_per_second" else 2
            cells = [mix.figure_text(value, digits) for value in values]
            table.append([database, mix.FIGURE_LABELS[figure], *cells])
        return [
            *markdown(table, right=range(2, len(table[0])), padded=True),
            "",
            "Every operation together; - where a run did not measure the database.",
        ]

    def simulation(self, simulation: Simulation) -> list[str]:
        rows = cachesim.text_rows(simulation)
        notes = cachesim.notes(simulation)
        table = markdown(rows, right=range(1, len(rows[0])), tight_rule=True)
        return table + (["", *(f"- {note}" for note in notes)] if notes else [])

    def maintenance(self, run: MaintenanceRun) -> list[str]:
        rows, notes = maintenance.text_rows(run)
        table = markdown(rows, right=range(2, len(rows[0])), tight_rule=True)
        return table + (["", *(f"- {note}" for note in notes)] if notes else [])


FORMAT = Markdown()

#: A run's Markdown tables, as a function.
format_markdown = FORMAT.run
