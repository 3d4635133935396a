"""The one table writer: rows of text cells laid out as aligned columns or as a Markdown table.

Every format that prints a table of text cells (the ``table`` format's
aligned text, ``markdown``) lays it out here, from rows whose first row is
the header; *right* names the columns whose cells are right-aligned
(numbers), the others are left-aligned.  The classic aligned CSV keeps its
own layout (:mod:`zodbshootout.render.csv`): its header is left-aligned over
right-aligned numbers, with the commas of a CSV file.
"""

from __future__ import annotations

from collections.abc import Container, Sequence

Rows = Sequence[Sequence[str]]


def column_widths(rows: Rows, minimum: int = 0) -> list[int]:
    """The widest cell of each column (at least *minimum* characters)."""
    return [max(minimum, *(len(row[i]) for row in rows)) for i in range(len(rows[0]))]


def aligned(
    rows: Rows, right: Container[int], *, gap: str = "  ", indent: str = "", strip: bool = True
) -> list[str]:
    """One line per row, each column as wide as its widest cell, separated by *gap*.

    Trailing spaces are stripped unless *strip* is false (a column of left-
    aligned text at the end then keeps its width).
    """
    widths = column_widths(rows)
    lines = []
    for row in rows:
        cells = [
            text.rjust(width) if i in right else text.ljust(width)
            for i, (text, width) in enumerate(zip(row, widths, strict=True))
        ]
        line = indent + gap.join(cells)
        lines.append(line.rstrip() if strip else line)
    return lines


def dashes(rows: Rows, gap: str = "  ") -> str:
    """A rule of dashes under each column of :func:`aligned`'s layout of *rows*."""
    return gap.join("-" * width for width in column_widths(rows))


def escape_markdown(text: str) -> str:
    """*text* safe inside a Markdown table cell (a pipe would end the cell)."""
    return text.replace("|", "\\|")


def markdown(
    rows: Rows, right: Container[int], *, padded: bool = False, tight_rule: bool = False
) -> list[str]:
    """A GitHub-flavoured Markdown table: the header, the alignment rule, the rows.

    Cells are escaped.  *padded* pads every column to its widest cell (at
    least three characters), so that the source reads as a table too;
    otherwise cells are written as they are.  *tight_rule* writes the rule
    without spaces (``|---|---:|``).
    """
    rows = [[escape_markdown(text) for text in row] for row in rows]
    count = len(rows[0])
    if padded:
        widths = column_widths(rows, minimum=3)
        rule = [
            "-" * (width - 1) + ":" if i in right else ":" + "-" * (width - 1)
            for i, width in enumerate(widths)
        ]
        rows = [
            [
                text.rjust(width) if i in right else text.ljust(width)
                for i, (text, width) in enumerate(zip(row, widths, strict=True))
            ]
            for row in rows
        ]
    else:
        rule = ["---:" if i in right else "---" for i in range(count)]
    lines = [_markdown_row(row) for row in rows]
    rule_line = "|" + "|".join(rule) + "|" if tight_rule else _markdown_row(rule)
    return [lines[0], rule_line, *lines[1:]]


def _markdown_row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"
