"""cachesim's one adapter: ZEO's binary traces and SPC text (plain, gzip, bzip2) into accesses.

Every input is bounded: only regular files, a decompressed size, a line length.
"""

from __future__ import annotations

import bz2
import gzip
import os

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
    with pytest.raises(UsageError, match="is not a readable ZEO cache trace"):
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


def test_decompression_stops_at_the_bound(tmp_path, monkeypatch):
    monkeypatch.setattr(records, "MAX_DECOMPRESSED_BYTES", 1 << 16)
    path = tmp_path / "big.spc.bz2"
    path.write_bytes(bz2.compress(SPC.encode() * 2000))  # about 150 KB of good lines
    with pytest.raises(UsageError, match="decompresses to more than"):
        read_trace(str(path))


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
