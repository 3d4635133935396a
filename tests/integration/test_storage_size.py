"""storagesize: each storage's size, read from its real file or server, grows by what is written."""

from __future__ import annotations

import contextlib

import pytest
import transaction

from zodbshootout.config.loader import load_config
from zodbshootout.database.open import open_database
from zodbshootout.probes.storage_size import storage_size
from zodbshootout.storages.zeo.server import ServerRequest, ZEOServerProcess
from zodbshootout.workload.objects import BenchmarkObject
from zodbshootout.workload.root import container_of, populate

from conftest import MYSQL_HOST, MYSQL_PORT
from support import configs

OBJECTS = 400
PAYLOAD_BYTES = 1000


@contextlib.contextmanager
def _database(path, data_dir):
    config = load_config(path, data_dir)
    factory = config.databases["db"]
    with contextlib.ExitStack() as stack:
        addresses = []
        if "embeddedzeo" in config.source.text:
            server = ZEOServerProcess(ServerRequest(config.source, "db", 0))
            stack.callback(server.stop)
            addresses.append(server.address)
        db = open_database(config.source, "db", addresses, "0", config=config)
        stack.callback(db.close)
        yield db, factory


def _growth_per_object(path, data_dir, objects=OBJECTS):
    with _database(path, data_dir) as (db, factory):
        populate(db, 1)
        before = storage_size(db, factory)
        assert before.size_bytes is not None, before.reason
        tm = transaction.TransactionManager()
        conn = db.open(transaction_manager=tm)
        container = container_of(conn, 0)
        for index in range(objects):
            container[index] = BenchmarkObject(bytes([65 + index % 26]) * PAYLOAD_BYTES)
        tm.commit()
        conn.close()
        after = storage_size(db, factory)
        assert after.size_bytes is not None
        return (after.size_bytes - before.size_bytes) / objects


def _assert_plausible(per_object):
    # At least the payload; at most twice payload plus a generous pickle and record overhead.
    assert PAYLOAD_BYTES <= per_object <= 2 * (PAYLOAD_BYTES + 200), per_object


def test_filestorage(write_config, data_dir):
    _assert_plausible(_growth_per_object(write_config(configs.filestorage("db")), data_dir))


@pytest.mark.zeo
def test_filestorage_behind_embedded_zeo(write_config, data_dir):
    _assert_plausible(_growth_per_object(write_config(configs.embedded_zeo("db")), data_dir))


def test_relstorage_sqlite(write_config, data_dir):
    _assert_plausible(_growth_per_object(write_config(configs.sqlite("db")), data_dir))


@pytest.mark.postgresql
def test_relstorage_postgresql(write_config, data_dir, postgresql_dsn):
    section = (
        f"<zodb db>\n<relstorage>\n<postgresql>\ndsn {postgresql_dsn}\n"
        "</postgresql>\n</relstorage>\n</zodb>\n"
    )
    _assert_plausible(_growth_per_object(write_config(section), data_dir))


@pytest.mark.mysql
def test_relstorage_mysql(write_config, data_dir, mysql_database):
    section = (
        f"<zodb db>\n<relstorage>\n<mysql>\ndriver PyMySQL\nhost {MYSQL_HOST}\nport {MYSQL_PORT}\n"
        f"user root\ndb {mysql_database}\n</mysql>\n</relstorage>\n</zodb>\n"
    )
    # InnoDB reserves 1 MiB extents: write enough that one more or less is within the bound.
    per_object = _growth_per_object(write_config(section), data_dir, objects=8000)
    _assert_plausible(per_object)


def test_memory_storage_is_a_reason_not_a_number(write_config, data_dir):
    path = write_config("<zodb db>\n<mappingstorage/>\n</zodb>\n")
    with _database(path, data_dir) as (db, factory):
        reading = storage_size(db, factory)
    assert reading.size_bytes is None
    assert "in memory" in (reading.reason or "")


@pytest.mark.zeo
def test_a_zeo_server_started_elsewhere_is_a_reason_not_a_number(write_config, data_dir, tmp_path):
    import ZEO

    address, stop = ZEO.server(path=str(tmp_path / "server.fs"))
    try:
        path = write_config(
            f"<zodb db>\n<zeoclient>\nserver {address[0]}:{address[1]}\n</zeoclient>\n</zodb>\n"
        )
        with _database(path, data_dir) as (db, factory):
            reading = storage_size(db, factory)
    finally:
        stop()
    assert reading.size_bytes is None
    assert "not visible from the client" in (reading.reason or "")
