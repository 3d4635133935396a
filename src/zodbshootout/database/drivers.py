"""Turn failures to open a database into one line a user can act on.

The usual causes are a database driver that isn't installed (name the extra
that installs it) and a server that can't be reached.
"""

from __future__ import annotations

import re

from zodbshootout.errors import install_hint

# Python module -> the extra of this package that installs it (see pyproject.toml).
_EXTRA_FOR_MODULE = {
    "psycopg2": "postgresql",
    "pg8000": "postgresql",
    "MySQLdb": "mysql",
    "pymysql": "mysql",
    "pylibmc": "memcache",
}

# Drivers RelStorage supports that no extra installs: their PyPI names.
_PACKAGE_FOR_MODULE = {
    "psycopg2cffi": "psycopg2cffi",
    "mysql": "mysql-connector-python",
    "memcache": "python-memcached",
}


# The extra that installs the drivers of a database RelStorage found none for.
_DATABASE_FOR_EXTRA = {"postgresql": "PostgreSQL", "mysql": "MySQL", "memcache": "memcached"}


def extra_for_module(module: str) -> str | None:
    """The install extra that provides *module*, if it is one we know."""
    return _EXTRA_FOR_MODULE.get(module.split(".")[0])


def describe_open_error(error: BaseException) -> str:
    """One line saying why a database could not be opened, and what to do."""
    missing = _missing_module(error)
    if missing == "auto":
        # RelStorage chose the driver itself and found none installed.
        extra = _extra_of_candidates(error)
        if extra:
            return (
                f"no {_DATABASE_FOR_EXTRA[extra]} driver is installed: {install_hint(extra)}, "
                "or name an installed driver in the section"
            )
        return "no driver for this database is installed: name an installed one in the section"
    if missing:
        extra = extra_for_module(missing)
        if extra:
            hint = install_hint(extra)
        else:
            package = _PACKAGE_FOR_MODULE.get(missing.split(".")[0], missing)
            hint = f"pip install {package}, or name an installed driver in the section"
        return f"the Python module {missing!r} is not installed: {hint}"
    message = " ".join(str(error).split()) or type(error).__name__
    return f"cannot open the database: {type(error).__name__}: {message}{_hint_for(message)}"


# Words of the servers' own messages -> what the user should check.
_HINTS = (
    (
        ("password authentication failed", "access denied for user", "authentication failed"),
        "check the user and password in the database's section",
    ),
    (
        (
            "connection refused",
            "can't connect",
            "could not connect",
            "unknown host",
            "could not translate host name",
            "name or service not known",
            "timed out",
        ),
        "check that the server is running and the host and port in the database's section",
    ),
    (
        ("does not exist", "unknown database"),
        "create the database first, or fix its name in the database's section",
    ),
)


def _hint_for(message: str) -> str:
    """``" (check ...)"`` for a failure whose cause the message names, else ''."""
    lowered = message.lower()
    for needles, hint in _HINTS:
        if any(needle in lowered for needle in needles):
            return f" ({hint})"
    return ""


def _extra_of_candidates(error: BaseException) -> str | None:
    """The extra that installs one of the drivers RelStorage tried (``Module: 'X'``)."""
    current: BaseException | None = error
    while current is not None:
        for module in re.findall(r"Module: '([\w.]+)'", str(current)):
            extra = extra_for_module(module)
            if extra:
                return extra
        current = current.__cause__ or current.__context__
    return None


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
