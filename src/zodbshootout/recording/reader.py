"""Read a trace file, refusing what is not one in one line.

A trace is read as far as it is valid: a file cut in the middle of a record
(the process was killed, or is still writing) yields its whole records and
says how many bytes it left (:attr:`Trace.partial_tail_bytes`).  Anything
else that is wrong — not a regular file, another file's magic, a version
this reader doesn't know, a record whose operation, flags or size can't be
— is a :class:`TraceError`, a ``UsageError`` whose message names the file
and the byte where it went wrong.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from zodbshootout.errors import UsageError
from zodbshootout.inputs import open_input
from zodbshootout.recording.format import (
    FORMAT_VERSION,
    HEADER,
    KNOWN_FLAGS,
    KNOWN_HEADER_FLAGS,
    MAGIC,
    MAX_SIZE,
    OPERATIONS,
    RECORD,
    Header,
    Op,
    Record,
)
from zodbshootout.recording.writer import SUFFIX

#: The largest trace file read (a file has a cap, 100 MB by default; 64 GiB
#: leaves room for any cap while refusing what is no trace).
MAX_TRACE_BYTES = 64 << 30
#: The longest class name a CLASS_NAME record may announce (the writer cuts at 4096).
MAX_CLASS_NAME_BYTES = 4096
#: Records read per chunk.
_CHUNK_RECORDS = 1 << 16


class TraceError(UsageError):
    """The file is not a trace this reader can read (one line: file, byte, what)."""


@dataclass
class Trace:
    """A trace file: its header, then its records by :meth:`records` (read once, in order)."""

    path: str
    header: Header
    #: Bytes of records in the file when it was opened (a multiple of 32).
    records_bytes: int
    #: Bytes after the last whole record: a write cut short (0 in a closed file).
    partial_tail_bytes: int
    #: Class numbers -> names, filled as the records are read.
    class_names: dict[int, str] = field(default_factory=dict)

    @property
    def record_count(self) -> int:
        """Records in the file, CLASS_NAME ones and their name's bytes included."""
        return self.records_bytes // RECORD.size

    def records(self) -> Iterator[Record]:
        """Every record but the class names' (they fill :attr:`class_names`), checked."""
        with open_input(self.path, "trace", MAX_TRACE_BYTES) as stream:
            stream.seek(HEADER.size)
            yield from _checked(self, stream)


class _Names:
    """The bytes of a class name that CLASS_NAME records announce, as they follow."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self.left = 0
        self.number = 0
        self.parts: list[bytes] = []

    def start(self, number: int, length: int, where: str) -> None:
        if not 0 < length <= MAX_CLASS_NAME_BYTES:
            raise TraceError(f"{where}: absurd class name length {length}")
        self.number, self.left, self.parts = number, length, []

    def take(self, data: bytes) -> None:
        self.parts.append(data[: self.left])
        self.left -= len(self.parts[-1])
        if not self.left:
            self.trace.class_names[self.number] = b"".join(self.parts).decode("utf-8", "replace")


def _made(fields: tuple[Any, ...], op: Op, flags: int) -> Record:
    """The Record of unpacked *fields*, whose operation and flags were checked."""
    first, connection, transaction, oid, tid, size = fields
    return Record(
        first & 0xFFFFFFFFFFFF,
        op,
        flags,
        connection,
        transaction,
        int.from_bytes(oid, "big"),
        int.from_bytes(tid, "big"),
        size,
    )


def _record(fields: tuple[Any, ...], offset: int, names: _Names) -> Record | None:
    """The record of unpacked *fields* at byte *offset*, checked; None for a CLASS_NAME
    (which starts a name)."""
    first, tid, size = fields[0], fields[4], fields[5]
    op = OPERATIONS.get((first >> 48) & 0xFF)
    flags = first >> 56
    if op is not None and not flags & ~KNOWN_FLAGS and size <= MAX_SIZE and op < Op.CLASS:
        return _made(fields, op, flags)
    where = f"{names.trace.path}: record at byte {offset}"
    if op is None:
        raise TraceError(f"{where}: unknown operation {(first >> 48) & 0xFF}")
    if flags & ~KNOWN_FLAGS:
        raise TraceError(f"{where}: unknown flags {flags:#x}")
    if size > MAX_SIZE:
        raise TraceError(f"{where}: absurd size {size} (more than 2 GiB)")
    if op is Op.CLASS_NAME:
        names.start(size, int.from_bytes(tid, "big"), where)
        return None
    if op is Op.CLASS and size not in names.trace.class_names:
        raise TraceError(f"{where}: class number {size} was never named")
    return _made(fields, op, flags)


def _checked(trace: Trace, stream: BinaryIO) -> Iterator[Record]:
    remaining = trace.records_bytes
    offset = HEADER.size
    names = _Names(trace)
    unpack = RECORD.unpack_from
    while remaining:
        data = stream.read(min(remaining, _CHUNK_RECORDS * RECORD.size))
        if len(data) < RECORD.size:
            raise TraceError(f"{trace.path}: the file shrank while it was read (byte {offset})")
        data = data[: len(data) - len(data) % RECORD.size]
        remaining -= len(data)
        for start in range(0, len(data), RECORD.size):
            if names.left:
                names.take(data[start : start + RECORD.size])
            else:
                record = _record(unpack(data, start), offset, names)
                if record is not None:
                    yield record
            offset += RECORD.size
    trace.partial_tail_bytes += names.left  # a name cut short counts as the tail


def open_trace(path: str) -> Trace:
    """*path*'s header, checked; its records are read by :meth:`Trace.records`."""
    with open_input(path, "trace", MAX_TRACE_BYTES) as stream:
        size = os.fstat(stream.fileno()).st_size
        data = stream.read(HEADER.size)
    if not data:
        raise TraceError(f"{path}: an empty file, not a zodbshootout trace")
    if len(data) < HEADER.size:
        if not MAGIC.startswith(data[: len(MAGIC)]):
            raise TraceError(f"{path}: not a zodbshootout trace (wrong magic)")
        raise TraceError(f"{path}: a trace cut short in its header ({len(data)} bytes)")
    magic, version, header_size, record_size, flags, pid, sequence, base, wall = HEADER.unpack(data)
    if magic != MAGIC:
        raise TraceError(f"{path}: not a zodbshootout trace (wrong magic)")
    if version != FORMAT_VERSION:
        raise TraceError(
            f"{path}: trace format version {version}; this zodbshootout reads "
            f"version {FORMAT_VERSION}"
        )
    if header_size != HEADER.size or record_size != RECORD.size:
        raise TraceError(
            f"{path}: absurd header ({header_size}-byte header, {record_size}-byte records; "
            f"version {FORMAT_VERSION} has {HEADER.size} and {RECORD.size})"
        )
    if flags & ~KNOWN_HEADER_FLAGS or pid == 0:
        raise TraceError(f"{path}: absurd header (flags {flags:#x}, pid {pid})")
    body = size - HEADER.size
    return Trace(
        path,
        Header(version, flags, pid, sequence, base, wall),
        records_bytes=body - body % RECORD.size,
        partial_tail_bytes=body % RECORD.size,
    )


def trace_paths(paths: list[str]) -> list[str]:
    """*paths*, each directory replaced by its ``*.zodbtrace`` files (sorted)."""
    found = []
    for path in paths:
        if os.path.isdir(path):
            names = sorted(n for n in os.listdir(path) if n.endswith(SUFFIX))
            if not names:
                raise TraceError(f"{path}: a directory without *{SUFFIX} files")
            found += [os.path.join(path, name) for name in names]
        else:
            found.append(path)
    return found
