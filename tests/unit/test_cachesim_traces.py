"""cachesim's one adapter: ZEO's binary traces and SPC text (plain, gzip, bzip2) into accesses.

Every input is bounded: only regular files, a decompressed size, a line length.
"""

from __future__ import annotations

import bz2
import gzip
import os
import time

import pytest

from zodbshootout.cachesim import records
from zodbshootout.cachesim.records import INVALIDATE, READ, RECORD, WRITE, Access, read_trace
from zodbshootout.errors import UsageError

SPC = "0,20941264,8192,W,0.551706\n0,20939840,8192,r,0.554041\n1,20941264,512,R,0.557\n"
EXPECTED = [
    Access(WRITE, 20941264, 8192),
    Access(READ, 20939840, 8192),
    Access(READ, 20941264, 512),
]


@pytest.mark.parametrize(
    ("name", "compress"),
    [("t.spc", bytes), ("t.spc.gz", gzip.compress), ("t.spc.bz2", bz2.compress)],
)
def test_spc_lines_become_accesses_plain_or_compressed(tmp_path, name, compress):
    path = tmp_path / name
    path.write_bytes(compress(SPC.encode()))
    trace = read_trace(str(path))
    assert trace.format == "spc"
    assert trace.accesses == EXPECTED
    assert trace.traced is None


def _zeo_record(code: int, oid: int, dlen: int = 0) -> bytes:
    oid_bytes = oid.to_bytes(8, "big")
    return RECORD.pack(1700000000, (dlen << 8) | code, 8, bytes(8), bytes(8)) + oid_bytes


def test_a_zeo_trace_gives_reads_fills_writes_and_the_traced_caches_counts(tmp_path):
    path = tmp_path / "db.trace"
    path.write_bytes(
        records.marker_record(1700000000, kind="zeo", cache_size_bytes=1 << 20)
        + _zeo_record(0x20, 7)  # miss, outside a phase
        + _zeo_record(0x52, 7, 100)  # its fill: the read gets the size
        + records.marker_record(1700000000, phase="hot")
        + _zeo_record(0x22, 7, 100)  # hit
        + _zeo_record(0x20, 8)  # miss, never filled: the size is unknown
        + records.marker_record(1700000000, phase=None)
        + _zeo_record(0x52, 9, 50)  # a store after no miss: a write (a commit)
        + _zeo_record(0x1C, 9)  # invalidation
    )
    trace = read_trace(str(path))
    assert trace.format == "zeo"
    assert trace.accesses == [
        Access(READ, 7, 100),
        Access(READ, 7, 100),
        Access(READ, 8, 0),
        Access(WRITE, 9, 50),
        Access(INVALIDATE, 9, 0),
    ]
    traced = trace.traced
    assert traced is not None
    assert (traced.kind, traced.cache_size_bytes) == ("zeo", 1 << 20)
    # Marked phases: only their loads count, as the run's hit-rate row counts.
    assert (traced.loads, traced.hits) == (2, 1)
    assert traced.phases == {"hot": (2, 1)}


def test_a_zeo_trace_without_the_tools_markers_counts_every_load(tmp_path):
    path = tmp_path / "old.trace"
    start = RECORD.pack(1700000000, 0, 0, bytes(8), bytes(8))
    path.write_bytes(
        start + _zeo_record(0x20, 1) + _zeo_record(0x52, 1, 10) + _zeo_record(0x22, 1, 10)
    )
    traced = read_trace(str(path)).traced
    assert traced is not None
    assert (traced.loads, traced.hits, traced.kind) == (2, 1, None)


def test_a_damaged_zeo_record_is_one_line(tmp_path):
    path = tmp_path / "bad.trace"
    path.write_bytes(records.marker_record(1700000000, kind="zeo") + bytes(range(256)) * 4)
    with pytest.raises(UsageError, match=r"bad\.trace: record 2 is damaged .*not a readable ZEO"):
        read_trace(str(path))


def test_a_file_that_is_no_trace_says_both_formats(tmp_path):
    path = tmp_path / "x.trace"
    path.write_text("<zodb x>\n</zodb>\n")
    with pytest.raises(UsageError, match=r"neither a ZEO cache trace .* nor an SPC trace"):
        read_trace(str(path))


def test_an_spc_line_that_is_wrong_names_its_number(tmp_path):
    path = tmp_path / "t.spc"
    path.write_text(SPC + "0,1,2,x,3\n")
    with pytest.raises(UsageError, match=r"t\.spc:4: opcode is r or w"):
        read_trace(str(path))


def test_a_gzip_bomb_of_zeros_is_refused_at_once(tmp_path):
    path = tmp_path / "bomb.spc.gz"
    with gzip.open(path, "wb", compresslevel=9) as file:
        for _ in range(64):
            file.write(bytes(1 << 20))  # 64 MiB of zeros, 64 KiB compressed
    assert os.path.getsize(path) < 1 << 20
    with pytest.raises(UsageError, match="neither a ZEO cache trace"):
        read_trace(str(path))


def test_a_long_line_is_refused_without_reading_it_whole(tmp_path):
    path = tmp_path / "long.spc.gz"
    path.write_bytes(gzip.compress(b"0,1,2,r,3\n" + b"1," * (1 << 20)))
    with pytest.raises(UsageError, match="a line longer than 4096 bytes is no SPC line"):
        read_trace(str(path))


def test_decompression_stops_at_the_bound(tmp_path):
    path = tmp_path / "big.spc.bz2"
    path.write_bytes(bz2.compress(SPC.encode() * 2000))  # about 150 KB of good lines
    with pytest.raises(UsageError, match=r"decompresses to more than 64 KiB .*--max-trace-size"):
        read_trace(str(path), max_bytes=1 << 16)
    assert len(read_trace(str(path), max_bytes=1 << 20).accesses) == 6000


def test_a_fifo_is_refused_without_opening_it_for_a_blocking_read(tmp_path):
    fifo = tmp_path / "x.trace"
    os.mkfifo(fifo)
    with pytest.raises(UsageError, match="it is a FIFO, not a regular file"):
        read_trace(str(fifo))


@pytest.mark.parametrize(
    ("name", "damage"),
    [
        ("cut.spc.gz", lambda data: gzip.compress(data)[:40]),
        ("cut.spc.bz2", lambda data: bz2.compress(data)[:40]),
        ("junk.spc.gz", lambda data: b"\x1f\x8b" + bytes(range(200))),
        ("junk.spc.bz2", lambda data: b"BZh9" + bytes(range(200))),
    ],
)
def test_a_damaged_compressed_trace_is_one_line(tmp_path, name, damage):
    path = tmp_path / name
    path.write_bytes(damage((SPC * 50).encode()))
    with pytest.raises(UsageError, match=rf"{name} is not a readable trace: its (gzip|bzip2) data"):
        read_trace(str(path))


def test_a_plain_trace_over_the_bound_is_refused_before_reading(tmp_path):
    path = tmp_path / "big.spc"
    path.write_text(SPC * 2000)
    with pytest.raises(UsageError, match=r"big\.spc: it is 1\d\d KiB, more than 64 KiB"):
        read_trace(str(path), max_bytes=1 << 16)


def test_a_gzip_bomb_of_valid_lines_stops_at_the_default_bound(tmp_path):
    """Valid SPC records that decompress past the default bound: refused at once, not replayed."""
    line = b"0,20941264,8192,r,0.551706\n"
    member = gzip.compress(line * ((1 << 20) // len(line)), compresslevel=9)
    path = tmp_path / "bomb.spc.gz"
    # gzip members one after the other are one stream: 136 MiB of good lines.
    path.write_bytes(member * ((records.DEFAULT_MAX_BYTES >> 20) + 8))
    assert os.path.getsize(path) < records.DEFAULT_MAX_BYTES // 100
    started = time.perf_counter()
    with pytest.raises(UsageError, match="decompresses to more than 128 MiB"):
        read_trace(str(path))
    parse_one_mib = time.perf_counter()
    read_trace_of(path, 1 << 20)
    # Refused before parsing: in less time than parsing a fifth of it would take.
    assert parse_one_mib - started < (time.perf_counter() - parse_one_mib) * 128 / 5


def read_trace_of(path, size: int) -> None:
    """Parse the first *size* decompressed bytes of *path* (the yardstick of the test above)."""
    head = path.parent / "head.spc"
    with gzip.open(path, "rb") as file:
        head.write_bytes(file.read(size).rsplit(b"\n", 1)[0] + b"\n")
    read_trace(str(head))


@pytest.mark.parametrize(
    ("line", "says"),
    [
        (f"0,1,{10**30},r,0.1", "the size is a byte count from 0 to"),
        (f"0,{-(10**30)},4096,r,0.1", r"the LBA \(block number\) is from 0 to 2\*\*63"),
        (f"0,{2**63},4096,r,0.1", "the LBA"),
        ("0,1,-5,r,0.1", "the size is a byte count"),
        (f"{-1},1,4096,w,0.1", "the ASU"),
        ("0,1,4096,r,nan", "the timestamp is a number of seconds"),
        ("0,1,4096,r,-1", "the timestamp"),
        ("0,1,4096,r,1e400", "the timestamp"),
        ("0,1,4096,r", "not an SPC line"),
        ("0,1,4096,r,0.1,7", "6 fields, not the 5"),
    ],
)
def test_every_spc_field_is_range_checked_and_the_line_named(tmp_path, line, says):
    path = tmp_path / "t.spc"
    path.write_text(SPC + line + "\n")
    with pytest.raises(UsageError, match=rf"t\.spc:4: {says}"):
        read_trace(str(path))


def _raw_record(code: int, oid: bytes, tid: int = 0, dlen: int = 0) -> bytes:
    return (
        RECORD.pack(1700000000, (dlen << 8) | code, len(oid), tid.to_bytes(8, "big"), bytes(8))
        + oid
    )


@pytest.mark.parametrize(
    ("record", "says"),
    [
        (_raw_record(0x22, b"\xff" * 8, 5, 10), "oid 0xffffffffffffffff is 2\\*\\*63 or more"),
        (_raw_record(0x22, bytes(8), 1 << 63, 10), "tid 0x8000000000000000 is 2\\*\\*63"),
        (_raw_record(0x30, bytes(8)), "code 0x30 is no trace code"),
        (_raw_record(0x22, bytes(5)), "an oid of 5 bytes"),
    ],
)
def test_every_zeo_field_is_range_checked_and_the_record_named(tmp_path, record, says):
    path = tmp_path / "t.trace"
    good = _raw_record(0x22, bytes(8), 5, 10)
    path.write_bytes(records.marker_record(1700000000, kind="zeo") + good + record)
    with pytest.raises(UsageError, match=rf"t\.trace: record 3 is damaged \({says}"):
        read_trace(str(path))


@pytest.mark.parametrize(
    "fields",
    [
        {"kind": "x\x1b[2J"},
        {"cache_size_bytes": 10**400},
        {"cache_size_bytes": -1},
        {"cache_size_bytes": True},
        {"phase": "\x1b]0;x\x07"},
    ],
)
def test_the_markers_fields_are_range_checked(tmp_path, fields):
    path = tmp_path / "t.trace"
    payload = records.marker_record(1700000000, **fields) + _raw_record(0x22, bytes(8), 5, 10)
    path.write_bytes(records.marker_record(1700000000, kind="zeo") + payload)
    with pytest.raises(UsageError, match=r"t\.trace: the trace's marker"):
        read_trace(str(path))
