"""The table as GitHub-flavoured Markdown, for pull requests, issues and reports.

One table per concurrency level; each cell shows the aggregated rate in
objects per second and, with several repetitions, the relative standard
deviation (``6529 ±2%``).  Unmeasured cells read ``n/a [K]`` with footnote K
below the table.  Laid out from :func:`build_table`, like every format.
"""

from __future__ import annotations

from zodbshootout.render.insight import InsightCell
from zodbshootout.render.table import Block, Cell, build_table
from zodbshootout.results.record import RunResult


def format_markdown(result: RunResult, aggregate: str = "mean") -> list[str]:
    """Markdown lines (no trailing newlines) for *result*."""
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
    lines.extend(f"{number}. {_escape(text)}" for number, text in enumerate(table.footnotes, 1))
    lines.extend(f"- Note: {_escape(text)}" for text in table.notes)
    return lines


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


def _escape(text: str) -> str:
    return text.replace("|", "\\|")


def _format_block(databases: list[str], block: Block) -> list[str]:
    rows = [["Transaction", *databases]]
    rows += [[label, *(cell_text(c) for c in cells)] for label, cells in block.rows]
    rows += [[row.label, *(insight_text(c) for c in row.cells)] for row in block.insight]
    rows = [[_escape(text) for text in row] for row in rows]
    widths = [max(3, *(len(row[i]) for row in rows)) for i in range(len(rows[0]))]

    def line(row: list[str]) -> str:
        parts = [row[0].ljust(widths[0])]
        parts += [text.rjust(width) for text, width in zip(row[1:], widths[1:], strict=True)]
        return "| " + " | ".join(parts) + " |"

    rule = (
        "| "
        + " | ".join([":" + "-" * (widths[0] - 1)] + ["-" * (w - 1) + ":" for w in widths[1:]])
        + " |"
    )
    return [line(rows[0]), rule, *(line(row) for row in rows[1:])]
