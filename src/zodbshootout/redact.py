"""Keep passwords out of everything the tool prints or saves.

Passwords appear in configurations as ``password``/``passwd`` keys and inside
DSNs (``password=...``, ``user:secret@host``).  :func:`find_secrets` collects
the literal values from a configuration's text; :func:`redact` replaces them,
and any DSN-shaped password it recognises, with ``***``.
"""

from __future__ import annotations

import re
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
    secrets = set()
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
