"""One adapter for every trace format: a trace file in, cache accesses out.

Two formats are read, each into the same :class:`Access` records:

- **ZEO's cache trace** (``--cache-trace``; ZEO's ``ClientCache`` and
  RelStorage's ``ZEOTracer`` write it): 26-byte records (``>iiH8s8s``:
  time, ``dlen << 8 | code``, oid length, tid, end tid) each followed by its
  oid.  A load (codes 0x20-0x26) is a read; a store (0x50-0x5e) that fills
  the cache after the same oid's miss is part of that read, any other
  store is a write (a commit, or prefetch filling the cache); an
  invalidation (0x10-0x1e) drops the object.  The trace's own hits
  (0x22, 0x26) are the *actual* counts: of the loads inside the timed
  phases when the trace marks them (as the run's hit-rate row counts),
  of all loads otherwise.
- **The UMass storage traces (SPC)**: text lines
  ``asu,lba,size,opcode,timestamp``, plain or ``.gz``/``.bz2``, as
  RelStorage's cache notes used them.  ``r`` is a read, ``w`` a write of
  block ``lba`` (the ASU, application storage unit, is not part of the key,
  as in RelStorage's own simulator).

The tool's traces start with a record of its own (code 0x00, which ZEO's
scripts read as a restart): its oid field holds ``zodbshootout:`` and a
JSON object naming the storage kind and its cache size in bytes.  Records
of the same kind mark where each timed phase starts (``{"phase": NAME}``)
and ends (``{"phase": null}``).

Every input is bounded: a regular file of at most :data:`MAX_TRACE_BYTES`
on disk (compressed), at most *max_bytes* of trace once decompressed
(:data:`DEFAULT_MAX_BYTES` unless ``--max-trace-size`` says otherwise: a
replay keeps every access in memory and costs seconds per million of them
and per policy and size), lines of at most :data:`MAX_LINE_BYTES`.  Every
field of every record is range-checked, so that a value no cache could hold
(an SPC size of 10^30, a negative block number) is a one-line error naming
its line or record, never an overflow inside a policy.
"""

from __future__ import annotations

import bz2
import gzip
import io
import itertools
import json
import math
import os
import re
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import BinaryIO, NamedTuple

from zodbshootout.errors import UsageError
from zodbshootout.inputs import format_size, open_input

READ, WRITE, INVALIDATE = "r", "w", "i"

#: The largest compressed trace file read from disk.
MAX_TRACE_BYTES = 4 << 30
#: The most trace read (a plain file's size, a compressed one's decompressed
#: size) unless --max-trace-size raises it: about 3 million SPC lines, a few
#: minutes of replay through the default policies and sizes.
DEFAULT_MAX_BYTES = 128 << 20
#: The highest --max-trace-size.
MAX_MAX_BYTES = 64 << 30
#: An SPC line is about 40 bytes; a longer one is no SPC line.
MAX_LINE_BYTES = 4096

#: ZEO's trace record (ZEO.cache.ClientCache.TRACE_FMT) and the tool's marker.
RECORD = struct.Struct(">iiH8s8s")
MARKER = b"zodbshootout:"

#: Keys and tids are below 2**63: RelStorage's cache holds them as signed 64-bit
#: integers (OID_t, TID_t), ZEO's as 8 bytes.
KEY_LIMIT = 1 << 63
#: The largest access an SPC line may make (ZEO's records hold at most 8 MiB).
MAX_ACCESS_BYTES = 1 << 31
#: The largest cache size a trace's marker may state.
MAX_MARKED_CACHE_BYTES = 1 << 50
#: ZEO's trace codes: start (0), invalidations, loads, stores (ZEO.scripts.stats).
_CODES = frozenset({0, *range(0x10, 0x1F, 2), *range(0x20, 0x27, 2), *range(0x50, 0x5F, 2)})
_PHASE_NAME = re.compile(r"[a-z_]{1,32}")

_LOADS = frozenset({0x20, 0x22, 0x24, 0x26})
_HITS = frozenset({0x22, 0x26})


class Access(NamedTuple):
    """One cache access: read (load), write (store data) or invalidate.

    *tid* is the transaction id the trace gives the data (a hit's, a fill's,
    a store's; an invalidation's new one), 0 where it gives none (a miss
    never filled, any SPC record): a policy keyed by revision needs it to
    tell a store of the revision it holds (a prefetch) from a new one.
    """

    op: str  # READ, WRITE or INVALIDATE
    key: int
    size_bytes: int
    tid: int = 0


@dataclass(frozen=True)
class Traced:
    """What a ZEO-format trace says of the cache that wrote it."""

    loads: int
    hits: int
    kind: str | None = None  # "zeo" or "relstorage": from the tool's marker
    cache_size_bytes: int | None = None
    #: phase -> (loads, hits) inside each timed phase (the tool's phase markers)
    phases: dict[str, tuple[int, int]] = field(default_factory=dict)


@dataclass(frozen=True)
class Trace:
    """A trace file read: its accesses and, for ZEO's format, the traced cache."""

    path: str
    format: str  # "zeo" or "spc"
    accesses: list[Access] = field(repr=False)
    traced: Traced | None = None


def read_trace(path: str, max_bytes: int = DEFAULT_MAX_BYTES) -> Trace:
    """*path* read into accesses; a file that is no trace is a UsageError (one line).

    *max_bytes* bounds the trace read: a plain file's size, a compressed
    one's decompressed size.
    """
    with _open_decompressed(path, max_bytes) as file:
        head = file.peek(RECORD.size)[: RECORD.size]
        if _is_zeo_start(head):
            return _read_zeo(path, file)
        if _looks_like_spc(head):
            return Trace(path, "spc", list(_read_spc(path, file)))
    raise UsageError(
        f"{path} is neither a ZEO cache trace (written with --cache-trace) nor an "
        "SPC trace (asu,lba,size,opcode,timestamp)"
    )


# --- opening, bounded ------------------------------------------------------------


class _Bounded(io.RawIOBase):
    """A decompressing stream that refuses to give more than *limit* bytes."""

    def __init__(self, stream: BinaryIO, path: str, limit: int) -> None:
        self._stream = stream
        self._path = path
        self._limit = limit
        self._read = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        try:
            data = self._stream.read(len(buffer))
        except (EOFError, OSError, zlib.error) as e:
            # Cut short (EOFError) or not the format its first bytes claim.
            message = " ".join(str(e).split()) or type(e).__name__
            if isinstance(self._stream, (gzip.GzipFile, bz2.BZ2File)):
                kind = "gzip" if isinstance(self._stream, gzip.GzipFile) else "bzip2"
                raise UsageError(
                    f"{self._path} is not a readable trace: its {kind} data is damaged ({message})"
                ) from None
            raise UsageError(f"cannot read trace {self._path}: {message}") from None
        self._read += len(data)
        if self._read > self._limit:
            raise UsageError(
                f"refusing to read trace {self._path}: it decompresses to more than "
                f"{format_size(self._limit)} (raise the limit with --max-trace-size)"
            )
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        self._stream.close()
        super().close()


def _open_decompressed(path: str, max_bytes: int) -> io.BufferedReader:
    raw = open_input(path, "trace", MAX_TRACE_BYTES)
    magic = raw.read(3)
    raw.seek(0)
    if magic[:2] == b"\x1f\x8b" or magic == b"BZh":
        try:
            # Decompressing alone is fast: a file over the bound is refused in
            # seconds, before a line is parsed.
            with _Bounded(_decompressor(raw, magic), path, max_bytes) as counting:
                while counting.read(1 << 20):
                    pass
        except BaseException:
            raw.close()
            raise
        raw.seek(0)
        stream = _decompressor(raw, magic)
    else:
        size = os.fstat(raw.fileno()).st_size
        if size > max_bytes:
            raw.close()
            raise UsageError(
                f"refusing to read trace {path}: it is {format_size(size)}, more than "
                f"{format_size(max_bytes)} (raise the limit with --max-trace-size)"
            )
        stream = raw
    return io.BufferedReader(_Bounded(stream, path, max_bytes))


def _decompressor(raw: BinaryIO, magic: bytes) -> BinaryIO:
    if magic == b"BZh":
        return bz2.BZ2File(raw, "rb")  # type: ignore[return-value]
    return gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[return-value]


def _is_zeo_start(head: bytes) -> bool:
    """ZEO and RelStorage begin each trace with a start record: code 0, a time."""
    if len(head) < RECORD.size:
        return False
    timestamp, encoded, _oid_length, _tid, _end = RECORD.unpack(head)
    return timestamp > 0 and encoded & 0xFF == 0


def _looks_like_spc(head: bytes) -> bool:
    text = head.split(b"\n", 1)[0]
    return text.count(b",") >= 3 and all(32 <= byte < 127 for byte in text)


# --- ZEO's binary format ---------------------------------------------------------


def _zeo_records(path: str, file: io.BufferedReader) -> Iterator[tuple[int, int, bytes, int, int]]:
    """(code, dlen, oid, tid, time in seconds) of each record; a damaged record is a
    UsageError naming it."""
    for number in itertools.count(1):
        head = file.read(RECORD.size)
        if not head:
            return
        if len(head) < RECORD.size:
            return  # a record cut short by the end of a run: ZEO's scripts stop there too
        timestamp, encoded, oid_length, tid_bytes, _end = RECORD.unpack(head)
        code = encoded & 0xFF
        # RelStorage writes oid 0 as an empty oid; a start record may carry the marker.
        bad_oid = oid_length > MAX_LINE_BYTES if code == 0 else oid_length not in (0, 8)
        tid = int.from_bytes(tid_bytes, "big")
        problem = (
            "its time is not positive"
            if timestamp <= 0
            else f"code {code:#04x} is no trace code"
            if code not in _CODES or encoded < 0
            else f"an oid of {oid_length} bytes"
            if bad_oid
            else f"tid {tid:#x} is 2**63 or more"
            if tid >= KEY_LIMIT
            else None
        )
        oid = file.read(oid_length) if problem is None else b""
        if problem is None and code and int.from_bytes(oid, "big") >= KEY_LIMIT:
            problem = f"oid 0x{oid.hex()} is 2**63 or more"
        if problem is not None:
            raise UsageError(
                f"{path}: record {number} is damaged ({problem}): not a readable ZEO cache trace"
            )
        if len(oid) < oid_length:
            return
        yield code, (encoded >> 8) & 0x7FFFFF, oid, tid, timestamp


class _ZEOReader:
    """Turns ZEO's records into accesses, keeping the traced cache's own counts."""

    def __init__(self) -> None:
        self.accesses: list[Access] = []
        self.marker: dict[str, object] = {}
        self.phase: str | None = None  # inside a timed phase (the tool's markers)
        self.marked = False  # the trace has phase markers
        self.counts: dict[str | None, list[int]] = {}  # phase -> [loads, hits]
        self.missed: dict[int, int] = {}  # oid -> index of its read that missed, until filled
        self.sizes: dict[int, int] = {}  # the last known size of each oid

    def start(self, oid: bytes) -> None:
        fields = _marker(oid) if oid.startswith(MARKER) else None
        if fields is None:
            return
        if "phase" in fields:
            phase = fields["phase"]
            self.phase = phase if isinstance(phase, str) else None
            self.marked = True
        else:
            self.marker.update(fields)

    def check(self, path: str) -> None:
        """The marker's fields in range, else a UsageError: they are shown as they are."""
        kind, size = self.marker.get("kind"), self.marker.get("cache_size_bytes")
        if kind is not None and kind not in ("zeo", "relstorage"):
            raise UsageError(f"{path}: the trace's marker names no known cache kind")
        if size is not None and (type(size) is not int or not 0 < size <= MAX_MARKED_CACHE_BYTES):
            raise UsageError(f"{path}: the trace's marker gives no cache size in bytes")
        for phase in self.counts:
            if phase is not None and not _PHASE_NAME.fullmatch(phase):
                raise UsageError(f"{path}: the trace's marker names no phase")

    def record(self, code: int, dlen: int, oid: bytes, tid: int) -> None:
        key = int.from_bytes(oid, "big")
        action = code & 0x70
        if dlen:
            self.sizes[key] = dlen
        if action & 0x20:
            counts = self.counts.setdefault(self.phase, [0, 0])
            counts[0] += 1
            if code in _HITS:
                counts[1] += 1
            else:
                self.missed[key] = len(self.accesses)
            # A miss's tid is none (z64): its fill gives it.
            self.accesses.append(Access(READ, key, dlen, tid if code in _HITS else 0))
        elif action & 0x40:
            index = self.missed.pop(key, None)
            if index is not None:  # the fill of a miss: the read gets its size and tid
                self.accesses[index] = Access(READ, key, dlen, tid)
            else:
                self.accesses.append(Access(WRITE, key, dlen, tid))
        elif action & 0x10:
            self.missed.pop(key, None)
            self.accesses.append(Access(INVALIDATE, key, 0, tid))

    def traced(self) -> Traced:
        """The traced cache's counts: of the timed phases' loads when the trace marks them."""
        phases = {p: (c[0], c[1]) for p, c in self.counts.items() if p is not None}
        counted = list(phases.values()) if self.marked else [tuple(c) for c in self.counts.values()]
        kind, size = self.marker.get("kind"), self.marker.get("cache_size_bytes")
        return Traced(
            loads=sum(c[0] for c in counted),
            hits=sum(c[1] for c in counted),
            kind=kind if isinstance(kind, str) else None,
            cache_size_bytes=size if isinstance(size, int) else None,
            phases=phases,
        )


def _read_zeo(path: str, file: io.BufferedReader) -> Trace:
    reader = _ZEOReader()
    for code, dlen, oid, tid, _seconds in _zeo_records(path, file):
        if code == 0:
            reader.start(oid)
        else:
            reader.record(code, dlen, oid, tid)
    reader.check(path)
    # A miss never filled (an object that is gone) still had its size before.
    accesses = [_sized(a, reader.sizes) for a in reader.accesses]
    return Trace(path, "zeo", accesses, reader.traced())


def _sized(access: Access, sizes: dict[int, int]) -> Access:
    if access.size_bytes or access.op != READ:
        return access
    return access._replace(size_bytes=sizes.get(access.key, 0))


def _marker(oid: bytes) -> dict[str, object] | None:
    try:
        value = json.loads(oid[len(MARKER) :])
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def marker_record(timestamp: int, **fields: object) -> bytes:
    """The tool's start record: code 0, its oid ``zodbshootout:{json}``."""
    oid = MARKER + json.dumps(fields, sort_keys=True).encode("ascii")
    return RECORD.pack(timestamp, 0, len(oid), bytes(8), bytes(8)) + oid


# --- SPC text ---------------------------------------------------------------------


def _read_spc(path: str, file: io.BufferedReader) -> Iterator[Access]:
    for number, line in enumerate(_lines(path, file), 1):
        fields = line.split(b",")
        try:
            asu, lba, size = int(fields[0]), int(fields[1]), int(fields[2])
            opcode, seconds = fields[3].strip().lower(), float(fields[4])
        except (IndexError, ValueError):
            if not line.strip():
                continue
            raise UsageError(
                f"{path}:{number}: not an SPC line (asu,lba,size,opcode,timestamp)"
            ) from None
        problem = _spc_problem(len(fields), asu, lba, size, opcode, seconds)
        if problem:
            raise UsageError(f"{path}:{number}: {problem}")
        yield Access(READ if opcode == b"r" else WRITE, lba, size)


def _spc_problem(
    fields: int, asu: int, lba: int, size: int, opcode: bytes, seconds: float
) -> str | None:
    """What is out of range in an SPC line's fields, or None."""
    if fields != 5:
        return f"{fields} fields, not the 5 of asu,lba,size,opcode,timestamp"
    if opcode not in (b"r", b"w"):
        return "opcode is r or w and size a byte count"
    if not 0 <= asu < KEY_LIMIT:
        return "the ASU is a number from 0 to 2**63"
    if not 0 <= lba < KEY_LIMIT:
        return "the LBA (block number) is from 0 to 2**63"
    if not 0 <= size <= MAX_ACCESS_BYTES:
        return f"the size is a byte count from 0 to {MAX_ACCESS_BYTES} (2 GiB)"
    if not (math.isfinite(seconds) and seconds >= 0):
        return "the timestamp is a number of seconds, 0 or more"
    return None


def _lines(path: str, file: io.BufferedReader) -> Iterator[bytes]:
    while True:
        line = file.readline(MAX_LINE_BYTES + 1)
        if not line:
            return
        if len(line) > MAX_LINE_BYTES:
            raise UsageError(f"{path}: a line longer than {MAX_LINE_BYTES} bytes is no SPC line")
        yield line
