"""Count the statements RelStorage sends to its SQL database.

A statement here is one request of the driver to the database, as the
server counts it: a cursor's ``execute``, ``executemany``, ``callproc`` or
COPY, and each commit or rollback the driver sends.  psycopg2 sends
statements of its own: a ``BEGIN`` before the first statement of a
transaction (counted), and no ``COMMIT`` or ``ROLLBACK`` when no
transaction is open (not counted), so on PostgreSQL the count is what the
server's ``log_statement = all`` logs (the tests check it); opening a
connection there is a ``BEGIN`` and RelStorage's poll, and its close a
``ROLLBACK``.  On SQLite every statement SQLite runs is counted.  Zero means
no request at all, which is what the truth tests assert of steamin and hot.
Counting runs only with ``--counters`` (see storages.count_requests).

The count is kept per process and per thread, because thread workers each
use their own RelStorage instance (and so their own database connections).
"""

from __future__ import annotations

import contextlib
import sqlite3
import sys
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
                if _driver_begins(getattr(self._cursor, "connection", None)):
                    _count()  # the driver's own BEGIN, a round trip before this one
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


def installed() -> bool:
    """Whether this process counts statements (see :func:`install`)."""
    return bool(_installed)


def install() -> None:
    """Count from now on, in this process; before any RelStorage connects.

    A connection is counted only if it was opened after this call (its cursor
    or its trace callback is set up when it connects).  SQLite reports every
    statement it runs to a trace callback, so that is counted there
    (statements RelStorage runs on the connection itself included); the other
    drivers are counted at their cursors and at their connections' commits
    and rollbacks.
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

    def cursor(self: Any, conn: Any, server_side: bool = False) -> Any:
        made = original_cursor(self, conn, server_side)
        # A SQLite connection's statements reach its trace callback already.
        if isinstance(conn, sqlite3.Connection):
            return made
        _count_transaction_ends(type(conn))
        return _CountingCursor(made)

    driver_class.cursor = cursor


_counted_connection_classes: set[type] = set()


def _count_transaction_ends(connection_class: type) -> None:
    """Count the commits and rollbacks a connection of this class sends.

    At the connection, not at RelStorage's driver: RelStorage also commits
    on a cursor's connection directly (PostgreSQL's lock timeout).  The
    drivers' connection classes are Python classes (RelStorage subclasses
    psycopg2's); one that isn't can't be counted and is left alone.
    """
    if connection_class in _counted_connection_classes:
        return
    _counted_connection_classes.add(connection_class)
    for name in ("commit", "rollback"):
        original = getattr(connection_class, name, None)
        if original is None:
            continue

        def counted(self: Any, *args: Any, _original: Any = original, **kwargs: Any) -> Any:
            if _driver_ends(self):
                _count()
            return _original(self, *args, **kwargs)

        with contextlib.suppress(TypeError, AttributeError):  # a class of C
            setattr(connection_class, name, counted)


#: psycopg2's connection.status values (psycopg2.extensions.STATUS_READY, _BEGIN).
_PSYCOPG2_READY = 1
_PSYCOPG2_BEGIN = 2


def _is_psycopg2(conn: Any) -> bool:
    # RelStorage connects with subclasses of its own; psycopg2 is loaded by then.
    extensions = sys.modules.get("psycopg2.extensions")
    return extensions is not None and isinstance(conn, extensions.connection)


def _driver_begins(conn: Any) -> bool:
    """Whether the driver sends a BEGIN of its own before the next statement on *conn*."""
    return (
        conn is not None
        and _is_psycopg2(conn)
        and not conn.autocommit
        and conn.status == _PSYCOPG2_READY
    )


def _driver_ends(conn: Any) -> bool:
    """Whether a commit or rollback on *conn* reaches the server (psycopg2
    sends nothing when no transaction is open)."""
    return not _is_psycopg2(conn) or conn.status == _PSYCOPG2_BEGIN
