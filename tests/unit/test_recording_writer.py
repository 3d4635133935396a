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


def entry(writer, number, now=None):
    """A load's record as the wrapper packs it: its time from the writer's epoch."""
    epoch, _ = writer.sink
    now = time.monotonic_ns() if now is None else now
    return RECORD.pack((now - epoch) | (Op.LOAD << 48), 1, 1, OID, b"", number)


def files(prefix):
    return sorted(glob.glob(f"{prefix}.*.zodbtrace"))


def test_files_stay_under_the_cap_and_only_the_newest_are_kept(tmp_path):
    prefix = str(tmp_path / "t")
    writer = TraceWriter(prefix, max_size=MIN_MAX_SIZE, keep=2, flush_interval=60)
    per_file = (MIN_MAX_SIZE - HEADER.size) // RECORD.size
    for number in range(per_file * 3 + 10):  # four files: the first two are removed
        writer.append(entry(writer, number))
    writer.close()
    names = files(prefix)
    assert [name.rsplit(".", 2)[-2] for name in names] == ["0002", "0003"]
    assert len(writer.files_written) == 4
    traces = [open_trace(name) for name in names]
    assert [t.header.sequence for t in traces] == [2, 3]
    assert all(os.path.getsize(name) <= MIN_MAX_SIZE for name in names)
    sizes = [r.size for t in traces for r in t.records()]
    assert sizes == list(range(per_file * 2, per_file * 3 + 10))  # in order, none lost


def test_a_new_epoch_starts_a_new_file_whose_times_count_from_it(tmp_path):
    """(Every EPOCH_NS, 39 hours, so that no time passes a record's 48 bits; here at once.)"""
    prefix = str(tmp_path / "t")
    writer = TraceWriter(prefix, flush_interval=60)
    writer.epoch_ns = 0  # each drain starts a new epoch
    first_epoch = writer.epoch
    first_time = time.monotonic_ns()
    writer.append(entry(writer, 1, first_time))
    writer.flush()
    second_epoch = writer.epoch
    assert second_epoch > first_epoch
    second_time = time.monotonic_ns()
    writer.append(entry(writer, 2, second_time))
    writer.close()
    first, second = (open_trace(name) for name in files(prefix))
    assert (first.header.base_monotonic_ns, second.header.base_monotonic_ns) == (
        first_epoch,
        second_epoch,
    )
    [one] = first.records()
    [two] = second.records()
    assert (one.size, one.time_ns + first_epoch) == (1, first_time)
    assert (two.size, two.time_ns + second_epoch) == (2, second_time)
    assert MAX_TIME_NS > two.time_ns >= 0


def test_flush_writes_what_is_queued_while_the_file_stays_open(tmp_path):
    prefix = str(tmp_path / "t")
    writer = TraceWriter(prefix, flush_interval=60)
    writer.append(entry(writer, 5))
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


def test_a_call_that_read_the_sink_before_a_new_epoch_is_written_with_its_own(tmp_path):
    """A call that began before the epoch changed queues on the old sink when it returns:
    its record is written (after the change) into a file whose base is the old epoch."""
    prefix = str(tmp_path / "t")
    writer = TraceWriter(prefix, flush_interval=60)
    old_epoch, old_append = writer.sink  # the call begins
    began = time.monotonic_ns()
    writer.epoch_ns = 0
    writer.flush()  # a new epoch meanwhile
    writer.epoch_ns = 1 << 47
    assert writer.epoch > old_epoch
    writer.append(entry(writer, 2))  # another call, on the new sink
    writer.flush()
    old_append(RECORD.pack((began - old_epoch) | (Op.LOAD << 48), 1, 1, OID, b"", 1))
    writer.close()
    traces = [open_trace(name) for name in files(prefix)]
    by_size = {r.size: (t.header.base_monotonic_ns, r.time_ns) for t in traces for r in t.records()}
    assert by_size[1] == (old_epoch, began - old_epoch)
    assert by_size[2][0] > old_epoch  # the new epoch's file
