"""The statement counter of zodbshootout.storages.relstorage.round_trips, against real databases.

Each test is its own control: opening a connection (RelStorage polls) and
a cold read must count statements, so that the zeros of the cached reads
mean "no request", not "not counted".
"""

from __future__ import annotations

import pytest
import transaction
import ZODB.config
from persistent.mapping import PersistentMapping

from zodbshootout.storages.relstorage import mariadb_compat, round_trips
from zodbshootout.workload.objects import BenchmarkObject

N = 50


def sent_by(action) -> int:
    before = round_trips.in_this_thread()
    action()
    return round_trips.in_this_thread() - before


def check_counts(storage_section: str) -> None:
    round_trips.install()
    db = ZODB.config.databaseFromString(
        f"%import relstorage\n<zodb>\n<relstorage>\n{storage_section}\n</relstorage>\n</zodb>\n"
    )
    try:
        tm = transaction.TransactionManager()
        conn = db.open(tm)
        conn.root()["zodbshootout"] = container = PersistentMapping()
        for index in range(N):
            container[index] = BenchmarkObject(b"x" * 64)
        tm.commit()
        conn.close()

        opened = []
        assert sent_by(lambda: opened.append(db.open(tm))) > 0  # the poll
        conn = opened[0]

        def read_all() -> None:
            objects = conn.root()["zodbshootout"]
            assert [objects[i].payload for i in range(N)] == [b"x" * 64] * N

        read_all()  # fills the pickle cache
        assert sent_by(read_all) == 0  # steamin: the pickle cache answers
        conn.cacheMinimize()
        assert sent_by(read_all) == 0  # hot: RelStorage's local cache answers
        db.storage._cache.clear(load_persistent=False)
        conn.cacheMinimize()
        assert sent_by(read_all) > 0  # cold: the database answers
        tm.commit()
        conn.close()
        assert round_trips.in_process() >= round_trips.in_this_thread() > 0
    finally:
        db.close()


def test_sqlite(tmp_path):
    check_counts(f"<sqlite3>\n driver sqlite3\n data-dir {tmp_path}\n</sqlite3>")


@pytest.mark.postgresql
def test_postgresql(postgresql_dsn):
    check_counts(f"<postgresql>\n dsn {postgresql_dsn}\n</postgresql>")


@pytest.mark.mysql
@pytest.mark.parametrize(("driver", "module"), [("MySQLdb", "MySQLdb"), ("PyMySQL", "pymysql")])
def test_mysql(mysql_database, driver, module):
    from conftest import MYSQL_HOST, MYSQL_PORT

    # mysqlclient compiles against libmariadb: .ci/run adds it and reruns -m mysql.
    pytest.importorskip(module, reason=f"{driver} not installed (pip install '.[mysql]')")

    was_installed = mariadb_compat.installed()
    mariadb_compat.install()
    try:
        check_counts(
            f"<mysql>\n driver {driver}\n host {MYSQL_HOST}\n port {MYSQL_PORT}\n"
            f" user root\n db {mysql_database}\n</mysql>"
        )
    finally:
        if not was_installed:
            mariadb_compat.uninstall()


def logged_statements(log, database: str) -> int:
    """The statements PostgreSQL logged (log_statement = all) for *database* so far."""
    text = log.read_text(errors="replace")
    return sum(
        1 for line in text.splitlines() if line.startswith(f"{database}|") and "statement: " in line
    )


@pytest.mark.postgresql
@pytest.mark.slow
def test_postgresql_count_is_what_the_server_counts():
    """The count equals the statements PostgreSQL itself logs: psycopg2's own
    BEGIN included, its rollbacks of an idle connection (which send nothing)
    not; opening a connection (the open phase) in particular."""
    from support import privatepg

    reason = privatepg.unavailable()
    if reason:
        pytest.skip(reason)
    settings = {"log_statement": "all", "log_line_prefix": "%d|"}
    cluster = privatepg.PrivateCluster("zs_statements", "Stmt-Pw-8Jd", settings).start()
    round_trips.install()
    db = None
    try:
        db = ZODB.config.databaseFromString(
            "%import relstorage\n<zodb>\n<relstorage>\n"
            f"<postgresql>\n dsn {cluster.dsn()}\n</postgresql>\n</relstorage>\n</zodb>\n"
        )

        def agree(action) -> int:
            server_before = logged_statements(cluster.log, "zs_statements")
            counted = sent_by(action)
            assert counted == logged_statements(cluster.log, "zs_statements") - server_before
            return counted

        tm = transaction.TransactionManager()

        def write() -> None:
            conn = db.open(tm)
            conn.root()["zodbshootout"] = container = PersistentMapping()
            for index in range(N):
                container[index] = BenchmarkObject(b"x" * 64)
            tm.commit()
            conn.close()

        assert agree(write) > 0

        # The open phase times db.open only: psycopg2's BEGIN and RelStorage's
        # poll; closing the connection (untimed) rolls the snapshot back.
        opened: list = []
        looped = transaction.TransactionManager()  # as the open phase's loop
        for _ in range(3):
            assert agree(lambda: opened.append(db.open(looped))) == 2
            assert agree(opened.pop().close) == 1

        def read() -> None:
            db.storage._cache.clear(load_persistent=False)
            db.cacheMinimize()
            conn = db.open(tm)
            assert len(conn.root()["zodbshootout"]) == N
            tm.commit()
            conn.close()

        assert agree(read) > 0
    finally:
        if db is not None:
            db.close()
        cluster.stop()
