"""The statement counter of zodbshootout.round_trips, against real databases.

Each test is its own control: opening a connection (RelStorage polls) and
a cold read must count statements, so that the zeros of the cached reads
mean "no request", not "not counted".
"""

from __future__ import annotations

import pytest
import transaction
import ZODB.config
from persistent.mapping import PersistentMapping

from zodbshootout import round_trips
from zodbshootout.objects import BenchmarkObject
from zodbshootout.storages import mariadb_compat

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
