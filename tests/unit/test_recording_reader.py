"""Hostile and damaged traces: one clear error, or what is valid and how much was left."""

import os

import pytest

from zodbshootout.errors import UsageError
from zodbshootout.recording.format import (
    FLAG_ERROR,
    FORMAT_VERSION,
    HEADER,
    MAGIC,
    RECORD,
    Header,
    Op,
    pack_header,
    pack_record,
)
from zodbshootout.recording.reader import TraceError, open_trace, trace_paths

OID = (7).to_bytes(8, "big")


def header(**changes):
    fields = {"version": FORMAT_VERSION, "flags": 0, "pid": 4242, "sequence": 0,
              "base_monotonic_ns": 10, "base_wall_ns": 1_700_000_000 * 10**9}  # fmt: skip
    fields.update(changes)
    return pack_header(Header(**fields))


def load(size=100, op=Op.LOAD, flags=0):
    return pack_record(1000, op, flags, 1, 1, OID, b"\x03" * 8, size)


def write(tmp_path, data, name="t.1.0000.zodbtrace"):
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def read_all(path):
    trace = open_trace(path)
    return trace, list(trace.records())


def test_a_valid_trace_reads_back(tmp_path):
    path = write(tmp_path, header() + load(100) + load(0, Op.LOAD, FLAG_ERROR))
    trace, records = read_all(path)
    assert trace.header.pid == 4242
    assert trace.partial_tail_bytes == 0
    assert [(r.op, r.size, r.oid, r.flags) for r in records] == [
        (Op.LOAD, 100, 7, 0), (Op.LOAD, 0, 7, FLAG_ERROR),
    ]  # fmt: skip


def test_a_cut_record_at_the_end_is_left_and_counted(tmp_path):
    path = write(tmp_path, header() + load() + load()[:13])
    trace, records = read_all(path)
    assert len(records) == 1
    assert trace.partial_tail_bytes == 13


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "an empty file"),
        (b"\x89PNG\r\n\x1a\n" + b"\0" * 100, "wrong magic"),
        (MAGIC + b"\x01", "cut short in its header"),
        (header(version=FORMAT_VERSION + 1), "trace format version 2; this zodbshootout reads"),
        (header(flags=0x80), "absurd header"),
        (header(pid=0), "absurd header"),
        (MAGIC + HEADER.pack(MAGIC, 1, 64, 16, 0, 1, 0, 0, 0)[8:], "16-byte records"),
    ],
)
def test_not_a_trace_is_one_line(tmp_path, data, message):
    path = write(tmp_path, data[: HEADER.size] if data.startswith(MAGIC * 2) else data)
    with pytest.raises(TraceError, match=message) as info:
        read_all(path)
    assert "\n" not in str(info.value)
    assert path in str(info.value)


@pytest.mark.parametrize(
    ("record", "message"),
    [
        (pack_record(1, 99, 0, 1, 1, OID, b"", 0), "record at byte 96: unknown operation 99"),
        (pack_record(1, Op.LOAD, 0x80, 1, 1, OID, b"", 0), "unknown flags 0x80"),
        (load(size=2**31 + 1), "absurd size 2147483649"),
        (pack_record(1, Op.CLASS, 0, 1, 1, OID, b"", 5), "class number 5 was never named"),
        (pack_record(1, Op.CLASS_NAME, 0, 1, 1, b"", (10**6).to_bytes(8, "big"), 1),
         "absurd class name length 1000000"),
    ],
)  # fmt: skip
def test_an_absurd_record_is_one_line_naming_its_byte(tmp_path, record, message):
    path = write(tmp_path, header() + load() + record + load())
    with pytest.raises(TraceError, match=message):
        read_all(path)


def test_class_names_are_read_across_records(tmp_path):
    name = b"some.module." + b"LongClassName" * 4  # 64 bytes: two records
    define = pack_record(1, Op.CLASS_NAME, 0, 1, 1, b"", len(name).to_bytes(8, "big"), 1)
    padded = name + b"\0" * (-len(name) % RECORD.size)
    data = header(flags=1) + define + padded + load() + pack_record(1, Op.CLASS, 0, 1, 1, OID,
                                                                    b"", 1)  # fmt: skip
    trace, records = read_all(write(tmp_path, data))
    assert [r.op for r in records] == [Op.LOAD, Op.CLASS]
    assert trace.class_names == {1: name.decode()}


def test_a_fifo_or_directory_is_refused(tmp_path):
    fifo = tmp_path / "fifo.zodbtrace"
    os.mkfifo(fifo)
    with pytest.raises(UsageError, match="it is a FIFO, not a regular file"):
        open_trace(str(fifo))
    (tmp_path / "empty").mkdir()
    with pytest.raises(TraceError, match=r"empty: a directory without \*\.zodbtrace files"):
        trace_paths([str(tmp_path / "empty")])
