"""The writer: records packed by the application's threads, written by a thread of its own.

The application's side (:mod:`.wrapper`) packs each call into its 32-byte
record and appends it to a queue: one ``struct`` call and one
``deque.append``, no lock, no I/O.  The record's time counts from the
queue's *epoch* (a ``time.monotonic_ns()``), which the wrapper reads with
the queue's append, as one pair (:attr:`TraceWriter.sink`), before it reads
the clock: a record's time is never before its epoch.  A daemon thread wakes
every ``flush_interval`` seconds and writes what was queued with
``os.write`` (so a killed process leaves everything up to the last wake-up
in the file: the kernel has it), each file's header giving its records'
epoch; it rotates to a new file when the next records would pass
``max_size``, keeping the newest ``keep`` files of the process, and when the
epoch is :data:`EPOCH_NS` old (a new epoch and queue, so that no time passes
the record's 48 bits).

It never harms the application: any error of the file (a full disk, a file
size limit, a removed directory) stops the recording with one log line, and
from then on the sink discards.  A process forked after the writer started
gets a writer of its own (its pid names its files); the parent's queued
records are not written twice.
"""

from __future__ import annotations

import atexit
import collections
import logging
import os
import threading
import time
import weakref
from collections.abc import Callable
from itertools import repeat, starmap

from zodbshootout.recording.format import (
    FORMAT_VERSION,
    HEADER_CLASS_NAMES,
    RECORD,
    Header,
    Op,
    pack_header,
)

log = logging.getLogger("zodbshootout.recording")

MAX_TIME = (1 << 48) - 1

#: The files' suffix: ``PREFIX.PID.SEQUENCE.zodbtrace``.
SUFFIX = ".zodbtrace"
DEFAULT_MAX_SIZE = 100 << 20
DEFAULT_KEEP = 10
DEFAULT_FLUSH_INTERVAL = 0.5
#: The smallest cap: a header and a few thousand records.
MIN_MAX_SIZE = 64 << 10
#: Queued records above this when the writer wakes up mean that it cannot keep
#: up: the recording stops rather than let the queue eat the memory.
MAX_QUEUED = 4_000_000

#: A new epoch (and file) when the current one is this old: 39 hours, half of
#: what a record's 48 bits of nanoseconds hold.
EPOCH_NS = 1 << 47
#: A queue of an earlier epoch is forgotten this long after its last record (a
#: call that read the old sink before the change appends to it when it returns).
RETIRED_NS = 600 * 10**9

#: A queued call: its packed record (bytes), or, for a CLASS record, the tuple
#: (first field, connection, transaction, oid, class name): the writer numbers the name.
Entry = bytes | tuple
#: What the wrapper reads per call: (epoch, append).
Sink = tuple[int, Callable[[Entry], None]]


def trace_name(prefix: str, pid: int, sequence: int) -> str:
    """The file a process writes: ``PREFIX.PID.SEQUENCE.zodbtrace``."""
    return f"{prefix}.{pid}.{sequence:04d}{SUFFIX}"


class TraceWriter:
    """One recording: the queue, the writer thread, the current file."""

    _queue: collections.deque[Entry]
    _epoch: int

    def __init__(
        self,
        prefix: str,
        max_size: int = DEFAULT_MAX_SIZE,
        keep: int = DEFAULT_KEEP,
        flush_interval: float = DEFAULT_FLUSH_INTERVAL,
        class_names: bool = False,
    ) -> None:
        if max_size < MIN_MAX_SIZE:
            raise ValueError(f"max-size must be at least {MIN_MAX_SIZE} bytes, not {max_size}")
        if keep < 1:
            raise ValueError(f"keep must be at least 1, not {keep}")
        if not flush_interval > 0:
            raise ValueError(f"flush-interval must be positive, not {flush_interval}")
        self.prefix = os.path.abspath(prefix)
        self.max_size = max_size
        self.keep = keep
        self.flush_interval = flush_interval
        self.class_names = class_names
        #: A new epoch (and file) when the current one is this old (tests lower it).
        self.epoch_ns = EPOCH_NS
        self.files_written: list[str] = []
        self.stopped_because: str | None = None
        self._lock = threading.Lock()  # the writer's own state: drains and closing
        self._start()
        _WRITERS.add(self)

    def _start(self) -> None:
        #: Queues of earlier epochs, still drained: (epoch, queue, retired at).
        self._retired: list[tuple[int, collections.deque[Entry], int]] = []
        self._new_epoch(retire=False)
        self._pid = os.getpid()
        self._fd: int | None = None
        self._sequence = 0
        self._file_bytes = 0
        self._base_ns = 0
        self._classes: dict[str, int] = {}
        self._closing = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name="zodbshootout-recording", daemon=True
        )
        self._thread.start()

    def _new_epoch(self, retire: bool = True) -> None:
        """A new queue whose records count from now; the old one drained until forgotten."""
        if retire:
            self._retired.append((self._epoch, self._queue, time.monotonic_ns()))
        self._queue = collections.deque()
        self._epoch = time.monotonic_ns()
        #: What the wrapper reads per storage call (one attribute, so the pair is
        #: consistent): the epoch its record's time counts from, and the append.
        self.sink: Sink = (self._epoch, self._queue.append)

    # --- the application's side -----------------------------------------------

    def append(self, entry: Entry) -> None:
        """Queue *entry* (a packed record, its time from the current epoch: see :attr:`sink`)."""
        self.sink[1](entry)

    @property
    def epoch(self) -> int:
        return self.sink[0]

    @property
    def active(self) -> bool:
        return self.stopped_because is None and not self._closing.is_set()

    def flush(self) -> None:
        """Write what is queued now (in the caller's thread), e.g. before a checkpoint."""
        self._drain()

    def close(self) -> None:
        """Write what is queued, close the file, stop the thread.  Idempotent."""
        self._closing.set()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout=max(5.0, 4 * self.flush_interval))
        self._drain()
        with self._lock:
            self.sink = (0, _discard)
            self._close_file()
        _WRITERS.discard(self)

    # --- the writer thread ------------------------------------------------------

    def _run(self) -> None:
        while not self._closing.wait(self.flush_interval):
            self._drain()

    def _drain(self) -> None:
        with self._lock:
            if self.stopped_because is not None:
                return
            if time.monotonic_ns() - self._epoch >= self.epoch_ns:
                self._new_epoch()
            try:
                for epoch, queue, _ in self._retired:
                    self._drain_queue(epoch, queue)
                self._drain_queue(self._epoch, self._queue)
            except _TooMany as e:
                self._stop(str(e))
            except OSError as e:
                self._stop(f"{e.strerror or e} ({e.filename or self._current_name()})")
            except Exception as e:  # a bug of ours must not reach the application either
                self._stop(f"{type(e).__name__}: {e}")
            forget = time.monotonic_ns() - RETIRED_NS
            self._retired = [r for r in self._retired if r[1] or r[2] > forget]

    def _drain_queue(self, epoch: int, queue: collections.deque[Entry]) -> None:
        count = len(queue)
        if not count:
            return
        if count > MAX_QUEUED:
            raise _TooMany(f"{count} records queued, more than the writer can keep up with")
        # popleft called *count* times in C (starmap): a third of the Python loop's cost.
        entries = list(starmap(queue.popleft, repeat((), count)))
        if self._fd is not None and epoch != self._base_ns:
            self._rotate()  # a file's records count from one epoch, its header's
        self._write(entries, epoch)

    def _stop(self, reason: str) -> None:
        """Stop recording for good: one log line, no more appends, the file closed."""
        self.stopped_because = reason
        self.sink = (0, _discard)
        self._queue.clear()
        for _, queue, _ in self._retired:
            queue.clear()
        self._retired = []
        log.error("zodbshootout recording stopped: %s; the application goes on unrecorded", reason)
        try:
            self._close_file()
        except OSError:
            pass

    def _write(self, entries: list[Entry], epoch: int) -> None:
        start = 0
        while start < len(entries):
            if self._fd is None:
                self._open(epoch)
            room = (self.max_size - self._file_bytes) // RECORD.size
            chunk, used = self._pack(entries, start, room)
            if chunk:
                assert self._fd is not None  # opened above
                _write_all(self._fd, chunk)
                self._file_bytes += len(chunk)
            start += used
            if start < len(entries):
                self._rotate()

    def _pack(self, entries: list[Entry], start: int, room: int) -> tuple[bytes, int]:
        """The bytes of entries[start:] that fit in *room* records of this file, and how many."""
        if self.class_names:
            return self._pack_with_classes(entries, start, room)
        end = min(len(entries), start + room)
        return b"".join(entries[start:end]), end - start  # type: ignore[arg-type]

    def _pack_with_classes(self, entries: list[Entry], start: int, room: int) -> tuple[bytes, int]:
        """As _pack, with the CLASS_NAME records that name each class before its first use."""
        parts: list[bytes] = []
        for index in range(start, len(entries)):
            entry = entries[index]
            names: list[bytes] = []
            if type(entry) is tuple:
                first, connection, transaction, oid, name = entry
                names = self._class_records(name, first & MAX_TIME, connection, transaction)
                entry = RECORD.pack(first, connection, transaction, oid, b"", self._classes[name])
            if len(parts) + len(names) + 1 > room:
                # (A name takes at most 129 records, a file at least 2046: the next file
                # takes it; it names its classes anew.)
                return b"".join(parts), index - start
            parts += names
            parts.append(entry)  # type: ignore[arg-type]
        return b"".join(parts), len(entries) - start

    def _class_records(self, name: str, offset: int, connection: int, txn: int) -> list[bytes]:
        """The CLASS_NAME records that define *name*'s number, if this file lacks it."""
        if name in self._classes:
            return []
        number = len(self._classes) + 1
        self._classes[name] = number
        encoded = name.encode("utf-8", "replace")[:4096]
        first = offset | (Op.CLASS_NAME << 48)
        length = len(encoded).to_bytes(8, "big")
        records = [RECORD.pack(first, connection, txn, b"", length, number)]
        padded = encoded + b"\0" * (-len(encoded) % RECORD.size)
        records += [padded[i : i + RECORD.size] for i in range(0, len(padded), RECORD.size)]
        return records

    # --- files --------------------------------------------------------------------

    def _current_name(self) -> str:
        return trace_name(self.prefix, self._pid, self._sequence)

    def _open(self, epoch: int) -> None:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
        while True:
            name = self._current_name()
            try:
                fd = os.open(name, flags, 0o600)
                break
            except FileExistsError:  # an earlier process with the same pid
                self._sequence += 1
        self._fd = fd
        self._base_ns = epoch
        self._classes = {}
        header = Header(
            version=FORMAT_VERSION,
            flags=HEADER_CLASS_NAMES if self.class_names else 0,
            pid=self._pid,
            sequence=self._sequence,
            base_monotonic_ns=self._base_ns,
            base_wall_ns=time.time_ns() - (time.monotonic_ns() - self._base_ns),
        )
        data = pack_header(header)
        _write_all(fd, data)
        self._file_bytes = len(data)
        self.files_written.append(name)

    def _rotate(self) -> None:
        self._close_file()
        self._sequence += 1
        old = self._sequence - self.keep
        if old >= 0:
            try:
                os.unlink(trace_name(self.prefix, self._pid, old))
            except FileNotFoundError:
                pass

    def _close_file(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)

    def _after_fork_in_child(self) -> None:
        """A forked child records into files of its own, with a thread of its own."""
        self._lock = threading.Lock()
        if self.stopped_because is not None or self._closing.is_set():
            return
        fd = self._fd
        self._fd = None
        if fd is not None:
            os.close(fd)  # the parent's file: the parent goes on writing it
        self._start()


def _discard(entry: Entry) -> None:
    """The sink's append once the writer stopped."""


class _TooMany(Exception):
    """The queue outgrew what the writer can keep up with."""


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


#: Every open writer, for the fork hook and the final flush at exit.
_WRITERS: weakref.WeakSet[TraceWriter] = weakref.WeakSet()


def _after_fork() -> None:
    for writer in list(_WRITERS):
        writer._after_fork_in_child()


def _at_exit() -> None:
    for writer in list(_WRITERS):
        try:
            writer.close()
        except Exception:  # exiting: nothing left to protect but the exit itself
            log.exception("zodbshootout recording: closing at exit")


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)
atexit.register(_at_exit)
