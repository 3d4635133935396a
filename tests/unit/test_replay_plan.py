"""A replay's plan: traces read into streams, transactions, kinds and a dataset (no process)."""

import pytest

from zodbshootout.errors import UsageError
from zodbshootout.recording.format import (
    FLAG_ERROR,
    FORMAT_VERSION,
    Header,
    Op,
    pack_header,
    pack_record,
)
from zodbshootout.recording.reader import open_trace
from zodbshootout.replay import plan as p
from zodbshootout.replay.objects import Records


def oid(n):
    return n.to_bytes(8, "big")


def trace(tmp_path, records, pid=4242, name=None):
    header = Header(FORMAT_VERSION, 0, pid, 0, 1_000, 1_700_000_000 * 10**9)
    data = pack_header(header) + b"".join(pack_record(*r) for r in records)
    path = tmp_path / (name or f"app.{pid}.0000.zodbtrace")
    path.write_bytes(data)
    return open_trace(str(path))


def rec(t, op, conn=1, txn=1, o=0, tid=0, size=0, flags=0):
    return (t, op, flags, conn, txn, oid(o), tid.to_bytes(8, "big"), size)


def app_records():
    """Connection 1 reads oid 5 and writes it and a new oid 9; connection 2 reads oid 9."""
    return [
        rec(0, Op.NEW_INSTANCE, conn=1, txn=0),
        rec(100, Op.POLL, txn=1),
        rec(110, Op.LOAD, txn=1, o=5, tid=3, size=300),
        rec(200, Op.POLL, txn=2),
        rec(210, Op.LOAD, txn=2, o=5, tid=3, size=300),
        rec(220, Op.NEW_OID, txn=2, o=9),
        rec(230, Op.TPC_BEGIN, txn=2),
        rec(240, Op.STORE, txn=2, o=5, tid=3, size=5000),
        rec(250, Op.STORE, txn=2, o=9, tid=0, size=120),
        rec(260, Op.TPC_VOTE, txn=2),
        rec(270, Op.TPC_FINISH, txn=2, tid=8),
        rec(300, Op.NEW_INSTANCE, conn=2, txn=0),
        rec(400, Op.POLL, conn=2, txn=1),
        rec(410, Op.LOAD, conn=2, txn=1, o=7, size=0, flags=FLAG_ERROR),
        rec(500, Op.POLL, conn=2, txn=2),
        rec(510, Op.LOAD, conn=2, txn=2, o=9, tid=8, size=120),
        rec(600, Op.RELEASE, conn=2, txn=2),
    ]


def test_streams_transactions_and_kinds(tmp_path):
    plan = p.read_plan([trace(tmp_path, app_records())])
    assert [s.name for s in plan.streams] == ["4242:1#1", "4242:2#1"]
    first, second = plan.streams
    assert [t.kind for t in first.transactions] == [p.READ_ONLY, p.WRITE_MEDIUM]
    assert [t.start_ns for t in first.transactions] == [0, 100]
    assert [t.start_ns for t in second.transactions] == [300, 400]
    assert plan.span_ns == 400
    assert plan.recorded["loads"] == 4
    assert plan.recorded["stores"] == 2
    assert plan.recorded["commits"] == 1
    assert plan.recorded["polls"] == 4


def test_the_dataset_holds_what_the_recording_found(tmp_path):
    plan = p.read_plan([trace(tmp_path, app_records())])
    sizes = dict(zip([5, 9, 7], plan.sizes, strict=True))
    # 5 existed (its first record: 300 bytes); 9 was created but another
    # connection reads it: in the dataset from the start, its creation a store;
    # 7 was looked for in vain: reserved, so the replay's load fails as recorded.
    assert sizes == {5: 300, 9: 120, 7: None}
    codes = [c[0] for c in plan.streams[0].transactions[1].calls]
    assert p.CREATE not in codes


def test_a_creation_only_its_connection_uses_stays_a_creation(tmp_path):
    records = app_records()[:11]  # connection 1 only
    plan = p.read_plan([trace(tmp_path, records)])
    assert plan.sizes == [300, None]
    codes = [c[0] for c in plan.streams[0].transactions[1].calls]
    assert codes.count(p.CREATE) == 1


def test_a_commit_out_of_order_is_skipped_and_an_unended_one_aborted(tmp_path):
    records = [
        rec(0, Op.POLL, txn=1),
        rec(10, Op.STORE, txn=1, o=1, tid=2, size=10),  # no tpc_begin: rotated away
        rec(20, Op.TPC_FINISH, txn=1),
        rec(30, Op.POLL, txn=2),
        rec(40, Op.TPC_BEGIN, txn=2),
        rec(50, Op.STORE, txn=2, o=1, tid=2, size=10),  # the file ends here
    ]
    plan = p.read_plan([trace(tmp_path, records)])
    (stream,) = plan.streams
    assert len(stream.transactions) == 1
    assert stream.transactions[0].calls[-1][0] == p.ABORT
    assert plan.notes == {
        "transactions skipped: their two-phase commit is out of order": 1,
        "calls skipped with them": 3,
        "transactions whose commit the trace never ended: aborted": 1,
    }


def test_calls_it_cannot_replay_as_recorded_are_said(tmp_path):
    records = [
        rec(0, Op.POLL, txn=1),
        rec(10, Op.LOAD_BEFORE, txn=1, o=1, tid=2, size=10),
        rec(20, Op.LOAD_SERIAL, txn=1, o=1, tid=2, size=10),
    ]
    plan = p.read_plan([trace(tmp_path, records)])
    assert plan.recorded["loads"] == 2
    assert len(plan.notes) == 2


def test_any_oid_is_mapped_even_the_largest(tmp_path):
    records = [rec(0, Op.POLL, txn=1), rec(10, Op.LOAD, txn=1, o=2**64 - 1, tid=2, size=10)]
    plan = p.read_plan([trace(tmp_path, records)])
    assert plan.sizes == [10]


def test_an_absurd_record_size_is_one_line(tmp_path):
    records = [rec(0, Op.POLL, txn=1), rec(10, Op.LOAD, txn=1, o=1, tid=2, size=2**30)]
    with pytest.raises(UsageError, match="absurd record size 1073741824 bytes"):
        p.read_plan([trace(tmp_path, records)])


def test_a_trace_without_transactions_is_refused(tmp_path):
    with pytest.raises(UsageError, match="no transaction to replay"):
        p.read_plan([trace(tmp_path, [rec(0, Op.NEW_INSTANCE, txn=0)])])


def test_streams_are_shared_busiest_first():
    streams = [
        p.Stream(str(i), [p.Transaction(0, [(p.POLL, 0, 0, False)] * n)])
        for i, n in enumerate([5, 1, 4, 2])
    ]
    assert p.assign(streams, 4) == [[0], [1], [2], [3]]
    assert p.assign(streams, 2) == [[0, 1], [2, 3]]


def test_records_are_as_big_as_recorded():
    records = Records()
    for size in (records.smallest, 100, 255, 300, 4096, 100_000):
        assert len(records.of_size(size)) == size
    # Below the smallest record, the smallest; near 256, at most 3 bytes more.
    assert len(records.of_size(1)) == records.smallest
    assert all(0 <= len(records.of_size(n)) - n <= 3 for n in range(records.smallest, 600))
