"""Keep passwords out of everything the tool prints or saves.

Passwords appear in configurations as ``password``/``passwd`` keys, inside
DSNs (``password=...``, quoted or not), in URLs (``user:secret@host``) and as
the values of ``%define`` lines those refer to.  :func:`find_secrets`
collects the literal values from a configuration's text; :func:`redact`
replaces with ``***`` every password *field* (whole, spaces and quotes
included) and, for a password that is not a plain word, every whole
occurrence of it (say, a password used by mistake in a path).

A password that is a plain word (letters only, like ``zodbshootout``) is
masked in its fields only: anywhere else it can't be told from that word,
and masking the word would garble messages (``pip install '***[...]'``).
"""

from __future__ import annotations

import logging
import re
import sys
import threading
from collections.abc import Callable, Iterable

MASK = "***"

_KEY_VALUE = re.compile(r"^\s*(?:password|passwd)\s+(\S.*?)\s*$", re.IGNORECASE | re.MULTILINE)
_KEY_LINE = re.compile(r"^(\s*(?:password|passwd)\s+)(\S.*?)(\s*)$", re.IGNORECASE | re.MULTILINE)
# An unquoted value runs over spaces up to the next ``key=`` of the DSN (or
# the line's end): ``password=Hd4Pg Se'cr"3t host=h`` is one password field,
# so the whole of it is masked, whatever the driver makes of it.
_UNQUOTED_REST = r"""(?:[ \t]+(?![\w.-]+\s*=)[^\s]+)*"""
# Unquoted, libpq reads a value up to white space: a quote, comma or
# parenthesis inside it is part of the password (``password=ab"cd``).
_UNQUOTED = rf"""[^\s'"]\S*{_UNQUOTED_REST}"""
_DSN_PASSWORD = re.compile(
    r"""\b(password|passwd|pwd)\s*=\s*(?:'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)"|"""
    rf"""({_UNQUOTED}))""",
    re.IGNORECASE,
)
# The start of a password field's value: ``password=``, ``'password': `` (a
# keyword dict's repr), ``"passwd" = ``.
_FIELD = re.compile(
    r"""(?:\b(?:password|passwd|pwd)\s*=|['"](?:password|passwd|pwd)['"]\s*[:=])\s*""",
    re.IGNORECASE,
)
# In a message (no known password) a value also ends at a quote, comma or
# bracket: ``{'password': None}``.  Known passwords are masked whole anyway.
_UNQUOTED_VALUE = re.compile(rf"""[^\s'",;)}}\]&]+{_UNQUOTED_REST}""")
_URL_PASSWORD = re.compile(r"(\b[a-z][a-z0-9+.-]*://[^:/@\s]*:)([^@/\s]+)(@)", re.IGNORECASE)
_URL_USER = re.compile(r"\b(?:[a-z][a-z0-9+.-]*://)?[\w.+-]*:", re.IGNORECASE)
_DEFINE = re.compile(r"^\s*%define\s+(\S+)\s+(.*?)\s*$", re.IGNORECASE | re.MULTILINE)
_DEFINE_LINE = re.compile(r"^(\s*%define\s+\S+\s+)(.*?)(\s*)$", re.IGNORECASE | re.MULTILINE)
# libpq quotes the part of a DSN it could not parse, which may be a password's.
_LIBPQ_FRAGMENT = re.compile(r'(after ")([^"]*)(" in connection info string)')
_PLAIN_WORD = re.compile(r"[A-Za-z]+")


def find_secrets(config_text: str) -> set[str]:
    """The literal passwords a configuration text contains (after %define expansion)."""
    defines = {name.lower(): value for name, value in _DEFINE.findall(config_text)}

    def expand(value: str) -> str:
        return re.sub(
            r"\$(\w+)|\$\{(\w+)\}",
            lambda m: defines.get((m.group(1) or m.group(2)).lower(), m.group(0)),
            value,
        )

    expanded = expand(config_text)
    secrets: set[str] = set()
    for text in (config_text, expanded):
        secrets.update(v for v in _KEY_VALUE.findall(text))
        for match in _DSN_PASSWORD.finditer(text):
            secrets.add(next(g for g in match.groups()[1:] if g is not None))
        secrets.update(m.group(2) for m in _URL_PASSWORD.finditer(text))
    # A password that is itself a reference to a %define is known by its value.
    return {s for s in secrets if s and not s.startswith("$") and s != MASK}


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """*text* with every password field, and every known non-word password, masked."""
    known = sorted({s for s in secrets if s and s != MASK}, key=len, reverse=True)
    text = _KEY_LINE.sub(lambda m: _mask_key_line(m, known), text)
    text = _DEFINE_LINE.sub(
        lambda m: f"{m.group(1)}{MASK}{m.group(3)}" if m.group(2) in known else m.group(0), text
    )
    text = _mask_field_values(text, known)
    text = _mask_url_passwords(text, known)
    text = _LIBPQ_FRAGMENT.sub(lambda m: f"{m.group(1)}{MASK}{m.group(3)}", text)
    for secret in known:
        if not _PLAIN_WORD.fullmatch(secret):
            text = re.sub(rf"(?<![\w]){re.escape(secret)}(?![\w])", MASK, text)
    return text


def _mask_key_line(line: re.Match[str], known: list[str]) -> str:
    """A ``password VALUE`` line of a configuration, its value masked.

    A value of several words is a password only if known as one: a driver's
    message may have a line like "password authentication failed for user".
    """
    value = line.group(2)
    if len(value.split()) > 1 and value not in known:
        return line.group(0)
    return f"{line.group(1)}{MASK}{line.group(3)}"


def _mask_field_values(text: str, known: list[str]) -> str:
    """Mask the value after every ``password=`` (and the like), whole."""
    parts = []
    position = 0
    for field in _FIELD.finditer(text):
        if field.start() < position:
            continue  # inside a value already masked
        span = _value_span(text, field.end(), known)
        if span is None:
            continue
        parts.append(text[position : span[0]])
        parts.append(MASK)
        position = span[1]
    parts.append(text[position:])
    return "".join(parts)


def _value_span(text: str, start: int, known: list[str]) -> tuple[int, int] | None:
    """The value that starts at *start*, without its quotes; None if there is none.

    A quote may be escaped (``\\'``, as in a repr).  A known password sets
    the extent of an unquoted value, so that one with a space is masked whole.
    """
    escaped = text.startswith("\\", start)
    quote_at = start + 1 if escaped else start
    if quote_at < len(text) and text[quote_at] in "'\"":
        closing = ("\\" if escaped else "") + text[quote_at]
        end = quote_at + 1
        while True:
            end = text.find(closing, end)
            if end == -1:
                return None
            if escaped or text[end - 1] != "\\":
                return quote_at + 1, end
            end += 1
    for secret in known:
        if text.startswith(secret, start):
            return start, start + len(secret)
    match = _UNQUOTED_VALUE.match(text, start)
    return (start, match.end()) if match else None


def _mask_url_passwords(text: str, known: list[str]) -> str:
    """``scheme://user:PASSWORD@`` (and ``user:PASSWORD@`` for a known password)."""
    for secret in known:
        text = re.sub(
            rf"({_URL_USER.pattern}){re.escape(secret)}@", rf"\1{MASK}@", text, flags=re.I
        )
    return _URL_PASSWORD.sub(lambda m: f"{m.group(1)}{MASK}{m.group(3)}", text)


_filtering = threading.local()


class RedactingFilter(logging.Filter):
    """Mask passwords in log records before any handler formats them.

    ZODB, ZEO and RelStorage log through :mod:`logging`; a driver's message
    (or an exception attached to the record) may quote a DSN.
    """

    def __init__(
        self,
        secrets: Iterable[str] = (),
        one_line: bool = False,
        said: Callable[[BaseException], bool] | None = None,
    ) -> None:
        super().__init__()
        self.secrets = frozenset(secrets)
        # For the last-resort handler of a run without --debug: an attached
        # exception becomes a summary on the message's line, not a traceback.
        self.one_line = one_line
        #: With one_line: the errors the tool reports itself in one line (a
        #: server that is gone), whose records are dropped, not repeated.
        self.said = said

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(_filtering, "active", False):
            # Formatting an exception ran code that logged (RelStorage's
            # DriverNotAvailableError does, while it renders itself): keep the
            # nested record's message but not its exception, or this recurses.
            record.exc_info = None
            record.exc_text = None
            record.msg, record.args = redact(record.getMessage(), self.secrets), ()
            return True
        _filtering.active = True
        try:
            return self._redact(record)
        finally:
            _filtering.active = False

    def _redact(self, record: logging.LogRecord) -> bool:
        record.msg = redact(record.getMessage(), self.secrets)
        record.args = ()
        if self.one_line and self.said is not None:
            # Attached, or being handled where the record was logged (filters
            # run in the logging call: transaction's "A storage error occurred
            # during the second phase" is logged in an except block, bare).
            about = record.exc_info[1] if record.exc_info else sys.exc_info()[1]
            if about is not None and self.said(about):
                return False
        if self.one_line and record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            summary = redact(" ".join(f"{type(error).__name__}: {error}".split()), self.secrets)
            record.msg = f"{record.name}: {' '.join(record.msg.split())}: {summary}"
            record.exc_info = None
            record.exc_text = None
            record.stack_info = None
            return True
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text, self.secrets)
        if record.stack_info:
            record.stack_info = redact(record.stack_info, self.secrets)
        return True


def install_log_redaction(
    secrets: Iterable[str],
    level: int = logging.ERROR,
    said: Callable[[BaseException], bool] | None = None,
) -> None:
    """Mask *secrets* in everything this process logs to stderr.

    Applies to the root logger's handlers and to Python's last-resort handler
    (used when no handler is configured, as in a plain run).  Installing it
    again replaces the previous filter, so workers can call it per stage.
    The last-resort handler also stops at *level*: below errors, the
    libraries' warnings (a refused connection, a disconnected ZEO client)
    repeat, in several lines, what the tool reports itself in one; and it
    prints an error's attached exception as a one-line summary, never a
    traceback (that is what --debug is for).  *said*: the errors the tool
    reports itself (a server that is gone, see storages.server_lost); the
    last resort drops the libraries' records of them (ZEO's "Couldn't load
    state", RelStorage's "Reconnect failed"), which --log and --debug keep.
    """
    handlers = [*logging.getLogger().handlers]
    if logging.lastResort is not None:
        logging.lastResort.setLevel(level)
        handlers.append(logging.lastResort)
    for handler in handlers:
        for old in [f for f in handler.filters if isinstance(f, RedactingFilter)]:
            handler.removeFilter(old)
        # Configured handlers (--log, --debug) keep tracebacks; the last
        # resort, which prints a plain run's records, gives one line each.
        last_resort = handler is logging.lastResort
        handler.addFilter(
            RedactingFilter(secrets, one_line=last_resort, said=said if last_resort else None)
        )


class _ToolOrSevere(logging.Filter):
    """Pass the tool's own debug records and everyone's warnings and errors."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.name.startswith("zodbshootout") or record.levelno >= logging.WARNING


def enable_debug_log() -> None:
    """For --debug: show the tool's debug records (tracebacks of failed cells) on stderr.

    The handler sits on the root logger so that :func:`install_log_redaction`
    masks passwords in what it prints, too.
    """
    root = logging.getLogger()
    if any(getattr(h, "_zodbshootout_debug", False) for h in root.handlers):
        return
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    handler.addFilter(_ToolOrSevere())
    handler._zodbshootout_debug = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
