"""Text made safe for a terminal: control characters are shown, never obeyed.

A result file, a versions file or a configuration is anybody's: a database
name, label, note or metadata value may hold ESC (colours, cursor moves,
OSC 8 links, OSC 52 clipboard writes, window titles), BEL, NUL, a carriage
return or a newline that would forge a line of output.  Each such character
becomes its JSON-style escape (``\\u001b``), so a JSON document stays valid
with the same values and every other format shows what was there.  Tabs stay:
they move the cursor right, no more.
"""

from __future__ import annotations

import re

__all__ = ["terminal_safe", "terminal_safe_styled"]

#: C0 controls but tab, DEL and C1 controls, the bidirectional overrides and
#: isolates and the marks (which reorder what follows), the Unicode line and
#: paragraph separators, and lone surrogates (which no terminal encoding holds).
_UNSAFE = re.compile(
    "[\x00-\x08\x0a-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2028\u2029\u2066-\u2069\ud800-\udfff]"
)

#: A colour or weight (SGR) sequence, the only escape a format writes itself.
_STYLE = re.compile(r"(\x1b\[[0-9;]*m)")


def _escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def terminal_safe(text: str) -> str:
    """*text* (one line) with every character a terminal would obey shown as its escape."""
    return _UNSAFE.sub(_escape, text)


def terminal_safe_styled(text: str) -> str:
    """Like :func:`terminal_safe`, but keeping colour sequences (SGR), for a format that
    styles its own output and made its data safe before styling it."""
    return "".join(
        part if index % 2 else terminal_safe(part) for index, part in enumerate(_STYLE.split(text))
    )
