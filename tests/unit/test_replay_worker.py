"""A replay in this process, on a MappingStorage: the dataset and the calls (no process).

The storage itself is the independent witness: the records it holds after
the dataset is written are as big as the plan says, and after the replay it
holds the objects the trace created, with the sizes the trace stored.
"""

import threading

import pytest
import ZODB
from test_replay_plan import app_records, trace
from ZODB.MappingStorage import MappingStorage
from ZODB.utils import p64

from zodbshootout.replay import plan as p
from zodbshootout.replay.dataset import build_dataset
from zodbshootout.replay.worker import ReplayTask, replay
from zodbshootout.workload.root import ForeignDataError


def replayed(tmp_path, records, workers=1):
    plan = p.read_plan([trace(tmp_path, records)])
    db = ZODB.DB(MappingStorage())
    built = build_dataset(db, plan.sizes)
    shares = p.assign(plan.streams, workers)
    reports = []
    for worker, share in enumerate(shares):
        entries = [list(e) for e in p.worker_transactions(plan, share)]
        task = ReplayTask(
            None, "m", (), worker, workers, len(share), entries, built["oids"],
            built["serials"], None, 1.0, 10.0,
        )  # fmt: skip
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
