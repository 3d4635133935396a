"""Keep passwords out of everything the tool prints or saves.

Passwords appear in configurations as ``password``/``passwd`` keys and inside
DSNs (``password=...``, ``user:secret@host``).  :func:`find_secrets` collects
the literal values from a configuration's text; :func:`redact` replaces them,
and any DSN-shaped password it recognises, with ``***``.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable

MASK = "***"

_KEY_VALUE = re.compile(r"^\s*(?:password|passwd)\s+(\S.*?)\s*$", re.IGNORECASE | re.MULTILINE)
_DSN_PASSWORD = re.compile(
    r"""\b(password|passwd|pwd)\s*=\s*(?:'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)"|([^\s'",;)]+))""",
    re.IGNORECASE,
)
_URL_PASSWORD = re.compile(r"(\b[a-z][a-z0-9+.-]*://[^:/@\s]*:)([^@/\s]+)(@)", re.IGNORECASE)
_DEFINE = re.compile(r"^\s*%define\s+(\S+)\s+(.*?)\s*$", re.IGNORECASE | re.MULTILINE)


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
    """*text* with every known secret and DSN-shaped password replaced by ``***``."""
    for secret in sorted(set(secrets), key=len, reverse=True):
        text = text.replace(secret, MASK)

    def mask_dsn(match: re.Match[str]) -> str:
        return f"{match.group(1)}={MASK}"

    text = _DSN_PASSWORD.sub(mask_dsn, text)
    return _URL_PASSWORD.sub(lambda m: f"{m.group(1)}{MASK}{m.group(3)}", text)


_filtering = threading.local()


class RedactingFilter(logging.Filter):
    """Mask passwords in log records before any handler formats them.

    ZODB, ZEO and RelStorage log through :mod:`logging`; a driver's message
    (or an exception attached to the record) may quote a DSN.
    """

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        super().__init__()
        self.secrets = frozenset(secrets)

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
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text, self.secrets)
        if record.stack_info:
            record.stack_info = redact(record.stack_info, self.secrets)
        return True


def install_log_redaction(secrets: Iterable[str], level: int = logging.ERROR) -> None:
    """Mask *secrets* in everything this process logs to stderr.

    Applies to the root logger's handlers and to Python's last-resort handler
    (used when no handler is configured, as in a plain run).  Installing it
    again replaces the previous filter, so workers can call it per stage.
    The last-resort handler also stops at *level*: below errors, the
    libraries' warnings (a refused connection, a disconnected ZEO client)
    repeat, in several lines, what the tool reports itself in one.
    """
    handlers = [*logging.getLogger().handlers]
    if logging.lastResort is not None:
        logging.lastResort.setLevel(level)
        handlers.append(logging.lastResort)
    for handler in handlers:
        for old in [f for f in handler.filters if isinstance(f, RedactingFilter)]:
            handler.removeFilter(old)
        handler.addFilter(RedactingFilter(secrets))


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
