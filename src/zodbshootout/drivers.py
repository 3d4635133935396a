"""Turn failures to open a database into one line a user can act on.

The usual causes are a database driver that isn't installed (name the extra
that installs it) and a server that can't be reached.
"""

from __future__ import annotations

import re

# Python module -> the extra of this package that installs it.
_EXTRA_FOR_MODULE = {
    "psycopg2": "postgresql",
    "psycopg2cffi": "postgresql",
    "pg8000": "postgresql",
    "MySQLdb": "mysql",
    "pymysql": "mysql",
    "mysql": "mysql",
    "pylibmc": "memcache",
    "memcache": "memcache",
}


def extra_for_module(module: str) -> str | None:
    """The install extra that provides *module*, if it is one we know."""
    return _EXTRA_FOR_MODULE.get(module.split(".")[0])


def describe_open_error(error: BaseException) -> str:
    """One line saying why a database could not be opened, and what to do."""
    missing = _missing_module(error)
    if missing:
        extra = extra_for_module(missing)
        hint = f"pip install 'zodbshootout[{extra}]'" if extra else f"install {missing}"
        return f"the Python module {missing!r} is not installed: {hint}"
    message = " ".join(str(error).split()) or type(error).__name__
    return f"cannot open the database: {type(error).__name__}: {message}"


def _missing_module(error: BaseException) -> str | None:
    current: BaseException | None = error
    while current is not None:
        if isinstance(current, ModuleNotFoundError) and current.name:
            return current.name
        # RelStorage reports a driver it can't import by name in its message.
        text = str(current)
        match = re.search(r"[Dd]river (?:named )?'?([\w.]+)'? (?:is )?not available", text)
        if match:
            return match.group(1)
        match = re.search(r"No module named '([\w.]+)'", text)
        if match:
            return match.group(1)
        current = current.__cause__ or current.__context__
    return None
