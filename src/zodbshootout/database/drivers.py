"""Turn failures to open a database into one line a user can act on.

The usual causes are a database driver that isn't installed (name the extra
that installs it; the storage kinds list their drivers, StorageKind.drivers) and a
server that can't be reached.
"""

from __future__ import annotations

import re

from zodbshootout import storages
from zodbshootout.errors import install_hint


def _driver_for_module(module: str) -> storages.Driver | None:
    """The driver a storage kind knows as *module* (or a module of its package)."""
    top = module.split(".")[0]
    return next((d for d in storages.drivers() if d.module == top), None)


def extra_for_module(module: str) -> str | None:
    """The install extra that provides *module*, if it is one we know."""
    driver = _driver_for_module(module)
    return driver.extra if driver else None


def _database_of_extra(extra: str) -> str:
    """What the drivers an extra installs talk to (``PostgreSQL``)."""
    return next(d.database for d in storages.drivers() if d.extra == extra)


def describe_open_error(error: BaseException) -> str:
    """One line saying why a database could not be opened, and what to do."""
    missing = _missing_module(error)
    if missing == "auto":
        # RelStorage chose the driver itself and found none installed.
        extra = _extra_of_candidates(error)
        if extra:
            return (
                f"no {_database_of_extra(extra)} driver is installed: {install_hint(extra)}, "
                "or name an installed driver in the section"
            )
        return "no driver for this database is installed: name an installed one in the section"
    if missing:
        extra = extra_for_module(missing)
        if extra:
            hint = install_hint(extra)
        else:
            driver = _driver_for_module(missing)
            package = driver.package if driver and driver.package else missing
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
