"""The wrapper is the storage to ZODB: a database on it round-trips, and its trace holds
the calls that were made (ZODB's own storage checks: tests/integration/
test_recording_conformance.py)."""

import glob
import os

import transaction
import ZODB
import zope.interface
from persistent.mapping import PersistentMapping
from ZODB.FileStorage import FileStorage
from ZODB.interfaces import IBlobStorage, IMVCCStorage, IStorageIteration
from ZODB.MappingStorage import MappingStorage
from ZODB.tests import StorageTestBase

from zodbshootout.recording import open_trace, record
from zodbshootout.recording.format import FLAG_ERROR, Op
from zodbshootout.recording.stats import trace_stats


def traces(prefix):
    return [open_trace(p) for p in sorted(glob.glob(f"{prefix}.*.zodbtrace"))]


def records(prefix):
    return [r for t in traces(prefix) for r in t.records()]


def test_the_wrapper_provides_what_the_storage_provides(tmp_path):
    storage = record(FileStorage(str(tmp_path / "Data.fs"), blob_dir=str(tmp_path / "blobs")),
                     str(tmp_path / "t"))  # fmt: skip
    try:
        assert IMVCCStorage.providedBy(storage)
        assert IBlobStorage.providedBy(storage)
        assert IStorageIteration.providedBy(storage)
        instance = storage.new_instance()
        assert IBlobStorage.providedBy(instance)
        assert set(zope.interface.providedBy(storage._zst_inner)) <= set(
            zope.interface.providedBy(storage)
        )
        instance.release()
    finally:
        storage.close()


def test_a_database_round_trips_and_the_trace_counts_its_work(tmp_path):
    prefix = str(tmp_path / "app")
    db = ZODB.DB(record(FileStorage(str(tmp_path / "Data.fs")), prefix, class_names=True))
    with db.transaction() as conn:
        conn.root()["data"] = PersistentMapping({i: PersistentMapping({"v": i}) for i in range(20)})
    conn = db.open()
    conn.cacheMinimize()
    mapping = conn.root()["data"]
    assert [mapping[i]["v"] for i in range(20)] == list(range(20))
    mapping[3]["v"] = "changed"
    transaction.commit()
    loads = conn.getTransferCounts()[0]
    conn.close()
    db.close()
    db = ZODB.DB(FileStorage(str(tmp_path / "Data.fs")))  # the same data, unrecorded
    with db.transaction() as conn:
        assert conn.root()["data"][3]["v"] == "changed"
    db.close()

    found = records(prefix)
    ops = [r.op for r in found if not r.flags & FLAG_ERROR]
    # The connection loaded the root, the mapping and its 20 values (after cacheMinimize).
    assert loads == 22
    assert ops.count(Op.LOAD) >= loads
    # Commits: the root's creation, the data (root, mapping, 20 values), the change.
    assert ops.count(Op.TPC_FINISH) == 3
    assert ops.count(Op.STORE) == 1 + 22 + 1
    (trace,) = traces(prefix)
    stats = trace_stats([trace])
    assert stats.committed == 3
    assert stats.classes["persistent.mapping.PersistentMapping"] == ops.count(Op.STORE) + (
        ops.count(Op.LOAD)
    )
    assert trace.header.pid == os.getpid()


def test_each_connection_has_its_number_and_numbers_are_reused(tmp_path):
    prefix = str(tmp_path / "app")
    storage = record(MappingStorage(), prefix)
    first, second = storage.new_instance(), storage.new_instance()
    first.release()
    third = storage.new_instance()
    for instance in (second, third):
        instance.poll_invalidations()
        instance.release()
    storage.close()
    found = records(prefix)
    made = [(r.op, r.connection) for r in found if r.op in (Op.NEW_INSTANCE, Op.RELEASE)]
    assert made == [
        (Op.NEW_INSTANCE, 1), (Op.NEW_INSTANCE, 2), (Op.RELEASE, 1), (Op.NEW_INSTANCE, 1),
        (Op.RELEASE, 2), (Op.RELEASE, 1),
    ]  # fmt: skip
    assert [r.connection for r in found if r.op is Op.POLL] == [2, 1]


def test_historical_connections_are_recorded(tmp_path):
    prefix = str(tmp_path / "app")
    db = ZODB.DB(record(FileStorage(str(tmp_path / "Data.fs")), prefix))
    with db.transaction() as conn:
        conn.root()["x"] = 1
    before = db.lastTransaction()
    with db.transaction() as conn:
        conn.root()["x"] = 2
    old = db.open(at=before)
    assert old.root()["x"] == 1
    old.close()
    db.close()
    found = records(prefix)
    (made,) = [r for r in found if r.op is Op.BEFORE_INSTANCE]
    assert made.tid == int.from_bytes(before, "big") + 1  # at=tid is before=tid+1
    assert [r for r in found if r.connection == made.connection and r.op is Op.LOAD]


def test_storage_level_calls_are_connection_zero(tmp_path):
    prefix = str(tmp_path / "app")
    storage = record(MappingStorage(), prefix)
    StorageTestBase.StorageTestBase._dostore(type("T", (), {"_storage": storage})())
    storage.close()
    found = records(prefix)
    assert [r.op for r in found] == [
        Op.NEW_OID, Op.TPC_BEGIN, Op.STORE, Op.TPC_VOTE, Op.TPC_FINISH,
    ]  # fmt: skip
    assert {r.connection for r in found} == {0}
    assert len({r.transaction for r in found if r.op is not Op.NEW_OID}) == 1


def test_errors_of_the_storage_are_raised_unchanged_and_recorded(tmp_path):
    prefix = str(tmp_path / "app")
    storage = record(MappingStorage(), prefix)
    try:
        storage.load(b"\0" * 7 + b"\x09")
    except Exception as e:
        error = e
    storage.close()
    from ZODB.POSException import POSKeyError

    assert isinstance(error, POSKeyError)
    (load,) = records(prefix)
    assert load.op is Op.LOAD
    assert load.flags & FLAG_ERROR
    assert load.oid == 9


def test_a_call_whose_record_cant_be_packed_is_the_storage_s_own(tmp_path):
    """An oid of a type no storage takes: the storage's answer, unrecorded, never struct's."""
    import pytest
    import ZODB as zodb
    from ZODB.MappingStorage import MappingStorage as Mapping

    from zodbshootout.recording import record as recorded

    storage = recorded(Mapping(), str(tmp_path / "t"))
    db = zodb.DB(storage)
    instance = storage.new_instance()
    instance.poll_invalidations()
    with pytest.raises(KeyError):  # the storage's POSKeyError, not struct.error
        instance.load("not an oid")
    assert instance.load(b"\0" * 8)  # the recording goes on
    instance.release()
    db.close()
    assert storage.recording.stopped_because is None


def test_polls_record_the_calling_thread_and_number_the_transactions(tmp_path):
    """The thread's native id is looked up once per thread, not once per connection."""
    import threading

    prefix = str(tmp_path / "app")
    storage = record(MappingStorage(), prefix)
    instance = storage.new_instance()
    natives = []

    def poll_twice():
        natives.append(threading.get_native_id())
        instance.poll_invalidations()
        instance.poll_invalidations()

    poll_twice()
    thread = threading.Thread(target=poll_twice)
    thread.start()
    thread.join()
    poll_twice()
    instance.release()
    storage.close()
    polls = [r for r in records(prefix) if r.op is Op.POLL]
    assert [r.oid for r in polls] == [native for native in natives for _ in range(2)]
    assert [r.transaction for r in polls] == [1, 2, 3, 4, 5, 6]
    assert {r.connection for r in polls} == {1}


def test_a_load_with_more_arguments_passes_them_on(tmp_path):
    prefix = str(tmp_path / "app")
    storage = record(MappingStorage(), prefix)
    db = ZODB.DB(storage)  # it writes the root
    root = b"\0" * 8
    assert storage.load(root, "") == storage.load(root)  # IStorage's old version argument
    db.close()
    loads = [r for r in records(prefix) if r.op is Op.LOAD and r.connection == 0]
    assert len(loads) == 2
    assert loads[0] == loads[1]._replace(time_ns=loads[0].time_ns)
    assert loads[0].size > 0
