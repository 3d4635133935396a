"""The storage wrapper: every storage-level call recorded, the storage itself untouched.

``record(storage, prefix)`` returns a :class:`RecordingStorage`, which ZODB
treats as an ``IMVCCStorage`` whatever it wraps:

- an ``IMVCCStorage`` (RelStorage) is wrapped as it is, and so is every
  instance its ``new_instance()`` makes (one per ZODB connection);
- a plain ``IStorage`` (FileStorage, ZEO's ClientStorage, MappingStorage) is
  first adapted by ZODB's own ``MVCCAdapter`` — exactly what ``ZODB.DB`` does
  with it when it is not wrapped — and the adapter's instances are wrapped.

So each connection's calls (loads, prefetches, polls, the two-phase commit)
are recorded under a connection number of their own, and calls made on the
storage directly under connection 0.  Everything else (``getName``,
``pack``, ``iterator``, ``history``, ...) is the wrapped object's own
attribute, and the wrapper provides the interfaces it provides.

A call is recorded after it returned or raised, with the time it started:
its 32-byte record packed and put on the writer's queue (:mod:`.writer`);
a record that can't be packed is left out, so a call's result or exception
is the storage's, unchanged.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from threading import get_ident
from typing import Any

import zope.interface
from ZODB.interfaces import IMVCCStorage

from zodbshootout.recording.format import (
    FLAG_ERROR,
    FLAG_FIRST,
    FLAG_NONE,
    MAX_CONNECTIONS,
    RECORD_BY_IDENT,
    Op,
)
from zodbshootout.recording.writer import (
    DEFAULT_FLUSH_INTERVAL,
    DEFAULT_KEEP,
    DEFAULT_MAX_SIZE,
    Sink,
    TraceWriter,
)

_now = time.monotonic_ns
_pack = RECORD_BY_IDENT.pack
_EMPTY = b""

# Each queued call's code: the operation and flags as they sit in the record's
# first field (op << 48 | flags << 56), so that the writer adds only the time.
LOAD = Op.LOAD << 48
LOAD_BEFORE = Op.LOAD_BEFORE << 48
LOAD_SERIAL = Op.LOAD_SERIAL << 48
PREFETCH = Op.PREFETCH << 48
STORE = Op.STORE << 48
STORE_BLOB = Op.STORE_BLOB << 48
CHECK_CURRENT = Op.CHECK_CURRENT << 48
NEW_OID = Op.NEW_OID << 48
TPC_BEGIN = Op.TPC_BEGIN << 48
TPC_VOTE = Op.TPC_VOTE << 48
TPC_FINISH = Op.TPC_FINISH << 48
TPC_ABORT = Op.TPC_ABORT << 48
POLL = Op.POLL << 48
CLASS = Op.CLASS << 48
RELEASE = Op.RELEASE << 48
ERROR = FLAG_ERROR << 56
NONE = FLAG_NONE << 56
FIRST = FLAG_FIRST << 56


def _thread_bytes() -> bytes:
    return threading.get_native_id().to_bytes(8, "big")


def _class_name(data: bytes) -> str:
    """``module.Class`` of a record, from its pickle's first part (never its state)."""
    try:
        from ZODB.utils import get_pickle_metadata  # only with class-names on

        module, name = get_pickle_metadata(data)
    except Exception:
        return "?"
    return f"{module}.{name}" if module else str(name)


class _Calls:
    """The recorded calls of one storage object, the storage's or a connection's.

    Each call reads the writer's sink (its epoch and its queue's append) before
    the clock, and queues its packed record when it returned or raised; a record
    that can't be packed (an argument of a type no storage takes) is left out:
    the call's own result or exception is the storage's, unchanged.

    The calls are this plain object's methods, bound into the facade's
    ``__dict__`` (:class:`_Recorded`): the facade has a ``__getattr__`` (it
    delegates everything else to the storage), and on such a class Python
    looks up every attribute of its instances through the hook, never
    specialized: when the calls read their state from the facade, those
    lookups were a good part of a recorded load's cost.
    """

    __slots__ = (
        "classes",
        "connection",
        "ended",
        "ident",
        "inner",
        "thread",
        "transaction",
        "writer",
    )

    def __init__(self, inner: Any, writer: TraceWriter, connection: int) -> None:
        self.inner = inner
        self.writer = writer
        self.classes: bool = writer.class_names
        self.connection = connection
        #: The connection's transaction number (modulo 65536).
        self.transaction = 0
        #: The record's second field: ``connection | transaction << 16``.
        self.ident = connection
        #: The connection's transaction finished or aborted: the next tpc_begin starts one.
        self.ended = False
        #: (threading.get_ident(), the native thread id's 8 bytes) of the last caller
        #: that needed it: the native id costs a system call.
        self.thread: tuple[int, bytes] = (0, b"")

    def next_transaction(self) -> None:
        self.transaction = number = (self.transaction + 1) & 0xFFFF
        self.ended = False
        self.ident = self.connection | number << 16

    def thread_bytes(self) -> bytes:
        """The calling thread's native id, 8 bytes big-endian (as the trace's oid field)."""
        ident, native = self.thread
        if ident != get_ident():
            ident = get_ident()
            native = _thread_bytes()
            self.thread = (ident, native)  # one tuple: a consistent pair for any thread
        return native

    def put(self, sink: Sink, now: int, code: int, oid: Any, tid: Any, size: int) -> None:
        """Queue a record of the calls that are not the hot path (its time from *now*)."""
        try:
            sink[1](_pack(now - sink[0] | code, self.ident, oid, tid, size))
        except Exception:  # an argument no storage takes: the call is the storage's
            pass

    def put_class(self, sink: Sink, now: int, oid: bytes, data: bytes) -> None:
        sink[1]((now - sink[0] | CLASS, self.connection, self.transaction, oid, _class_name(data)))

    # --- reads --------------------------------------------------------------------

    def load(self, oid: bytes, *args: Any) -> Any:
        sink = self.writer.sink
        now = _now()
        try:
            # (An empty *args passed on costs a tuple and a slower call; loads have none.)
            result = self.inner.load(oid, *args) if args else self.inner.load(oid)
        except BaseException:
            self.put(sink, now, LOAD | ERROR, oid, _EMPTY, 0)
            raise
        try:
            sink[1](_pack(now - sink[0] | LOAD, self.ident, oid, result[1], len(result[0])))
            if self.classes:
                self.put_class(sink, now, oid, result[0])
        except Exception:  # an argument no storage takes: the call is the storage's
            pass
        return result

    def loadBefore(self, oid: bytes, tid: bytes) -> Any:
        sink = self.writer.sink
        now = _now()
        try:
            result = self.inner.loadBefore(oid, tid)
        except BaseException:
            self.put(sink, now, LOAD_BEFORE | ERROR, oid, tid, 0)
            raise
        if result is None:
            self.put(sink, now, LOAD_BEFORE | NONE, oid, tid, 0)
            return result
        try:
            sink[1](_pack(now - sink[0] | LOAD_BEFORE, self.ident, oid, result[1], len(result[0])))
            if self.classes:
                self.put_class(sink, now, oid, result[0])
        except Exception:  # an argument no storage takes: the call is the storage's
            pass
        return result

    def loadSerial(self, oid: bytes, serial: bytes) -> Any:
        sink = self.writer.sink
        now = _now()
        flags, size = ERROR, 0
        try:
            data = self.inner.loadSerial(oid, serial)
            flags, size = 0, len(data)
            return data
        finally:
            self.put(sink, now, LOAD_SERIAL | flags, oid, serial, size)

    def prefetch(self, oids: Iterable[bytes], *args: Any) -> Any:
        sink = self.writer.sink
        now = _now()
        oids = oids if isinstance(oids, (list, tuple)) else list(oids)
        flags = ERROR
        try:
            result = self.inner.prefetch(oids, *args)
            flags = 0
            return result
        finally:
            count = len(oids)
            first = FIRST
            for oid in oids:
                self.put(sink, now, PREFETCH | flags | first, oid, _EMPTY, count)
                first = 0

    # --- writes -------------------------------------------------------------------

    def store(self, oid: bytes, serial: bytes, data: bytes, *args: Any) -> Any:
        sink = self.writer.sink
        now = _now()
        flags = ERROR
        try:
            result = self.inner.store(oid, serial, data, *args)
            flags = 0
            return result
        finally:
            try:
                sink[1](
                    _pack(now - sink[0] | STORE | flags, self.ident, oid, serial or _EMPTY,
                          len(data) if data else 0)
                )  # fmt: skip
                if self.classes and data:
                    self.put_class(sink, now, oid, data)
            except Exception:  # an argument no storage takes: the call is the storage's
                pass

    def storeBlob(self, oid: bytes, serial: bytes, data: bytes, *args: Any) -> Any:
        sink = self.writer.sink
        now = _now()
        flags = ERROR
        try:
            result = self.inner.storeBlob(oid, serial, data, *args)
            flags = 0
            return result
        finally:
            size = len(data) if isinstance(data, bytes) else 0
            self.put(sink, now, STORE_BLOB | flags, oid, serial or _EMPTY, size)

    def checkCurrentSerialInTransaction(self, oid: bytes, serial: bytes, *args: Any) -> Any:
        sink = self.writer.sink
        now = _now()
        flags = ERROR
        try:
            result = self.inner.checkCurrentSerialInTransaction(oid, serial, *args)
            flags = 0
            return result
        finally:
            self.put(sink, now, CHECK_CURRENT | flags, oid, serial or _EMPTY, 0)

    def new_oid(self) -> bytes:
        sink = self.writer.sink
        now = _now()
        oid = _EMPTY
        flags = ERROR
        try:
            oid = self.inner.new_oid()
            flags = 0
            return oid
        finally:
            self.put(sink, now, NEW_OID | flags, oid, _EMPTY, 0)

    # --- the two-phase commit ---------------------------------------------------------

    def tpc_begin(self, transaction: Any, *args: Any) -> Any:
        sink = self.writer.sink
        now = _now()
        if self.ended or not self.connection:
            # A commit with no poll since the last one (or on the storage itself).
            self.next_transaction()
        flags = ERROR
        try:
            result = self.inner.tpc_begin(transaction, *args)
            flags = 0
            return result
        finally:
            self.put(sink, now, TPC_BEGIN | flags, _EMPTY, _EMPTY, 0)

    def tpc_vote(self, transaction: Any) -> Any:
        sink = self.writer.sink
        now = _now()
        flags, size = ERROR, 0
        try:
            result = self.inner.tpc_vote(transaction)
            flags = 0
            if result:
                try:
                    size = len(result)
                except TypeError:
                    size = 0
            return result
        finally:
            self.put(sink, now, TPC_VOTE | flags, _EMPTY, _EMPTY, size)

    def tpc_finish(self, transaction: Any, func: Any = None) -> Any:
        sink = self.writer.sink
        now = _now()
        committed = []

        def finished(tid: bytes) -> None:
            committed.append(tid)
            if func is not None:
                func(tid)

        flags = ERROR
        try:
            result = self.inner.tpc_finish(transaction, finished)
            flags = 0
            return result
        finally:
            tid = committed[0] if committed else _EMPTY
            self.put(sink, now, TPC_FINISH | flags, _EMPTY, tid, 0)
            self.ended = True

    def tpc_abort(self, transaction: Any, *args: Any) -> Any:
        sink = self.writer.sink
        now = _now()
        flags = ERROR
        try:
            result = self.inner.tpc_abort(transaction, *args)
            flags = 0
            return result
        finally:
            self.put(sink, now, TPC_ABORT | flags, _EMPTY, _EMPTY, 0)
            self.ended = True

    # --- a transaction's view ------------------------------------------------------

    def poll_invalidations(self) -> Any:
        sink = self.writer.sink
        now = _now()
        self.next_transaction()
        flags, size = ERROR, 0
        try:
            result = self.inner.poll_invalidations()
            if result is None:
                flags = NONE
            else:
                flags, size = 0, len(result)
            return result
        finally:
            self.put(sink, now, POLL | flags, self.thread_bytes(), _EMPTY, size)


#: The calls a wrapper records (its class may define one itself: then that one).
RECORDED_CALLS = (
    "load", "loadBefore", "loadSerial", "prefetch", "store", "storeBlob",
    "checkCurrentSerialInTransaction", "new_oid", "tpc_begin", "tpc_vote", "tpc_finish",
    "tpc_abort", "poll_invalidations",
)  # fmt: skip


class _Recorded:
    """A storage object as ZODB sees it: the recorded calls, and the storage's own attributes.

    The recorded calls are bound methods of a :class:`_Calls` in the instance's
    ``__dict__``; every other attribute is the wrapped object's.
    """

    _zst_inner: Any
    _zst_writer: TraceWriter
    _zst_calls: _Calls

    def _zst_setup(self, inner: Any, writer: TraceWriter, connection: int) -> None:
        self._zst_inner = inner
        self._zst_writer = writer
        self._zst_calls = calls = _Calls(inner, writer, connection)
        for name in RECORDED_CALLS:
            if not hasattr(type(self), name):
                self.__dict__[name] = getattr(calls, name)
        zope.interface.directlyProvides(self, zope.interface.providedBy(inner))

    def __getattr__(self, name: str) -> Any:
        # The wrapper's own state and Python's protocols (zope.interface's
        # __provides__ included) are never the wrapped object's.
        if name.startswith(("_zst_", "__")):
            raise AttributeError(name)
        value = getattr(self._zst_inner, name)
        if callable(value) and not isinstance(value, type):
            self.__dict__[name] = value  # a bound method: looked up once
        return value

    def __len__(self) -> int:
        return len(self._zst_inner)

    def __repr__(self) -> str:
        return f"<recording {self._zst_inner!r}>"


class RecordingInstance(_Recorded):
    """One connection's storage instance (``new_instance()``), recorded under its number."""

    def __init__(self, inner: Any, writer: TraceWriter, owner: RecordingStorage, number: int):
        self._zst_setup(inner, writer, number)
        self._zst_owner = owner
        self._zst_released = False

    def release(self) -> Any:
        sink = self._zst_writer.sink
        now = _now()
        try:
            return self._zst_inner.release()
        finally:
            if not self._zst_released:
                self._zst_released = True
                calls = self._zst_calls
                calls.put(sink, now, RELEASE, calls.thread_bytes(), _EMPTY, 0)
                self._zst_owner._zst_free(calls.connection)


class RecordingStorage(_Recorded):
    """A storage whose calls, and its connections' calls, are written to a trace.

    Use :func:`record` to make one.  ``close()`` closes the storage, then
    writes what is queued and closes the trace.
    """

    def __init__(self, storage: Any, writer: TraceWriter) -> None:
        self._zst_setup(storage, writer, 0)
        zope.interface.alsoProvides(self, IMVCCStorage)
        if IMVCCStorage.providedBy(storage):
            self._zst_mvcc = storage
        else:
            from ZODB.mvccadapter import MVCCAdapter

            # What ZODB.DB would do itself: the adapter registers with the storage.
            self._zst_mvcc = MVCCAdapter(storage)
        self._zst_lock = threading.Lock()
        self._zst_free_numbers: list[int] = []
        self._zst_next_number = 1

    @property
    def recording(self) -> TraceWriter:
        """The trace's writer: its files, whether it stopped and why."""
        return self._zst_writer

    @property
    def mvcc_storage(self) -> Any:
        """The IMVCCStorage whose instances it wraps (ZODB's adapter of a plain storage)."""
        return self._zst_mvcc

    def _zst_number(self) -> int:
        with self._zst_lock:
            if self._zst_free_numbers:
                return self._zst_free_numbers.pop()
            number = min(self._zst_next_number, MAX_CONNECTIONS)
            self._zst_next_number += 1
            return number

    def _zst_free(self, number: int) -> None:
        if number < MAX_CONNECTIONS:
            with self._zst_lock:
                self._zst_free_numbers.append(number)

    def _zst_wrap(self, inner: Any, op: Op, tid: bytes = _EMPTY) -> RecordingInstance:
        number = self._zst_number()
        instance = RecordingInstance(inner, self._zst_writer, self, number)
        sink = self._zst_writer.sink
        calls = instance._zst_calls
        calls.put(sink, _now(), op << 48, calls.thread_bytes(), tid, 0)
        return instance

    def new_instance(self) -> RecordingInstance:
        return self._zst_wrap(self._zst_mvcc.new_instance(), Op.NEW_INSTANCE)

    def before_instance(self, before: bytes | None = None) -> RecordingInstance:
        return self._zst_wrap(
            self._zst_mvcc.before_instance(before), Op.BEFORE_INSTANCE, before or _EMPTY
        )

    def __getattr__(self, name: str) -> Any:
        if name == "undo_instance":  # only if the storage (or ZODB's adapter) has it
            make = self._zst_mvcc.undo_instance
            return lambda: self._zst_wrap(make(), Op.NEW_INSTANCE)
        return super().__getattr__(name)

    def release(self) -> Any:
        return self._zst_mvcc.release()

    def poll_invalidations(self) -> Any:
        if self._zst_mvcc is self._zst_inner:
            return self._zst_calls.poll_invalidations()
        return []  # a plain storage has no view of its own: always the latest

    def sync(self, *args: Any) -> Any:
        """The storage's sync (not recorded: a poll follows every sync ZODB makes)."""
        sync = getattr(self._zst_inner, "sync", None)
        return sync(*args) if sync is not None else None

    def close(self) -> None:
        try:
            self._zst_mvcc.close()
        finally:
            self._zst_writer.close()


def record(
    storage: Any,
    prefix: str,
    *,
    max_size: int = DEFAULT_MAX_SIZE,
    keep: int = DEFAULT_KEEP,
    class_names: bool = False,
    flush_interval: float = DEFAULT_FLUSH_INTERVAL,
) -> RecordingStorage:
    """*storage* wrapped so that its calls go to ``PREFIX.PID.N.zodbtrace`` files.

    Each file holds at most *max_size* bytes; then the next one starts and
    only the newest *keep* of the process stay.  *class_names* adds each
    loaded or stored record's class (``module.Class``, from its pickle) to
    the trace.  Queued calls are written every *flush_interval* seconds: a
    crash loses at most that much.  Open a ``ZODB.DB`` on the result as on
    the storage; closing it closes the storage and the trace.
    """
    writer = TraceWriter(
        prefix, max_size=max_size, keep=keep, flush_interval=flush_interval,
        class_names=class_names,
    )  # fmt: skip
    try:
        return RecordingStorage(storage, writer)
    except BaseException:
        writer.close()
        raise
