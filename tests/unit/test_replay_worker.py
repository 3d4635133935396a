"""A replay in this process, on a MappingStorage: the dataset and the calls (no process).

The storage itself is the independent witness: the records it holds after
the dataset is written are as big as the plan says, and after the replay it
holds the objects the trace created, with the sizes the trace stored.
"""

import glob
import threading

import pytest
import ZODB
from test_replay_plan import app_records, rec, trace
from ZODB.MappingStorage import MappingStorage
from ZODB.utils import p64, u64

from zodbshootout.recording import open_trace, record
from zodbshootout.recording.format import Op
from zodbshootout.replay import plan as p
from zodbshootout.replay.dataset import build_dataset
from zodbshootout.replay.serials import write_table
from zodbshootout.replay.worker import ReplayTask, commit_slots, replay
from zodbshootout.workload.root import ForeignDataError


def replayed(tmp_path, records, workers=1, storage=None):
    plan = p.read_plan([trace(tmp_path, records)])
    db = ZODB.DB(MappingStorage() if storage is None else storage)
    built = build_dataset(db, plan.sizes)
    shares = p.assign(plan.streams, workers)
    entries = [[list(e) for e in p.worker_transactions(plan, share)] for share in shares]
    table = write_table(str(tmp_path), built["serials"], sum(map(commit_slots, entries)))
    reports = []
    first = 0
    for worker, share in enumerate(shares):
        task = ReplayTask(
            None, "m", (), worker, workers, len(share), entries[worker], built["oids"], table,
            first, None, 1.0, 10.0,
        )  # fmt: skip
        first += commit_slots(entries[worker])
        reports.append(replay(task, db._mvcc_storage, threading.Barrier(1)))
    return plan, db, built, reports


def stored_size(db, oid):
    instance = db._mvcc_storage.new_instance()
    try:
        instance.poll_invalidations()
        return len(instance.load(p64(oid))[0])
    finally:
        instance.release()


def test_the_dataset_holds_records_of_the_recorded_sizes(tmp_path):
    plan, db, built, _reports = replayed(tmp_path, app_records()[:3])
    assert plan.sizes == [300]
    assert built["written"] == 1
    # Before the replay: the dataset's object (the replay of a read changes nothing).
    assert stored_size(db, built["oids"][0]) == 300


def test_a_replay_issues_the_recorded_calls_and_leaves_what_was_stored(tmp_path):
    plan, db, built, reports = replayed(tmp_path, app_records())
    (report,) = reports
    assert report["issued"] == plan.recorded
    operations = report["operations"]
    assert operations[p.READ_ONLY]["count"] == 3
    assert operations[p.WRITE_MEDIUM]["count"] == 1
    # The recorded load of oid 7 failed (not there): it fails in the replay as recorded.
    assert all(not entry["failures"] for entry in operations.values())
    index = {5: 0, 9: 1}  # the oids' indexes, in the order the trace named them
    assert stored_size(db, built["oids"][index[5]]) == 5000
    assert stored_size(db, built["oids"][index[9]]) == 120


def test_two_workers_share_the_connections(tmp_path):
    plan, _db, _built, reports = replayed(tmp_path, app_records(), workers=2)
    issued = {key: sum(r["issued"][key] for r in reports) for key in plan.recorded}
    assert issued == plan.recorded


def write(t, conn, txn, oid, size, tid):
    """A recorded transaction of connection *conn* that writes *oid* (read or not before)."""
    return [
        rec(t, Op.POLL, conn=conn, txn=txn),
        rec(t + 10, Op.TPC_BEGIN, conn=conn, txn=txn),
        rec(t + 20, Op.STORE, conn=conn, txn=txn, o=oid, tid=3, size=size),
        rec(t + 30, Op.TPC_VOTE, conn=conn, txn=txn),
        rec(t + 40, Op.TPC_FINISH, conn=conn, txn=txn, tid=tid),
    ]


def test_a_poll_naming_a_change_costs_no_load_the_recording_did_not_make(tmp_path):
    """Connection 1 reads oid 5; connection 2 writes it; connection 1 writes it. In the
    replay connection 1's poll says oid 5 changed (the recording's did not: it made no
    load); it writes over the storage's serial, read by nobody, and commits."""
    records = [
        rec(0, Op.NEW_INSTANCE, conn=1, txn=0),
        rec(100, Op.POLL, conn=1, txn=1),
        rec(110, Op.LOAD, conn=1, txn=1, o=5, tid=3, size=300),
        rec(150, Op.NEW_INSTANCE, conn=2, txn=0),
        *write(200, conn=2, txn=1, oid=5, size=400, tid=8),
        *write(300, conn=1, txn=2, oid=5, size=500, tid=9),
    ]
    prefix = str(tmp_path / "witness")
    plan, db, built, (report,) = replayed(
        tmp_path, records, storage=record(MappingStorage(), prefix)
    )
    db.close()  # the trace written out
    # The storage's own record of the replay: loads and stores of the dataset's
    # object (the dataset stored it once, and loads only the root).
    found = [r for path in glob.glob(f"{prefix}.*.zodbtrace") for r in open_trace(path).records()]
    ours = [r.op for r in found if r.oid == built["oids"][0]]
    assert ours.count(Op.LOAD) + ours.count(Op.LOAD_BEFORE) == plan.recorded["loads"] == 1
    assert ours.count(Op.STORE) == 1 + plan.recorded["stores"]
    # A MappingStorage resolves no conflict: a stale serial would have raised.
    operations = report["operations"]
    assert all(not entry["conflicts"] and not entry["failures"] for entry in operations.values())
    assert operations[p.WRITE_SMALL]["count"] == 2


def test_workers_share_the_serials_the_storage_holds(tmp_path):
    """Two workers (one after the other here, as two processes may run) each write oid 5
    without reading it: the second writes over the first's commit, not the dataset's."""
    records = [
        rec(0, Op.NEW_INSTANCE, conn=1, txn=0),
        *write(100, conn=1, txn=1, oid=5, size=400, tid=8),
        rec(150, Op.NEW_INSTANCE, conn=2, txn=0),
        *write(200, conn=2, txn=1, oid=5, size=500, tid=9),
    ]
    _plan, db, built, reports = replayed(tmp_path, records, workers=2)
    assert stored_size(db, built["oids"][0]) == 500
    for report in reports:
        assert all(not entry["conflicts"] for entry in report["operations"].values())
        assert all(not entry["failures"] for entry in report["operations"].values())
    instance = db._mvcc_storage.new_instance()
    instance.poll_invalidations()
    assert u64(instance.load(p64(built["oids"][0]))[1]) > built["serials"][0]
    instance.release()


def test_a_database_with_foreign_data_is_refused(tmp_path):
    plan = p.read_plan([trace(tmp_path, app_records())])
    db = ZODB.DB(MappingStorage())
    with db.transaction() as conn:
        conn.root()["theirs"] = 1
    with pytest.raises(ForeignDataError):
        build_dataset(db, plan.sizes)
    with db.transaction() as conn:
        assert dict(conn.root()) == {"theirs": 1}


def test_a_worker_that_ended_early_keeps_the_others_intervals():
    from zodbshootout.replay.runner import _lined_up
    from zodbshootout.results.histogram import encode, new_histogram

    empty = encode(new_histogram())
    reports = [{"intervals": [[3, empty], [2, empty]]}, {"intervals": [[1, empty]]}]
    lined = _lined_up(reports)
    assert [len(r["intervals"]) for r in lined] == [2, 2]
    assert lined[1]["intervals"][1][0] == 0
