"""The writer: its cap and rotation, its flush, and how it stops on an error."""

import glob
import logging
import os
import shutil
import time

import pytest
import ZODB
from ZODB.MappingStorage import MappingStorage

from zodbshootout.recording import open_trace, record
from zodbshootout.recording.format import HEADER, MAX_TIME_NS, RECORD, Op
from zodbshootout.recording.writer import MIN_MAX_SIZE, TraceWriter

OID = (1).to_bytes(8, "big")


def entry(now, number):
    return (now, Op.LOAD << 48, 1, 1, OID, b"", number)


def files(prefix):
    return sorted(glob.glob(f"{prefix}.*.zodbtrace"))


def test_files_stay_under_the_cap_and_only_the_newest_are_kept(tmp_path):
    prefix = str(tmp_path / "t")
    writer = TraceWriter(prefix, max_size=MIN_MAX_SIZE, keep=2, flush_interval=60)
    per_file = (MIN_MAX_SIZE - HEADER.size) // RECORD.size
    now = time.monotonic_ns()
    for number in range(per_file * 3 + 10):  # four files: the first two are removed
        writer.append(entry(now, number))
    writer.close()
    names = files(prefix)
    assert [name.rsplit(".", 2)[-2] for name in names] == ["0002", "0003"]
    assert len(writer.files_written) == 4
    traces = [open_trace(name) for name in names]
    assert [t.header.sequence for t in traces] == [2, 3]
    assert all(os.path.getsize(name) <= MIN_MAX_SIZE for name in names)
    sizes = [r.size for t in traces for r in t.records()]
    assert sizes == list(range(per_file * 2, per_file * 3 + 10))  # in order, none lost


def test_a_file_whose_clock_would_pass_48_bits_is_rotated(tmp_path):
    prefix = str(tmp_path / "t")
    writer = TraceWriter(prefix, flush_interval=60)
    now = time.monotonic_ns()
    writer.append(entry(now, 1))
    writer.append(entry(now + MAX_TIME_NS + 1, 2))
    writer.close()
    first, second = (open_trace(name) for name in files(prefix))
    assert [r.size for r in first.records()] == [1]
    assert [(r.size, r.time_ns) for r in second.records()] == [(2, 0)]
    assert second.header.base_monotonic_ns - first.header.base_monotonic_ns == MAX_TIME_NS + 1


def test_flush_writes_what_is_queued_while_the_file_stays_open(tmp_path):
    prefix = str(tmp_path / "t")
    writer = TraceWriter(prefix, flush_interval=60)
    writer.append(entry(time.monotonic_ns(), 5))
    writer.flush()
    (name,) = files(prefix)
    assert [r.size for r in open_trace(name).records()] == [5]  # readable while written
    writer.close()


def test_an_error_stops_the_recording_with_one_line_and_the_application_goes_on(tmp_path, caplog):
    directory = tmp_path / "gone"
    directory.mkdir()
    storage = record(MappingStorage(), str(directory / "t"), flush_interval=0.01)
    shutil.rmtree(directory)  # the trace's file can't be made
    db = ZODB.DB(storage)
    with caplog.at_level(logging.ERROR, logger="zodbshootout.recording"):
        for number in range(20):
            with db.transaction() as conn:
                conn.root()["n"] = number
            time.sleep(0.005)
        storage.recording.flush()
    with db.transaction() as conn:
        assert conn.root()["n"] == 19
    db.close()
    lines = [r.getMessage() for r in caplog.records if r.name == "zodbshootout.recording"]
    assert len(lines) == 1, lines
    assert "recording stopped: No such file or directory" in lines[0]
    assert not storage.recording.active
    assert len(storage.recording._queue) == 0  # nothing more is queued


@pytest.mark.parametrize(
    ("options", "message"),
    [({"max_size": 1000}, "max-size must be at least"), ({"keep": 0}, "keep must be"),
     ({"flush_interval": 0}, "flush-interval must be positive")],
)  # fmt: skip
def test_absurd_settings_are_refused(tmp_path, options, message):
    with pytest.raises(ValueError, match=message):
        TraceWriter(str(tmp_path / "t"), **options)
