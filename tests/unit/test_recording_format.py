"""The trace format: 32 bytes per call, a 64-byte header, every field round trips."""

import struct

from zodbshootout.recording.format import (
    FLAG_FIRST,
    FORMAT_VERSION,
    HEADER,
    MAX_TIME_NS,
    RECORD,
    Header,
    Op,
    pack_header,
    pack_record,
    unpack_record,
)


def test_a_record_is_32_bytes_and_the_header_64():
    assert RECORD.size == 32
    assert HEADER.size == 64
    assert len(pack_record(1, Op.LOAD, 0, 1, 1, b"\0" * 8, b"\0" * 8, 1)) == 32
    header = Header(FORMAT_VERSION, 0, 4242, 0, 1, 2)
    assert len(pack_header(header)) == 64


def test_every_field_round_trips_at_its_limits():
    oid = (2**64 - 1).to_bytes(8, "big")
    tid = b"\x03\xff\x00\x00\x00\x00\x00\x01"
    data = pack_record(MAX_TIME_NS, Op.PREFETCH, FLAG_FIRST, 0xFFFF, 0xFFFF, oid, tid, 2**32 - 1)
    assert unpack_record(data) == (
        MAX_TIME_NS, Op.PREFETCH, FLAG_FIRST, 0xFFFF, 0xFFFF, 2**64 - 1,
        int.from_bytes(tid, "big"), 2**32 - 1,
    )  # fmt: skip


def test_a_short_oid_is_padded_and_time_op_flags_share_the_first_field():
    data = pack_record(5, Op.NEW_OID, 0, 1, 2, b"", b"", 0)
    first = struct.unpack_from("<Q", data)[0]
    assert first == 5 | (Op.NEW_OID << 48)
    assert unpack_record(data)[5:7] == (0, 0)


def test_operation_numbers_are_stable():
    # Written in files: a renumbering would misread every older trace.
    assert [op.value for op in Op] == list(range(1, 20))
    assert Op.LOAD == 1
    assert Op.TPC_FINISH == 11
    assert Op.POLL == 13
    assert Op.CLASS_NAME == 19


def test_the_wrapper_s_layout_packs_the_same_bytes():
    from zodbshootout.recording.format import RECORD_BY_IDENT

    oid, tid = b"\1" * 8, b"\2" * 8
    first = 12345 | (Op.LOAD << 48)
    assert RECORD_BY_IDENT.pack(first, 0xFFFF | 0xABCD << 16, oid, tid, 7) == RECORD.pack(
        first, 0xFFFF, 0xABCD, oid, tid, 7
    )
