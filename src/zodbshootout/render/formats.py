"""Pick a renderer by name: what ``--format`` accepts, in one place for the run and ``show``."""

from __future__ import annotations

from zodbshootout.render.csv import format_csv
from zodbshootout.render.json import format_json
from zodbshootout.render.markdown import format_markdown
from zodbshootout.results.record import RunResult

#: The --format choices; csv (the classic table) is the default.
FORMATS = ("csv", "markdown", "json", "table")

#: The --format choices of compare and history; table (aligned text) is the default.
COMPARISON_FORMATS = ("table", "markdown", "csv", "json")

#: The --format choices of a mix run (``mix``, ``show``); table (aligned text) is the default.
MIX_FORMATS = ("table", "markdown", "csv", "json")


def format_result(
    result: RunResult,
    format_name: str = "csv",
    aggregate: str = "mean",
    color: bool = False,
    width: int | None = 100,
) -> list[str]:
    """*result* as lines of text in *format_name*.

    *color* and *width* (characters; None: the table's natural width) only
    matter to ``table``, the rich terminal table; the other formats are
    plain text whatever the output.
    """
    if format_name == "csv":
        return format_csv(result, aggregate)
    if format_name == "markdown":
        return format_markdown(result, aggregate)
    if format_name == "json":
        return format_json(result, aggregate)
    if format_name == "table":
        # rich is imported only when the terminal table is asked for.
        from zodbshootout.render.terminal import format_terminal

        return format_terminal(result, aggregate, color=color, width=width)
    raise ValueError(f"unknown format {format_name!r}; choose from {', '.join(FORMATS)}")
