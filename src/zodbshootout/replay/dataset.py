"""A replay's dataset: an object of the recorded size for each recorded oid, untimed.

Every recorded oid gets a new oid of the database (the recorded ones mean
nothing there; the root the application loaded is one of them, never the
database's own root).  An oid the recording found holding data becomes an
object of :class:`~zodbshootout.replay.objects.ReplayObject` as big as the
first record of it the trace saw, written in batches of commits; an oid the
recording created, or looked for in vain, is only reserved (``new_oid``),
so that the replay creates it, or looks for it in vain, as the recording
did.  The dataset is new for each replay: a replay changes it, and creates
objects in it.  Its objects are not reachable from the root (the replay
reaches them by oid, as the storage's callers do): a pack removes them.
"""

from __future__ import annotations

from typing import Any

from ZODB.Connection import TransactionMetaData
from ZODB.utils import p64, u64, z64

from zodbshootout.database.state import refuse_foreign_data
from zodbshootout.replay.objects import Records
from zodbshootout.workload.root import populate

#: Records written per commit while building the dataset, and their bytes at most.
BATCH_OBJECTS = 10_000
BATCH_BYTES = 64 << 20


def build_dataset(db: Any, sizes: list[int | None]) -> dict[str, Any]:
    """The guard, then the dataset of *sizes* (see the module doc), in the runner.

    Returns plain data: ``oids`` (each recorded oid index's oid here, as an
    integer), ``serials`` (the serial each object was written with; 0 for a
    reserved oid), ``written`` and ``bytes`` written, ``raised_bytes`` that
    records smaller than the smallest record grew by.
    """
    refuse_foreign_data(db)
    populate(db, 0)  # the tool's root key: the database is the tool's from now on
    instance = db._mvcc_storage.new_instance()  # the storage level, as the replay's
    try:
        instance.poll_invalidations()
        oids = [u64(instance.new_oid()) for _ in sizes]
        serials = [0] * len(sizes)
        records = Records()
        written = [index for index, size in enumerate(sizes) if size is not None]
        total = raised = 0
        for batch in _batches(written, sizes):
            txn = TransactionMetaData(description="zodbshootout replay dataset")
            instance.tpc_begin(txn)
            for index in batch:
                size = sizes[index]
                assert size is not None
                data = records.of_size(size)
                raised += len(data) - size
                total += len(data)
                instance.store(p64(oids[index]), z64, data, "", txn)
            instance.tpc_vote(txn)
            tid = instance.tpc_finish(txn)
            for index in batch:
                serials[index] = u64(tid)
        return {
            "oids": oids,
            "serials": serials,
            "written": len(written),
            "bytes": total,
            "raised_bytes": raised,
        }
    finally:
        instance.release()


def _batches(indexes: list[int], sizes: list[int | None]) -> list[list[int]]:
    batches: list[list[int]] = [[]]
    held = 0
    for index in indexes:
        size = sizes[index] or 0
        if batches[-1] and (len(batches[-1]) >= BATCH_OBJECTS or held + size > BATCH_BYTES):
            batches.append([])
            held = 0
        batches[-1].append(index)
        held += size
    return [batch for batch in batches if batch]
