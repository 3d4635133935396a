"""Failure reasons short enough for a footnote.

Some storages put whole tables into their exceptions (RelStorage lists every
stored object id of a failed commit); a footnote keeps the first line of the
message, cut at a word boundary.
"""

from __future__ import annotations

#: Characters a footnote's reason may take; the table stays readable.
MAX_REASON_CHARS = 200
ELLIPSIS = "…"


def one_line(text: str, limit: int = MAX_REASON_CHARS) -> str:
    """The first non-empty line of *text*, whitespace collapsed, at most *limit* chars.

    A cut ends at a word boundary when there is one in the last fifth of
    the line, and is marked with an ellipsis.
    """
    first = next((line for line in text.splitlines() if line.strip()), "")
    line = " ".join(first.split())
    if len(line) <= limit:
        return line
    cut = line[: limit - len(ELLIPSIS)]
    space = cut.rfind(" ")
    if space >= len(cut) * 4 // 5:
        cut = cut[:space]
    return cut.rstrip(" ,;:") + ELLIPSIS
