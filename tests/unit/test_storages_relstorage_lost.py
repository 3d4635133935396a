"""storages.relstorage.lost: which SQL driver errors say the server is gone.

Built from the drivers' own exception classes (no server, no process): a
lost connection stops a mix worker at once, a failed statement never does.
"""

from __future__ import annotations

import sqlite3

import pytest

from zodbshootout import storages
from zodbshootout.storages.relstorage.lost import connection_lost

psycopg2 = pytest.importorskip("psycopg2")
pymysql = pytest.importorskip("pymysql")
pg8000 = pytest.importorskip("pg8000")


@pytest.mark.parametrize(
    "error",
    [
        psycopg2.OperationalError("server closed the connection unexpectedly"),
        psycopg2.OperationalError('connection to server at "127.0.0.1" failed: refused'),
        psycopg2.InterfaceError("connection already closed"),
        pg8000.InterfaceError("network error"),
        pymysql.OperationalError(2013, "Lost connection to server during query"),
        pymysql.OperationalError(2006, "Server has gone away"),
        pymysql.OperationalError(2003, "Can't connect to MySQL server"),
        pymysql.err.InterfaceError(0, ""),
        ConnectionResetError(104, "Connection reset by peer"),
    ],
    ids=repr,
)
def test_a_lost_connection_is_a_lost_server(error):
    assert connection_lost(error)
    assert storages.server_lost(error)  # the registry asks every kind


@pytest.mark.parametrize(
    "error",
    [
        psycopg2.errors.SerializationFailure("could not serialize access"),
        psycopg2.errors.LockNotAvailable("could not obtain lock"),
        psycopg2.errors.QueryCanceled("canceling statement due to statement timeout"),
        pg8000.DatabaseError({"C": "40001", "M": "could not serialize access"}),
        pymysql.OperationalError(1205, "Lock wait timeout exceeded"),
        pymysql.OperationalError(1213, "Deadlock found"),
        pymysql.err.IntegrityError(1062, "Duplicate entry"),
        sqlite3.OperationalError("database is locked"),
        sqlite3.OperationalError("interrupted"),
        ValueError("anything else"),
    ],
    ids=repr,
)
def test_a_failed_statement_is_not(error):
    assert not connection_lost(error)
    assert not storages.server_lost(error)


def test_an_error_raised_while_handling_a_lost_connection_is_one_too():
    try:
        try:
            raise pymysql.OperationalError(2013, "Lost connection to server during query")
        except pymysql.OperationalError:
            raise RuntimeError("Failed to close one or more resources") from None
    except RuntimeError as error:
        suppressed = error  # "from None" still keeps the context
    assert storages.server_lost(suppressed)
    assert not storages.server_lost(RuntimeError("Failed to close one or more resources"))
