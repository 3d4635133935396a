"""The trace file format: a fixed header, then fixed-size records of 32 bytes.

A trace holds what a storage was asked and what it answered in sizes and
identities only, never an object's contents.  One process writes one file at
a time (its pid is in the header and the file name); a rotated file starts
with its own header, numbered by ``sequence``.

Header (:data:`HEADER`, 64 bytes, little-endian)::

    magic            8s  b"ZODBTRC\\n"
    version          H   FORMAT_VERSION
    header_size      H   64 (a later version may add fields after the first 64 bytes)
    record_size      H   32
    flags            H   HEADER_CLASS_NAMES: CLASS records follow loads and stores
    pid              I   the process that wrote the file
    sequence         I   0 for the first file of a process, +1 per rotation
    base_monotonic   Q   time.monotonic_ns() the records' times count from
    base_wall        Q   time.time_ns() at the same moment (to place the trace in time)
    reserved         24x zero

Record (:data:`RECORD`, 32 bytes, little-endian)::

    time             6s  ns since base_monotonic, unsigned 48 bits (78 hours; a file
                         that would outlive that is rotated first)
    op               B   an operation of :data:`OPERATIONS`
    flags            B   FLAG_* below
    connection       H   0: the storage itself; 1..65535: a per-connection instance
                         (new_instance), numbers reused after release
    transaction      H   the connection's transaction number, modulo 65536
    oid              8s  the object's oid as ZODB has it (8 bytes, big-endian; meaning
                         per operation, see Op)
    tid              8s  a transaction id as ZODB has it (meaning per operation)
    size             I   bytes or a count (meaning per operation)

History of FORMAT_VERSION: 1, the first.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import IntEnum
from typing import NamedTuple

MAGIC = b"ZODBTRC\n"
FORMAT_VERSION = 1

HEADER = struct.Struct("<8sHHHHIIQQ24x")
#: The record: its first field holds time (low 48 bits), op and flags (the
#: top two bytes), so that a record packs as one call.
RECORD = struct.Struct("<QHH8s8sI")
#: The same 32 bytes as the wrapper packs them: connection and transaction as
#: one little-endian field (``connection | transaction << 16``), one argument
#: fewer per record packed.
RECORD_BY_IDENT = struct.Struct("<QI8s8sI")
assert RECORD_BY_IDENT.size == RECORD.size

HEADER_CLASS_NAMES = 0x1
KNOWN_HEADER_FLAGS = HEADER_CLASS_NAMES

#: The call raised (the record says what was asked; size and tid are 0).
FLAG_ERROR = 0x1
#: The answer was "nothing" (loadBefore found no revision; poll said "invalidate all").
FLAG_NONE = 0x2
#: The first record of a prefetch call (the others follow, one per oid).
FLAG_FIRST = 0x4
KNOWN_FLAGS = FLAG_ERROR | FLAG_NONE | FLAG_FIRST

MAX_TIME_NS = (1 << 48) - 1
MAX_CONNECTIONS = 0xFFFF
#: A size above this (2 GiB) is not a ZODB record: the reader refuses it.
MAX_SIZE = 1 << 31


class Op(IntEnum):
    """The operations a record can be; what its oid, tid and size mean."""

    #: oid loaded (per-connection load), tid: the revision's serial, size: its bytes.
    LOAD = 1
    #: oid, tid: the serial found (with FLAG_NONE: the ``before`` asked), size: bytes.
    LOAD_BEFORE = 2
    #: oid, tid: the serial asked, size: bytes.
    LOAD_SERIAL = 3
    #: one record per oid asked; size: the call's number of oids.
    PREFETCH = 4
    #: oid, tid: the serial the writer read, size: the new record's bytes.
    STORE = 5
    #: as STORE, for an object with a blob (the blob's bytes are not counted).
    STORE_BLOB = 6
    #: oid, tid: the serial the transaction read (readCurrent).
    CHECK_CURRENT = 7
    #: oid: the new oid.
    NEW_OID = 8
    TPC_BEGIN = 9
    #: size: the number of oids the vote resolved (conflict resolution).
    TPC_VOTE = 10
    #: tid: the transaction's id.
    TPC_FINISH = 11
    TPC_ABORT = 12
    #: a transaction's start: oid: the calling thread's native id, size: the
    #: number of oids invalidated (FLAG_NONE: everything).
    POLL = 13
    #: reserved: sync() is not recorded (ZODB polls right after every sync it makes).
    SYNC = 14
    #: a connection's instance made (new_instance): oid: the thread's native id.
    NEW_INSTANCE = 15
    RELEASE = 16
    #: a historical instance (before_instance): tid: the ``before``.
    BEFORE_INSTANCE = 17
    #: with class-names on: follows the LOAD*/STORE* of oid; size: the class's
    #: number, defined by an earlier CLASS_NAME record.
    CLASS = 18
    #: size: the class's number; tid: the name's length in bytes; the name,
    #: UTF-8, follows in the next ceil(length / 32) records' bytes.
    CLASS_NAME = 19


OPERATIONS = {op.value: op for op in Op}


@dataclass(frozen=True)
class Header:
    version: int
    flags: int
    pid: int
    sequence: int
    base_monotonic_ns: int
    base_wall_ns: int

    @property
    def class_names(self) -> bool:
        return bool(self.flags & HEADER_CLASS_NAMES)


class Record(NamedTuple):
    """One record as read, oid and tid as integers."""

    time_ns: int
    op: Op
    flags: int
    connection: int
    transaction: int
    oid: int
    tid: int
    size: int


def pack_header(header: Header) -> bytes:
    return HEADER.pack(
        MAGIC,
        header.version,
        HEADER.size,
        RECORD.size,
        header.flags,
        header.pid,
        header.sequence,
        header.base_monotonic_ns,
        header.base_wall_ns,
    )


def pack_record(
    time_ns: int,
    op: int,
    flags: int,
    connection: int,
    transaction: int,
    oid: bytes,
    tid: bytes,
    size: int,
) -> bytes:
    """One record's 32 bytes (the writer packs the same layout in bulk)."""
    return RECORD.pack(
        time_ns | (op << 48) | (flags << 56), connection, transaction, oid, tid, size
    )


def unpack_record(data: bytes, offset: int = 0) -> tuple[int, int, int, int, int, int, int, int]:
    """(time_ns, op, flags, connection, transaction, oid, tid, size) of the record at *offset*,
    oid and tid as integers."""
    first, connection, transaction, oid, tid, size = RECORD.unpack_from(data, offset)
    return (
        first & MAX_TIME_NS,
        (first >> 48) & 0xFF,
        first >> 56,
        connection,
        transaction,
        int.from_bytes(oid, "big"),
        int.from_bytes(tid, "big"),
        size,
    )
