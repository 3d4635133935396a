"""Which keys a configuration section wrote, as opposed to ZConfig's defaults.

ZConfig fills every key the text leaves out with its schema default, so a
parsed section can't tell ``cache-size 5000`` from nothing.  The tool sizes
caches for the object count only where the user left them alone, so while a
configuration is parsed each section records the keys its text wrote, and
where (``--rtt`` rewrites the lines that name a server).
"""

from __future__ import annotations

from typing import Any

import ZConfig.matcher

_RECORDED = "_zodbshootout_keys_written"
_POSITIONS = "_zodbshootout_key_positions"


def install_key_recording() -> None:
    """Make every ZConfig section parsed from now on remember its keys (idempotent)."""
    matcher_class = ZConfig.matcher.BaseMatcher
    if getattr(matcher_class.addValue, "_records_keys", False):
        return
    original = matcher_class.addValue

    def add_value(self: Any, key: str, value: Any, position: Any) -> Any:
        self.__dict__.setdefault(_RECORDED, set()).add(key.lower())
        if isinstance(position, tuple) and len(position) == 3:
            lineno, _column, url = position
            where = self.__dict__.setdefault(_POSITIONS, {}).setdefault(key.lower(), [])
            where.append((url, lineno))
        return original(self, key, value, position)

    add_value._records_keys = True  # type: ignore[attr-defined]
    matcher_class.addValue = add_value


def written(section: Any, key: str) -> bool:
    """Whether the configuration text set *key* in *section* (a ZConfig SectionValue).

    Only known for configurations parsed after :func:`install_key_recording`
    (zodbshootout.config.loader installs it); otherwise False, as for a default.
    """
    matcher = getattr(section, "_matcher", None)
    return key.lower() in getattr(matcher, _RECORDED, ())


def written_at(section: Any, key: str) -> list[tuple[str, int]]:
    """Where the text set *key* in *section*: (file URL, line number) per value, in order.

    Empty when the text did not set it (or was parsed before recording began).
    """
    matcher = getattr(section, "_matcher", None)
    return list(getattr(matcher, _POSITIONS, {}).get(key.lower(), []))
