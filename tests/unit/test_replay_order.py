"""An ordered replay: polls placed among the commits as recorded, workers taking turns.

The plans are hand-made traces (test_replay_plan's helpers); the replays run
in this process on a MappingStorage, one thread per worker, so that the
storage's last state tells the order the commits were made in.
"""

import multiprocessing
import threading

import ZODB
from test_replay_plan import rec, trace
from ZODB.MappingStorage import MappingStorage
from ZODB.utils import p64

from zodbshootout.recording.format import Op
from zodbshootout.replay import plan as p
from zodbshootout.replay.dataset import build_dataset
from zodbshootout.replay.order import ordered_entries, sequence
from zodbshootout.replay.worker import ReplayTask, replay


def writes(conn, t, o, size, txn, saw=0):
    """A transaction of *conn* at *t*: a poll that said *saw* objects changed, a load of
    *o*, then a commit that writes it (*size* bytes), its tpc_finish at t + 40."""
    return [
        rec(t, Op.POLL, conn=conn, txn=txn, size=saw),
        rec(t + 10, Op.LOAD, conn=conn, txn=txn, o=o, tid=1, size=100),
        rec(t + 20, Op.TPC_BEGIN, conn=conn, txn=txn),
        rec(t + 25, Op.STORE, conn=conn, txn=txn, o=o, tid=1, size=size),
        rec(t + 30, Op.TPC_VOTE, conn=conn, txn=txn),
        rec(t + 40, Op.TPC_FINISH, conn=conn, txn=txn, tid=2),
    ]


def overlapping(saw):
    """Connection 1 commits oid 5 (tpc_finish at 140); connection 2's poll starts before
    that (at 130), and said *saw* objects changed: it saw the commit, or not."""
    return [
        rec(0, Op.NEW_INSTANCE, conn=1, txn=0),
        rec(1, Op.NEW_INSTANCE, conn=2, txn=0),
        *writes(1, 100, 5, 2000, 1),
        rec(130, Op.POLL, conn=2, txn=1, size=saw),
        rec(135, Op.LOAD, conn=2, txn=1, o=5, tid=1, size=100),
    ]


def test_a_poll_that_overlapped_a_commit_is_placed_by_what_it_returned(tmp_path):
    for saw, after_the_commit in ((1, True), (0, False)):
        plan = p.read_plan([trace(tmp_path, overlapping(saw))])
        places, unexplained = sequence(plan)
        assert unexplained == 0
        # The streams in start order: connection 1's, then 2's.
        assert (places[(1, 0, 0)] > places[(0, 0, 1)]) is after_the_commit


def test_a_poll_no_order_explains_is_placed_by_its_time(tmp_path):
    plan = p.read_plan([trace(tmp_path, overlapping(7))])
    places, unexplained = sequence(plan)
    assert unexplained == 1
    assert places[(1, 0, 0)] < places[(0, 0, 1)]


def interleaved():
    """Two connections whose transactions overlap: 1 starts, 2 starts and commits oid 6,
    then 1 commits oid 5; then 2 writes oid 5 after seeing 1's commit."""
    return [
        rec(0, Op.NEW_INSTANCE, conn=1, txn=0),
        rec(1, Op.NEW_INSTANCE, conn=2, txn=0),
        rec(100, Op.POLL, conn=1, txn=1),
        rec(110, Op.LOAD, conn=1, txn=1, o=5, tid=1, size=100),
        *writes(2, 150, 6, 300, 1),
        rec(300, Op.TPC_BEGIN, conn=1, txn=1),
        rec(305, Op.STORE, conn=1, txn=1, o=5, tid=1, size=1000),
        rec(310, Op.TPC_VOTE, conn=1, txn=1),
        rec(320, Op.TPC_FINISH, conn=1, txn=1, tid=3),
        *writes(2, 400, 5, 3000, 2, saw=1),
    ]


def codes(entry):
    return [call[0] for call in entry[3]]


def test_one_worker_replays_interleaved_connections_in_pieces_without_turns(tmp_path):
    plan = p.read_plan([trace(tmp_path, interleaved())])
    (entries,), _ = ordered_entries(plan, [[0, 1]])
    assert [(entry[1], entry[4]) for entry in entries] == [
        (0, p.HEAD),  # connection 1's start
        (1, p.WHOLE),  # connection 2's first transaction, whole
        (0, p.REST),  # connection 1's commit
        (1, p.WHOLE),
    ]
    assert not any(code in (p.TURN, p.PASS) for entry in entries for code in codes(entry))


def test_each_turn_handed_on_is_taken(tmp_path):
    plan = p.read_plan([trace(tmp_path, interleaved())])
    first, second = ordered_entries(plan, [[0], [1]])[0]
    passes = [call[1] for entries in (first, second) for e in entries for call in e[3]
              if call[0] == p.PASS]  # fmt: skip
    turns = [sum(codes(e).count(p.TURN) for e in entries) for entries in (first, second)]
    # Worker 0 starts; then 1's commit, 0's commit, 1's poll: three hand-overs.
    assert turns == [1, 2]
    assert sorted(passes) == [0, 1, 1]
    assert codes(first[0])[:2] == [p.POLL, p.PASS]  # the first event waits for nobody


def test_workers_replay_the_commits_in_the_recorded_order(tmp_path):
    """Two threads, each a connection: the storage ends with the last recorded write
    of oid 5, and no object was read again."""
    plan = p.read_plan([trace(tmp_path, interleaved())])
    db = ZODB.DB(MappingStorage())
    built = build_dataset(db, plan.sizes)
    shares = p.assign(plan.streams, 2)
    entries, _ = ordered_entries(plan, shares)
    turns = tuple(multiprocessing.Semaphore(0) for _ in shares)
    last_commit = multiprocessing.RawArray("c", 8)
    barrier = threading.Barrier(2)
    reports = [None, None]

    def work(worker):
        task = ReplayTask(
            None, "m", (), worker, 2, len(shares[worker]), entries[worker], built["oids"],
            built["serials"], None, 1.0, 10.0, turns, last_commit,
        )  # fmt: skip
        reports[worker] = replay(task, db._mvcc_storage, barrier)

    threads = [threading.Thread(target=work, args=(worker,)) for worker in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert all(report is not None for report in reports)
    assert [report["reloads"] for report in reports] == [0, 0]
    issued = {key: sum(r["issued"][key] for r in reports) for key in plan.recorded}
    assert issued == plan.recorded
    oids = dict(zip([5, 6], built["oids"], strict=False))
    instance = db._mvcc_storage.new_instance()
    instance.poll_invalidations()
    assert len(instance.load(p64(oids[5]))[0]) == 3000
    instance.release()
