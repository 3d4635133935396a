"""Index entries on a real ZODB (MappingStorage, in this process): insert, move, check."""

from __future__ import annotations

import pytest
import transaction
import ZODB
from persistent.mapping import PersistentMapping
from ZODB.MappingStorage import MappingStorage

from zodbshootout.errors import DataMismatch
from zodbshootout.workload import indexes
from zodbshootout.workload.objects import ADDED, UPDATED


@pytest.fixture
def conn():
    db = ZODB.DB(MappingStorage())
    tm = transaction.TransactionManager()
    connection = db.open(transaction_manager=tm)
    connection.root()["zodbshootout"] = top = PersistentMapping()
    indexes.setup(top, concurrency=2, index_entries=2)
    tm.commit()
    yield connection
    tm.abort()
    connection.close()
    db.close()


def test_keys_per_object_counts_the_container_entry():
    assert indexes.keys_per_object(0) == 1
    assert indexes.keys_per_object(2) == 3


def test_derived_keys_differ_per_index_generation_and_object():
    added = indexes.derived_keys(worker=1, count=3, generation=ADDED, index_entries=2)
    updated = indexes.derived_keys(worker=1, count=3, generation=UPDATED, index_entries=2)
    assert len(added) == 3
    assert all(len(keys) == 2 for keys in added)
    every_key = {key for keys in added + updated for key in keys}
    assert len(every_key) == 12


def test_add_then_move_leaves_exactly_the_updated_entries(conn):
    added = indexes.derived_keys(0, 50, ADDED, 2)
    updated = indexes.derived_keys(0, 50, UPDATED, 2)
    indexes.add_entries(conn, 0, added)
    conn.transaction_manager.commit()
    indexes.check_entries(conn, 0, added)
    indexes.move_entries(conn, 0, added, updated)
    conn.transaction_manager.commit()
    indexes.check_entries(conn, 0, updated)
    with pytest.raises(DataMismatch, match="worker 0's index 0 holds 50 entries"):
        indexes.check_entries(conn, 0, added)
    # The other worker's indexes are its own, still empty.
    assert len(conn.root()["zodbshootout"]["indexes-1"][0]) == 0


def test_setup_without_entries_removes_old_indexes(conn):
    top = conn.root()["zodbshootout"]
    indexes.setup(top, concurrency=2, index_entries=0)
    assert not [key for key in top if str(key).startswith("indexes-")]
