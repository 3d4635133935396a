"""Count the statements RelStorage sends to its SQL database.

A statement here is one request of the driver to the database: a cursor's
``execute``, ``executemany``, ``callproc`` or COPY, and each commit or
rollback RelStorage asks its driver for.  (A driver may skip a rollback on an
idle connection, so the count is an upper bound of the round trips; zero
means none at all, which is what the truth tests assert of steamin and hot.)

The count is kept per process and per thread, because thread workers each
use their own RelStorage instance (and so their own database connections).
"""

from __future__ import annotations

import sqlite3
import threading
from typing import Any

_COUNTED_CURSOR_METHODS = ("execute", "executemany", "callproc", "copy_expert", "copy_from")

_process_total = [0]
_per_thread = threading.local()
_installed: list[bool] = []  # one True once install() has run


def _count() -> None:
    _process_total[0] += 1
    _per_thread.count = getattr(_per_thread, "count", 0) + 1


def in_process() -> int:
    """Statements sent by this process so far."""
    return _process_total[0]


def in_this_thread() -> int:
    """Statements sent by the calling thread so far."""
    return int(getattr(_per_thread, "count", 0))


class _CountingCursor:
    """A driver cursor that counts its requests and otherwise is the cursor."""

    __slots__ = ("_cursor",)

    def __init__(self, cursor: Any) -> None:
        object.__setattr__(self, "_cursor", cursor)

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._cursor, name)
        if name in _COUNTED_CURSOR_METHODS and callable(value):

            def counted(*args: Any, **kwargs: Any) -> Any:
                _count()
                return value(*args, **kwargs)

            return counted
        return value

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._cursor, name, value)

    def __iter__(self) -> Any:
        return iter(self._cursor)

    def __enter__(self) -> Any:
        self._cursor.__enter__()
        return self

    def __exit__(self, *exc: Any) -> Any:
        return self._cursor.__exit__(*exc)


def install() -> None:
    """Count from now on, in this process; before any RelStorage connects.

    A connection is counted only if it was opened after this call (its cursor
    or its trace callback is set up when it connects).  SQLite reports every
    statement it runs to a trace callback, so that is counted there
    (statements RelStorage runs on the connection itself included); the other
    drivers are counted at their cursors and at the commits and rollbacks
    RelStorage asks them for.
    """
    if _installed:
        return
    try:
        from relstorage.adapters.drivers import AbstractModuleDriver
        from relstorage.adapters.sqlite.drivers import Sqlite3Driver
    except ImportError:  # pragma: no cover (RelStorage is a dependency)
        return
    _count_cursor_requests(AbstractModuleDriver)
    _count_sqlite_statements(Sqlite3Driver)
    _installed.append(True)


def _count_sqlite_statements(driver_class: Any) -> None:
    original_connect = driver_class.connect_to_file

    def connect_to_file(self: Any, *args: Any, **kwargs: Any) -> Any:
        connection = original_connect(self, *args, **kwargs)
        connection.set_trace_callback(lambda _statement: _count())
        return connection

    driver_class.connect_to_file = connect_to_file


def _count_cursor_requests(driver_class: Any) -> None:
    original_cursor = driver_class.cursor
    original_commit = driver_class.commit
    original_rollback = driver_class.rollback

    def cursor(self: Any, conn: Any, server_side: bool = False) -> Any:
        made = original_cursor(self, conn, server_side)
        # A SQLite connection's statements reach its trace callback already.
        return made if isinstance(conn, sqlite3.Connection) else _CountingCursor(made)

    def commit(self: Any, conn: Any, *args: Any, **kwargs: Any) -> Any:
        if not isinstance(conn, sqlite3.Connection):
            _count()
        return original_commit(self, conn, *args, **kwargs)

    def rollback(self: Any, conn: Any, *args: Any, **kwargs: Any) -> Any:
        if not isinstance(conn, sqlite3.Connection):
            _count()
        return original_rollback(self, conn, *args, **kwargs)

    driver_class.cursor = cursor
    driver_class.commit = commit
    driver_class.rollback = rollback
