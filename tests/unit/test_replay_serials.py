"""The workers' table of serials: tokens, slots, and the revision a connection's view holds.

A real storage gives the view (a MappingStorage's ``lastTransaction()``);
the table is the file a replay's workers map.
"""

import threading

import pytest
import ZODB
from ZODB.MappingStorage import MappingStorage
from ZODB.utils import p64, u64

from zodbshootout.replay.serials import (
    FAILED,
    Slots,
    first_entries,
    open_table,
    token,
    write_table,
)


@pytest.fixture
def viewed():
    """A storage instance whose view is one commit: (instance, that tid)."""
    db = ZODB.DB(MappingStorage())
    instance = db._mvcc_storage.new_instance()
    instance.poll_invalidations()
    yield instance, instance.lastTransaction()
    instance.release()
    db.close()


def table_of(tmp_path, serials, slots):
    return open_table(write_table(str(tmp_path), serials, slots))


def test_a_dataset_serial_until_a_commit_names_its_slot(tmp_path, viewed):
    instance, view = viewed
    dataset = u64(view) - 10
    table = table_of(tmp_path, [dataset, dataset], 2)
    assert first_entries(table, 2) == p64(dataset) * 2
    writer = Slots(table, 2, 0)
    held = writer.mark([1])
    assert held == [p64(dataset) * 4]
    assert first_entries(table, 2) == p64(dataset) + token(0)
    writer.publish(p64(u64(view) - 5))
    reader = Slots(table, 2, 1)
    assert reader.serial(1, instance) == p64(u64(view) - 5)
    assert reader.serial(0, instance) == p64(dataset)
    assert reader.waits == 0


def test_a_commit_newer_than_the_view_is_not_the_revision_it_sees(tmp_path, viewed):
    instance, view = viewed
    table = table_of(tmp_path, [u64(view) - 10], 2)
    writer = Slots(table, 1, 0)
    writer.mark([0])
    writer.publish(p64(u64(view) - 5))  # seen
    writer.mark([0])
    writer.publish(p64(u64(view) + 5))  # after the view: not seen
    assert Slots(table, 1, 2).serial(0, instance) == p64(u64(view) - 5)


def test_a_failed_commit_puts_the_entries_back_and_is_skipped(tmp_path, viewed):
    instance, view = viewed
    table = table_of(tmp_path, [u64(view) - 10], 2)
    writer = Slots(table, 1, 0)
    held = writer.mark([0])
    stale = table[:8]  # what a reader took while the commit finished
    writer.failed([0], held)
    assert table[:32] == held[0]
    assert writer._slot(stale) == FAILED
    assert Slots(table, 1, 1).serial(0, instance) == p64(u64(view) - 10)


def test_a_commit_still_finishing_is_waited_for(tmp_path, viewed):
    instance, view = viewed
    table = table_of(tmp_path, [u64(view) - 10], 1)
    writer = Slots(table, 1, 0)
    writer.mark([0])
    reader = Slots(table, 1, 1)
    found = []
    thread = threading.Thread(target=lambda: found.append(reader.serial(0, instance)))
    thread.start()
    thread.join(0.2)
    assert thread.is_alive()  # the slot is empty: it waits
    assert not found
    writer.publish(p64(u64(view) - 1))
    thread.join(10)
    assert found == [p64(u64(view) - 1)]
    assert reader.waits == 1
