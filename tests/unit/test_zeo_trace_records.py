"""--cache-trace on ZEO: one load record per load a connection asked for (the hit-rate row's count).

ZEO 6.2 traces a connection's miss as 0x20 then 0x24 (``loadBefore`` calls
``load``), and its I/O thread looks the object up again before asking the
server; ``prefetch`` looks objects up there too.  The tracer keeps the
connection's record and lets the I/O thread's second look decide it.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from zodbshootout.cachesim.records import RECORD
from zodbshootout.storages.tracefile import TraceFile
from zodbshootout.storages.zeo.kind import _LoadTracer

OID = (5).to_bytes(8, "big")
OTHER = (6).to_bytes(8, "big")
TID = (9).to_bytes(8, "big")


@pytest.fixture
def traced(tmp_path):
    """(connection's trace, I/O thread's trace, records written) around a real tracer."""
    path = tmp_path / "zeo.trace"
    file = TraceFile(str(path), "zeo", 1 << 20)
    with ThreadPoolExecutor(max_workers=1) as io_thread:
        tracer = _LoadTracer(file, RECORD, io_thread.submit(threading.get_ident).result())

        def io(*args, **kwargs):
            io_thread.submit(tracer, *args, **kwargs).result()

        def written() -> list[tuple[int, bytes]]:
            file.close()
            data, records, offset = path.read_bytes(), [], 0
            while offset < len(data):
                _time, encoded, oid_length, _tid, _end = RECORD.unpack_from(data, offset)
                offset += RECORD.size
                records.append((encoded & 0xFF, data[offset : offset + oid_length]))
                offset += oid_length
            return records[1:]  # after the marker

        yield tracer, io, written


def test_a_miss_is_one_record_though_zeo_writes_four(traced):
    connection, io, written = traced
    connection(0x20, OID)  # load() inside loadBefore
    connection(0x24, OID, "", TID)  # loadBefore's own record of the same miss ("" tid)
    io(0x20, OID)  # load_before_co looks again: still a miss
    io(0x24, OID, "", TID)
    io(0x52, OID, TID, dlen=100)  # the server's answer, stored
    connection(0x22, OTHER, TID, dlen=100)  # the connection's next load: a hit
    assert written() == [(0x20, OID), (0x52, OID), (0x22, OTHER)]


def test_a_miss_answered_by_a_prefetch_meanwhile_is_a_hit_as_zeo_counts_it(traced):
    connection, io, written = traced
    io(0x52, OID, TID, dlen=100)  # a prefetch's answer arrives
    connection(0x20, OID)  # ... just after the connection looked
    connection(0x24, OID, "", TID)
    io(0x22, OID, TID, dlen=100)  # load_before_co finds it: ZEO counts a hit
    assert written() == [(0x52, OID), (0x22, OID)]


def test_prefetchs_lookups_in_the_io_thread_are_no_loads(traced):
    connection, io, written = traced
    io(0x20, OID)  # prefetch_co: is it cached?
    io(0x24, OID, "", TID)
    io(0x52, OID, TID, dlen=100)  # fetched and stored
    io(0x1C, OTHER, TID)  # invalidations are kept
    connection(0x22, OID, TID, dlen=100)
    assert written() == [(0x52, OID), (0x1C, OTHER), (0x22, OID)]


def test_a_miss_still_held_when_the_cache_closes_is_written(traced):
    connection, _io, written = traced
    connection(0x20, OID)
    assert written() == [(0x20, OID)]
