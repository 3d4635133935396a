"""trace-stats: what it counts in a trace, and its command line (exit codes, warnings)."""

from __future__ import annotations

import contextlib
import io

from zodbshootout.cli import entry as cli
from zodbshootout.recording.format import (
    FLAG_ERROR,
    FLAG_NONE,
    FORMAT_VERSION,
    Header,
    Op,
    pack_header,
    pack_record,
)
from zodbshootout.recording.reader import open_trace
from zodbshootout.recording.stats import format_stats, size_class, trace_stats


def oid(n):
    return n.to_bytes(8, "big")


def record(op, connection, transaction, size=0, flags=0, n=1, time_ns=1000):
    return pack_record(time_ns, op, flags, connection, transaction, oid(n), oid(5), size)


def write_trace(path, records, pid=7, sequence=0):
    header = Header(FORMAT_VERSION, 0, pid, sequence, 0, 1_700_000_000 * 10**9)
    path.write_bytes(pack_header(header) + b"".join(records))
    return str(path)


def two_transactions():
    return [
        record(Op.NEW_INSTANCE, 1, 0),
        record(Op.POLL, 1, 1, size=3),
        record(Op.LOAD, 1, 1, size=100),
        record(Op.LOAD, 1, 1, size=300, n=2),
        record(Op.LOAD, 1, 1, flags=FLAG_ERROR, n=3),
        record(Op.TPC_BEGIN, 1, 1),
        record(Op.STORE, 1, 1, size=120),
        record(Op.TPC_VOTE, 1, 1),
        record(Op.TPC_FINISH, 1, 1),
        record(Op.POLL, 1, 2, flags=FLAG_NONE),
        record(Op.LOAD, 1, 2, size=64, time_ns=2_000_000_000),
        record(Op.TPC_ABORT, 1, 2),
        record(Op.POLL, 1, 3),  # an empty transaction: not counted
        record(Op.RELEASE, 1, 3),
    ]


def test_size_classes_are_powers_of_two():
    assert [size_class(s) for s in (0, 1, 2, 3, 64, 65, 4096)] == [0, 1, 2, 4, 64, 128, 4096]


def test_the_counts_of_a_trace(tmp_path):
    stats = trace_stats([open_trace(write_trace(tmp_path / "a.zodbtrace", two_transactions()))])
    assert stats.calls[Op.LOAD] == 3
    assert stats.errors[Op.LOAD] == 1
    assert stats.transactions == 2
    assert (stats.committed, stats.aborted) == (1, 1)
    assert stats.loads_per_transaction == {2: 1, 1: 1}
    assert stats.stores_per_transaction == {1: 1, 0: 1}
    assert stats.load_sizes == {128: [1, 100], 512: [1, 300], 64: [1, 64]}
    assert (stats.invalidated_oids, stats.invalidate_all) == (3, 1)
    assert stats.seconds == 2.0 - 1e-6
    lines = format_stats(stats)
    assert lines[0].startswith("1 trace file(s) of 1 process(es), 14 records, 2.000 s")
    assert "transactions: 2 (1 committed, 1 aborted); polls returned 3 invalidated oids, " \
        "'invalidate everything' 1 times" in lines  # fmt: skip
    assert any(line.split() == ["load", "3", "1"] for line in lines)
    assert any(line.split() == ["257-512", "1", "300", "0", "0"] for line in lines)


def test_a_reused_connection_number_starts_a_new_transaction(tmp_path):
    records = [
        record(Op.NEW_INSTANCE, 1, 0),
        record(Op.LOAD, 1, 0, size=10),
        record(Op.RELEASE, 1, 0),
        record(Op.NEW_INSTANCE, 1, 0),
        record(Op.LOAD, 1, 0, size=10),
    ]
    stats = trace_stats([open_trace(write_trace(tmp_path / "a.zodbtrace", records))])
    assert stats.loads_per_transaction == {1: 2}


def run_main(*argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_trace_stats_reads_a_directory_and_warns_of_a_cut_record(tmp_path):
    write_trace(tmp_path / "app.7.0000.zodbtrace", two_transactions())
    write_trace(tmp_path / "app.8.0000.zodbtrace", two_transactions()[:4], pid=8)
    with open(tmp_path / "app.8.0000.zodbtrace", "ab") as f:
        f.write(b"\1" * 20)
    code, out, err = run_main("trace-stats", str(tmp_path))
    assert code == 0
    assert out.startswith("2 trace file(s) of 2 process(es), 18 records")
    assert err.strip() == (
        "zodbshootout trace-stats: warning: 20 bytes at the end of the traces are a record "
        "cut short (a process killed, or still writing): not counted"
    )
    code, out, err = run_main("trace-stats", "-q", str(tmp_path))
    assert (code, err) == (0, "")


def test_trace_stats_refuses_what_is_no_trace_in_one_line(tmp_path):
    (tmp_path / "x.zodbtrace").write_bytes(b"# a zeo cache trace?\n" * 5)
    code, out, err = run_main("trace-stats", str(tmp_path / "x.zodbtrace"))
    assert code == 2
    assert out == ""
    assert err == (
        f"zodbshootout trace-stats: error: {tmp_path}/x.zodbtrace: not a zodbshootout trace "
        "(wrong magic) nor a ZEO / RelStorage cache trace\n"
    )
