"""RelStorage on SQLite: statistics from a nearly empty database make commits quadratic.

Checked on the query plan, not on a clock: RelStorage's own conflict-check
query, planned by a real SQLite with the statistics RelStorage left behind.
"""

from __future__ import annotations

import contextlib
import sqlite3

import transaction
import ZODB.config
from persistent.mapping import PersistentMapping

from zodbshootout.storages.relstorage.sqlite_planner import (
    discard_planner_statistics,
    sqlite_database_path,
)


def open_sqlite_db(directory) -> object:
    return ZODB.config.databaseFromString(f"""
        %import relstorage
        <zodb>
          <relstorage>
            <sqlite3>
              driver sqlite3
              data-dir {directory}
            </sqlite3>
          </relstorage>
        </zodb>
    """)


def conflict_check_plan(path: str, db) -> str:
    """How SQLite plans RelStorage's commit-time conflict check on a new connection."""
    mover = db.storage._adapter.mover
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute(str(mover._create_temp_store))
        rows = conn.execute(f"EXPLAIN QUERY PLAN {mover._detect_conflict_query}").fetchall()
    return " / ".join(row[-1] for row in rows)


def test_a_new_database_leaves_statistics_that_plan_a_scan_until_discarded(tmp_path):
    # As a run does: the probe opens and closes the new database, then
    # populate writes the containers and closes again.
    open_sqlite_db(tmp_path).close()
    db = open_sqlite_db(tmp_path)
    tm = transaction.TransactionManager()
    conn = db.open(tm)
    conn.root()["zodbshootout"] = PersistentMapping()
    tm.commit()
    conn.close()
    db.close()

    db = open_sqlite_db(tmp_path)
    try:
        path = sqlite_database_path(db.storage)
        assert path is not None
        assert path.startswith(str(tmp_path))
        # One object_state row recorded: a scan per stored object.
        assert "SCAN object_state" in conflict_check_plan(path, db)

        assert discard_planner_statistics(path) > 0
        plan = conflict_check_plan(path, db)
        assert "SCAN object_state" not in plan
        assert "SEARCH object_state USING INDEX" in plan
        # Nothing stored was touched: the root still holds the container.
        conn = db.open()
        assert isinstance(conn.root()["zodbshootout"], PersistentMapping)
        conn.close()
    finally:
        db.close()


def test_other_storages_have_no_sqlite_file(tmp_path):
    db = ZODB.config.databaseFromString(
        f"<zodb>\n<filestorage>\npath {tmp_path}/x.fs\n</filestorage>\n</zodb>"
    )
    try:
        assert sqlite_database_path(db.storage) is None
    finally:
        db.close()


def test_a_database_never_analyzed_has_nothing_to_discard(tmp_path):
    path = str(tmp_path / "plain.sqlite3")
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute("CREATE TABLE t (x)")
    assert discard_planner_statistics(path) == 0
