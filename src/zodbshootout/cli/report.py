"""An error of the command line as one line on stderr, passwords masked."""

from __future__ import annotations

import sys
import traceback
from typing import Any

from zodbshootout.cli.say import emit, emit_lines
from zodbshootout.errors import EXIT_CELLS_FAILED, EXIT_USAGE, UsageError
from zodbshootout.inputs import MAX_CONFIG_BYTES, read_text
from zodbshootout.redact import find_secrets, redact

__all__ = ["report_error", "shorten_long_words"]

#: The longest word an error message repeats whole; a bad argument of 10 kB
#: is named by its start and length instead.
MAX_WORD_CHARS = 300


def shorten_long_words(message: str, limit: int = MAX_WORD_CHARS) -> str:
    """*message* with every word longer than *limit* cut to its start and its length."""
    return " ".join(
        f"{word[: limit // 3]}…({len(word):,} characters)" if len(word) > limit else word
        for word in message.split(" ")
    )


def report_error(error: BaseException, args: Any, internal: bool = False) -> int:
    """Print *error* as one line (and, with --debug, its traceback), passwords masked.

    A user's mistake exits 2; an *internal* error (a bug) exits 1 and asks
    for the traceback, which --debug shows.
    """
    secrets = _secrets_of(args)
    debug = bool(getattr(args, "debug", False))
    if debug:
        text = "".join(traceback.format_exception(error))
        emit_lines(redact(text, secrets), sys.stderr)
    message = shorten_long_words(redact(" ".join(str(error).split()), secrets))
    if internal:
        hint = "" if debug else " (run again with --debug to see where, and please report it)"
        emit(f"zodbshootout: internal error: {type(error).__name__}: {message}{hint}", sys.stderr)
        return EXIT_CELLS_FAILED
    emit(f"zodbshootout: error: {message}", sys.stderr)
    return EXIT_USAGE


def _secrets_of(args: Any) -> set[str]:
    """The passwords of the configuration file named on the command line, if readable."""
    path = getattr(args, "config", None)
    if not path:
        return set()
    # Bounded like the first read: the error being handled may be that the
    # file is a device or too large (/dev/zero).
    try:
        return find_secrets(read_text(path, "the configuration", MAX_CONFIG_BYTES))
    except (UsageError, ValueError):
        return set()
