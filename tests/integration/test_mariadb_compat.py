"""Prove that the MariaDB compatibility patches (mariadb_compat) are needed and sufficient.

The server tests open real RelStorage MySQL storages (history-preserving and
history-free, with each installed driver) in the dedicated database
``zodbshootout_test_compat``, which they create and drop themselves.  Point them at
another server with ZODBSHOOTOUT_MYSQL_HOST, _PORT, _ADMIN_USER and _ADMIN_PASSWORD;
the account must be allowed to create and drop that database.
"""

from __future__ import annotations

import importlib
import os

import pytest
import transaction
import ZODB
import ZODB.config
from persistent.mapping import PersistentMapping
from ZODB.FileStorage import FileStorage

from zodbshootout.storages.relstorage import mariadb_compat

from conftest import require_server

MySQLVersionDetector = pytest.importorskip("relstorage.adapters.mysql.schema").MySQLVersionDetector

DB_NAME = "zodbshootout_test_compat"
HOST = os.environ.get("ZODBSHOOTOUT_MYSQL_HOST", "127.0.0.1")
PORT = int(os.environ.get("ZODBSHOOTOUT_MYSQL_PORT", "3306"))
ADMIN_USER = os.environ.get("ZODBSHOOTOUT_MYSQL_ADMIN_USER", "root")
ADMIN_PASSWORD = os.environ.get("ZODBSHOOTOUT_MYSQL_ADMIN_PASSWORD", "")

# RelStorage driver name -> the module it needs.
DRIVER_MODULES = {"PyMySQL": "pymysql", "MySQLdb": "MySQLdb"}
DRIVERS = [pytest.param("PyMySQL", id="pymysql"), pytest.param("MySQLdb", id="mysqlclient")]
HISTORY = [pytest.param(True, id="history-preserving"), pytest.param(False, id="history-free")]

# RelStorage 4.3.0's table-level foreign keys, which MySQL enforces too and which must stay.
HISTORY_PRESERVING_FOREIGN_KEYS = {
    ("blob_chunk", "object_state"),
    ("current_object", "object_state"),
}

OBJECT_COUNT = 20


# --- fixtures ---


@pytest.fixture(scope="module")
def admin():
    """A connection to the server as an account that may create the test database."""
    require_server("mysql")
    pymysql = pytest.importorskip("pymysql", reason="PyMySQL is needed to manage the test database")
    try:
        conn = pymysql.connect(
            host=HOST,
            port=PORT,
            user=ADMIN_USER,
            password=ADMIN_PASSWORD,
            connect_timeout=3,
            autocommit=True,
        )
    except pymysql.err.MySQLError as exc:
        pytest.skip(f"MariaDB/MySQL not reachable at {HOST}:{PORT} as {ADMIN_USER!r}: {exc}")
    yield conn
    conn.close()


@pytest.fixture(scope="module")
def server_version(admin) -> str:
    with admin.cursor() as cur:
        cur.execute("SELECT version()")
        return cur.fetchone()[0]


@pytest.fixture
def mariadb(server_version) -> str:
    if not mariadb_compat.is_mariadb(server_version):
        pytest.skip(f"server {server_version} is MySQL, not MariaDB: the failures need MariaDB")
    return server_version


@pytest.fixture
def database(admin):
    """Create the dedicated test database empty, and drop it afterwards."""
    with admin.cursor() as cur:
        # A storage left open by a failed test must make cleanup fail, not hang.
        cur.execute("SET SESSION lock_wait_timeout = 30")
        cur.execute(f"DROP DATABASE IF EXISTS {DB_NAME}")
        cur.execute(f"CREATE DATABASE {DB_NAME}")
    yield DB_NAME
    with admin.cursor() as cur:
        cur.execute(f"DROP DATABASE IF EXISTS {DB_NAME}")


@pytest.fixture
def with_layer():
    """Install the layer for one test, restoring the process's previous state afterwards."""
    was_installed = mariadb_compat.installed()
    mariadb_compat.install()
    yield
    if not was_installed:
        mariadb_compat.uninstall()


@pytest.fixture
def without_layer():
    was_installed = mariadb_compat.installed()
    mariadb_compat.uninstall()
    yield
    if was_installed:
        mariadb_compat.install()


@pytest.fixture(params=DRIVERS)
def driver(request) -> str:
    pytest.importorskip(DRIVER_MODULES[request.param], reason=f"{request.param} not installed")
    return request.param


# --- helpers ---


def open_storage(driver: str, keep_history: bool):
    """Open the storage the way the benchmark does: from a ZConfig <relstorage> section."""
    password = f"passwd {ADMIN_PASSWORD}" if ADMIN_PASSWORD else ""
    return ZODB.config.storageFromString(
        f"""
        %import relstorage
        <relstorage>
          keep-history {"true" if keep_history else "false"}
          <mysql>
            driver {driver}
            host {HOST}
            port {PORT}
            user {ADMIN_USER}
            {password}
            db {DB_NAME}
          </mysql>
        </relstorage>
        """
    )


def driver_module(driver: str):
    return importlib.import_module(DRIVER_MODULES[driver])


def foreign_keys(admin) -> set[tuple[str, str]]:
    with admin.cursor() as cur:
        cur.execute(
            "SELECT table_name, referenced_table_name"
            " FROM information_schema.referential_constraints"
            " WHERE constraint_schema = %s",
            (DB_NAME,),
        )
        return {(table.lower(), referenced.lower()) for table, referenced in cur.fetchall()}


# --- the layer works ---


@pytest.mark.mysql
@pytest.mark.parametrize("keep_history", HISTORY)
def test_layer_lets_relstorage_add_update_and_read(
    admin, server_version, database, with_layer, driver, keep_history
):
    before = set(mariadb_compat.adjustments_applied())

    db = ZODB.DB(open_storage(driver, keep_history))
    try:
        with db.transaction() as conn:
            conn.root.objects = [PersistentMapping(n=i) for i in range(OBJECT_COUNT)]
        # Rewriting existing rows is the ON DUPLICATE KEY UPDATE path.
        for _ in range(2):
            with db.transaction() as conn:
                for obj in conn.root.objects:
                    obj["n"] += 1000
        with db.transaction() as conn:
            oid = conn.root.objects[0]._p_oid
    finally:
        db.close()

    # A fresh storage has no cache, so this reads what the database holds.
    db = ZODB.DB(open_storage(driver, keep_history))
    try:
        with db.transaction() as conn:
            assert [obj["n"] for obj in conn.root.objects] == [
                i + 2000 for i in range(OBJECT_COUNT)
            ]
        if keep_history:
            assert len(db.storage.history(oid, size=10)) == 3
    finally:
        db.close()

    notes = mariadb_compat.adjustments_applied()
    if not mariadb_compat.is_mariadb(server_version):
        assert set(notes) == before, "the layer must not change anything on MySQL"
        return
    if mariadb_compat.UPSERT_ALIAS in mariadb_compat.installed():
        assert any("VALUES()" in note for note in notes)
    if keep_history:
        if mariadb_compat.INLINE_REFERENCES in mariadb_compat.installed():
            assert any("REFERENCES" in note for note in notes)
        # Only the column-level REFERENCES went; RelStorage's real foreign keys stay.
        assert foreign_keys(admin) == HISTORY_PRESERVING_FOREIGN_KEYS


@pytest.mark.mysql
@pytest.mark.parametrize("keep_history", HISTORY)
def test_layer_covers_restore(server_version, database, with_layer, driver, keep_history, tmp_path):
    """copyTransactionsFrom() (zodbconvert) upserts through ObjectMover.restore()."""
    source = FileStorage(str(tmp_path / "source.fs"))
    source_db = ZODB.DB(source)
    with source_db.transaction() as conn:
        conn.root.value = PersistentMapping(n=1)
    with source_db.transaction() as conn:
        conn.root.value["n"] = 2

    target = open_storage(driver, keep_history)
    try:
        target.copyTransactionsFrom(source)
    finally:
        target.close()
        source_db.close()

    db = ZODB.DB(open_storage(driver, keep_history))
    try:
        with db.transaction() as conn:
            assert conn.root.value["n"] == 2
    finally:
        db.close()


# --- without the layer, the documented failures happen ---


@pytest.mark.mysql
def test_history_preserving_schema_fails_without_layer(mariadb, database, without_layer, driver):
    module = driver_module(driver)
    with pytest.raises(module.OperationalError) as excinfo:
        open_storage(driver, keep_history=True)
    # (1005, "Can't create table ... object_state (errno: 150 "Foreign key constraint
    # is incorrectly formed")")
    assert excinfo.value.args[0] == 1005
    assert "object_state" in str(excinfo.value)
    assert "errno: 150" in str(excinfo.value)


@pytest.mark.mysql
@pytest.mark.parametrize("keep_history", HISTORY)
def test_upserts_fail_without_upsert_patch(
    mariadb, database, with_layer, driver, keep_history, monkeypatch
):
    # Keep the schema patch so history-preserving storages get as far as the first commit.
    patched = MySQLVersionDetector.requires_values_upsert_alias
    if not hasattr(patched, "__wrapped__"):
        pytest.skip("this RelStorage needs no upsert patch")
    monkeypatch.setattr(MySQLVersionDetector, "requires_values_upsert_alias", patched.__wrapped__)

    module = driver_module(driver)
    storage = open_storage(driver, keep_history)
    try:
        # ZODB.DB() commits the root object: the first upsert.
        with pytest.raises(module.ProgrammingError) as excinfo:
            ZODB.DB(storage)
        transaction.abort()
    finally:
        storage.close()
    # (1064, "You have an error in your SQL syntax; ... near 'AS excluded ON DUPLICATE KEY...")
    assert excinfo.value.args[0] == 1064
    assert "AS excluded" in str(excinfo.value)


# --- the layer leaves MySQL and fixed RelStorage releases alone (no server needed) ---


@pytest.mark.parametrize(
    ("version", "is_mariadb"),
    [
        ("10.11.19-MariaDB-0+deb12u1", True),
        ("11.4.2-MariaDB-ubu2404", True),
        ("8.0.36", False),
        ("8.4.0-commercial", False),
        ("5.7.44-log", False),
    ],
)
def test_is_mariadb(version, is_mariadb):
    assert mariadb_compat.is_mariadb(version) is is_mariadb


@pytest.mark.parametrize(
    ("version", "alias"),
    [
        ("8.0.36", True),
        ("8.0.18", False),
        ("5.7.44-log", False),
        ("10.11.19-MariaDB-0+deb12u1", False),
    ],
)
def test_upsert_choice_only_changes_for_mariadb(with_layer, version, alias):
    detector = MySQLVersionDetector()
    detector._fetch_version_from_server = lambda _cursor: version
    assert detector.requires_values_upsert_alias(object()) is alias


def test_install_leaves_a_fixed_relstorage_alone(without_layer, monkeypatch):
    from relstorage.adapters.mysql.schema import MySQLSchemaInstaller

    original = MySQLVersionDetector.requires_values_upsert_alias

    def fixed_upsert_check(self, cursor):
        return "MariaDB" not in self.get_version(cursor) and original(self, cursor)

    fixed_templates = tuple(
        template.replace('REFERENCES "transaction"', "")
        for template in MySQLSchemaInstaller.CREATE_OBJECT_STATE_TMPLS
    )
    monkeypatch.setattr(MySQLVersionDetector, "requires_values_upsert_alias", fixed_upsert_check)
    monkeypatch.setattr(MySQLSchemaInstaller, "CREATE_OBJECT_STATE_TMPLS", fixed_templates)

    assert mariadb_compat.install() == []
    assert mariadb_compat.installed() == []


def test_install_is_idempotent_and_uninstall_restores(without_layer):
    from relstorage.adapters.mysql.schema import MySQLSchemaInstaller

    original = MySQLVersionDetector.requires_values_upsert_alias
    first = mariadb_compat.install()
    assert mariadb_compat.install() == first
    assert set(first) <= {mariadb_compat.UPSERT_ALIAS, mariadb_compat.INLINE_REFERENCES}
    mariadb_compat.uninstall()
    assert MySQLVersionDetector.requires_values_upsert_alias is original
    assert "_create_object_state" not in MySQLSchemaInstaller.__dict__
