"""RelStorage on SQLite: statistics from a nearly empty database make commits quadratic.

Checked on the query plan, not on a clock: RelStorage's own conflict-check
query, planned by a real SQLite with the statistics RelStorage left behind.
"""

from __future__ import annotations

import contextlib
import sqlite3

import pytest
import transaction
import ZODB.config
from persistent.mapping import PersistentMapping

from zodbshootout.storages.relstorage.sqlite_planner import (
    discard_planner_statistics,
    sqlite_database_path,
)

from support.processes import start_cli


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


def test_mix_workers_start_on_a_database_without_the_loaders_statistics(tmp_path):
    # The dataset's loader closes its DB before the workers start, and
    # RelStorage's PRAGMA optimize then records statistics of the loaded
    # tables, with which SQLite plans the conflict check as a scan of
    # current_object at every commit.  The runner says "N workers: warm-up"
    # just before it starts them; the statistics must be gone by then.
    data = tmp_path / "data"
    data.mkdir()
    config = tmp_path / "sqlite.conf"
    config.write_text(
        "%import relstorage\n<zodb sqlite>\n  <relstorage>\n    <sqlite3>\n"
        f"      driver sqlite3\n      data-dir {data}/sqlite\n"
        "    </sqlite3>\n  </relstorage>\n</zodb>\n"
    )
    path = data / "sqlite" / "main.sqlite3"
    cli = start_cli(
        "mix", str(config), "-n", "3000", "-c", "1", "-d", "0.5", "--warmup", "0",
        "-o", str(tmp_path / "mix.json"),
    )  # fmt: skip
    try:
        assert cli.stderr is not None
        seen = []
        for line in cli.stderr:
            seen.append(line)
            if "workers: warm-up" in line or "worker: warm-up" in line:
                with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as c:
                    tables = {r[0] for r in c.execute("SELECT name FROM sqlite_master")}
                    rows = (
                        c.execute("SELECT count(*) FROM sqlite_stat1").fetchone()[0]
                        if ("sqlite_stat1" in tables)
                        else 0
                    )
                break
        else:
            pytest.fail("the run never started its workers: " + "".join(seen))
        assert rows == 0, "the workers start with the loader's planner statistics"
    finally:
        cli.communicate(timeout=120)
    assert cli.returncode == 0
    # The loader's close did leave statistics (so the check above can fail):
    # RelStorage analysed the loaded tables, as the workers' closes do again.
    with contextlib.closing(sqlite3.connect(path)) as c:
        assert c.execute("SELECT count(*) FROM sqlite_stat1").fetchone()[0] > 0
