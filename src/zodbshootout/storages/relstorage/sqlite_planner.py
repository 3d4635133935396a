"""RelStorage on SQLite: planner statistics that don't describe an emptier database.

RelStorage runs ``PRAGMA optimize`` whenever it closes a SQLite connection,
which records table sizes for the query planner (ANALYZE).  A new benchmark
database is closed while it holds one or two objects (the tool's probe and
populate), so the statistics say ``object_state`` has one row.  The write
stage then stores thousands, and RelStorage's conflict check at commit (a
join of the new states with the current ones) is planned as a full scan of
``object_state`` per stored object: quadratic, about 40 s for 2 × 10000
objects, while the committing worker holds SQLite's write lock.  The other
worker's busy timeout (RelStorage's commit-lock-timeout, 30 s) runs out and
its commit fails with "database is locked".

A longer busy timeout or a retry would only time the bad plan (and the
wait for it).  So before each repetition, untimed, the tool discards the
statistics: SQLite then plans with its built-in estimates, which use the
indexes, until RelStorage's next ``PRAGMA optimize`` records sizes taken with
the data in place.  Statistics are derived data; nothing stored is touched.

Statistics of a *full* database are no better: with them SQLite flattens
the conflict check's view and scans ``current_object`` at every commit, so
a commit's cost grows with the database (measured: 0.4 ms a commit at
20,000 objects, 2.8 ms at 100,000, against 0.01 ms planned without
statistics).  ``mix`` therefore discards them too, after loading its
dataset and before its workers start, as the classic run does after
populate.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from typing import Any

#: The tables ANALYZE fills (stat2 and stat3 belong to old SQLite builds).
_STATISTICS_TABLES = ("sqlite_stat1", "sqlite_stat4")


def sqlite_database_path(storage: Any) -> str | None:
    """The main database file of a RelStorage on SQLite, or None for any other storage."""
    adapter = getattr(storage, "_adapter", None)
    if adapter is None or not type(adapter).__module__.startswith("relstorage.adapters.sqlite"):
        return None
    path = getattr(adapter.connmanager, "path", None)
    return path if isinstance(path, str) else None


def discard_planner_statistics(path: str, busy_timeout_seconds: float = 30.0) -> int:
    """Delete the ANALYZE statistics of the SQLite database at *path*; return the rows deleted."""
    deleted = 0
    with contextlib.closing(sqlite3.connect(path, timeout=busy_timeout_seconds)) as conn:
        present = {
            row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
        with conn:
            for table in _STATISTICS_TABLES:
                if table in present:
                    deleted += conn.execute(f"DELETE FROM {table}").rowcount
    return deleted


def database_path_of_factory(factory: Any) -> str | None:
    """The main database file a RelStorage ``<sqlite3>`` section opens, or None."""
    if type(factory).__name__ != "Sqlite3AdapterFactory":
        return None
    # RelStorage's Sqlite3Adapter keeps its main database here.
    return os.path.join(os.path.abspath(factory.config.data_dir), "main.sqlite3")
