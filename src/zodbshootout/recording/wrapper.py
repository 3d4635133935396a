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
from typing import Any

import zope.interface
from ZODB.interfaces import IMVCCStorage

from zodbshootout.recording.format import (
    FLAG_ERROR,
    FLAG_FIRST,
    FLAG_NONE,
    MAX_CONNECTIONS,
    RECORD,
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
_pack = RECORD.pack
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


class _Recorded:
    """The calls recorded on any storage object, the storage's or a connection's.

    Each call reads the writer's sink (its epoch and its queue's append) before
    the clock, and queues its packed record when it returned or raised; a record
    that can't be packed (an argument of a type no storage takes) is left out:
    the call's own result or exception is the storage's, unchanged.
    """

    _zst_inner: Any
    _zst_writer: TraceWriter
    _zst_connection: int = 0
    _zst_transaction: int = 0
    #: The connection's transaction finished or aborted: the next tpc_begin starts one.
    _zst_ended: bool = False

    def _zst_setup(self, inner: Any, writer: TraceWriter) -> None:
        self._zst_inner = inner
        self._zst_writer = writer
        self._zst_classes = writer.class_names
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

    def _zst_put(self, sink: Sink, now: int, code: int, oid: Any, tid: Any, size: int) -> None:
        """Queue a record of the calls that are not the hot path (its time from *now*)."""
        try:
            sink[1](
                _pack(now - sink[0] | code, self._zst_connection, self._zst_transaction,
                      oid, tid, size)
            )  # fmt: skip
        except Exception:  # an argument no storage takes: the call is the storage's
            pass

    def _zst_class(self, sink: Sink, now: int, oid: bytes, data: bytes) -> None:
        sink[1](
            (now - sink[0] | CLASS, self._zst_connection, self._zst_transaction, oid,
             _class_name(data))
        )  # fmt: skip

    # --- reads --------------------------------------------------------------------

    def load(self, oid: bytes, *args: Any) -> Any:
        sink = self._zst_writer.sink
        now = _now()
        try:
            result = self._zst_inner.load(oid, *args)
        except BaseException:
            self._zst_put(sink, now, LOAD | ERROR, oid, _EMPTY, 0)
            raise
        try:
            sink[1](
                _pack(now - sink[0] | LOAD, self._zst_connection, self._zst_transaction, oid,
                      result[1], len(result[0]))
            )  # fmt: skip
            if self._zst_classes:
                self._zst_class(sink, now, oid, result[0])
        except Exception:  # an argument no storage takes: the call is the storage's
            pass
        return result

    def loadBefore(self, oid: bytes, tid: bytes) -> Any:
        sink = self._zst_writer.sink
        now = _now()
        try:
            result = self._zst_inner.loadBefore(oid, tid)
        except BaseException:
            self._zst_put(sink, now, LOAD_BEFORE | ERROR, oid, tid, 0)
            raise
        if result is None:
            self._zst_put(sink, now, LOAD_BEFORE | NONE, oid, tid, 0)
            return result
        try:
            sink[1](
                _pack(now - sink[0] | LOAD_BEFORE, self._zst_connection,
                      self._zst_transaction, oid, result[1], len(result[0]))
            )  # fmt: skip
            if self._zst_classes:
                self._zst_class(sink, now, oid, result[0])
        except Exception:  # an argument no storage takes: the call is the storage's
            pass
        return result

    def loadSerial(self, oid: bytes, serial: bytes) -> Any:
        sink = self._zst_writer.sink
        now = _now()
        flags, size = ERROR, 0
        try:
            data = self._zst_inner.loadSerial(oid, serial)
            flags, size = 0, len(data)
            return data
        finally:
            self._zst_put(sink, now, LOAD_SERIAL | flags, oid, serial, size)

    def prefetch(self, oids: Iterable[bytes], *args: Any) -> Any:
        sink = self._zst_writer.sink
        now = _now()
        oids = oids if isinstance(oids, list | tuple) else list(oids)
        flags = ERROR
        try:
            result = self._zst_inner.prefetch(oids, *args)
            flags = 0
            return result
        finally:
            count = len(oids)
            first = FIRST
            for oid in oids:
                self._zst_put(sink, now, PREFETCH | flags | first, oid, _EMPTY, count)
                first = 0

    # --- writes -------------------------------------------------------------------

    def store(self, oid: bytes, serial: bytes, data: bytes, *args: Any) -> Any:
        sink = self._zst_writer.sink
        now = _now()
        flags = ERROR
        try:
            result = self._zst_inner.store(oid, serial, data, *args)
            flags = 0
            return result
        finally:
            try:
                sink[1](
                    _pack(now - sink[0] | STORE | flags, self._zst_connection,
                          self._zst_transaction, oid, serial or _EMPTY,
                          len(data) if data else 0)
                )  # fmt: skip
                if self._zst_classes and data:
                    self._zst_class(sink, now, oid, data)
            except Exception:  # an argument no storage takes: the call is the storage's
                pass

    def storeBlob(self, oid: bytes, serial: bytes, data: bytes, *args: Any) -> Any:
        sink = self._zst_writer.sink
        now = _now()
        flags = ERROR
        try:
            result = self._zst_inner.storeBlob(oid, serial, data, *args)
            flags = 0
            return result
        finally:
            size = len(data) if isinstance(data, bytes) else 0
            self._zst_put(sink, now, STORE_BLOB | flags, oid, serial or _EMPTY, size)

    def checkCurrentSerialInTransaction(self, oid: bytes, serial: bytes, *args: Any) -> Any:
        sink = self._zst_writer.sink
        now = _now()
        flags = ERROR
        try:
            result = self._zst_inner.checkCurrentSerialInTransaction(oid, serial, *args)
            flags = 0
            return result
        finally:
            self._zst_put(sink, now, CHECK_CURRENT | flags, oid, serial or _EMPTY, 0)

    def new_oid(self) -> bytes:
        sink = self._zst_writer.sink
        now = _now()
        oid = _EMPTY
        flags = ERROR
        try:
            oid = self._zst_inner.new_oid()
            flags = 0
            return oid
        finally:
            self._zst_put(sink, now, NEW_OID | flags, oid, _EMPTY, 0)

    # --- the two-phase commit ---------------------------------------------------------

    def tpc_begin(self, transaction: Any, *args: Any) -> Any:
        sink = self._zst_writer.sink
        now = _now()
        if self._zst_ended or not self._zst_connection:
            # A commit with no poll since the last one (or on the storage itself).
            self._zst_transaction = (self._zst_transaction + 1) & 0xFFFF
            self._zst_ended = False
        flags = ERROR
        try:
            result = self._zst_inner.tpc_begin(transaction, *args)
            flags = 0
            return result
        finally:
            self._zst_put(sink, now, TPC_BEGIN | flags, _EMPTY, _EMPTY, 0)

    def tpc_vote(self, transaction: Any) -> Any:
        sink = self._zst_writer.sink
        now = _now()
        flags, size = ERROR, 0
        try:
            result = self._zst_inner.tpc_vote(transaction)
            flags = 0
            if result:
                try:
                    size = len(result)
                except TypeError:
                    size = 0
            return result
        finally:
            self._zst_put(sink, now, TPC_VOTE | flags, _EMPTY, _EMPTY, size)

    def tpc_finish(self, transaction: Any, func: Any = None) -> Any:
        sink = self._zst_writer.sink
        now = _now()
        committed = []

        def finished(tid: bytes) -> None:
            committed.append(tid)
            if func is not None:
                func(tid)

        flags = ERROR
        try:
            result = self._zst_inner.tpc_finish(transaction, finished)
            flags = 0
            return result
        finally:
            tid = committed[0] if committed else _EMPTY
            self._zst_put(sink, now, TPC_FINISH | flags, _EMPTY, tid, 0)
            self._zst_ended = True

    def tpc_abort(self, transaction: Any, *args: Any) -> Any:
        sink = self._zst_writer.sink
        now = _now()
        flags = ERROR
        try:
            result = self._zst_inner.tpc_abort(transaction, *args)
            flags = 0
            return result
        finally:
            self._zst_put(sink, now, TPC_ABORT | flags, _EMPTY, _EMPTY, 0)
            self._zst_ended = True

    # --- a transaction's view ------------------------------------------------------

    def poll_invalidations(self) -> Any:
        sink = self._zst_writer.sink
        now = _now()
        self._zst_transaction = (self._zst_transaction + 1) & 0xFFFF
        self._zst_ended = False
        flags, size = ERROR, 0
        try:
            result = self._zst_inner.poll_invalidations()
            if result is None:
                flags = NONE
            else:
                flags, size = 0, len(result)
            return result
        finally:
            self._zst_put(sink, now, POLL | flags, _thread_bytes(), _EMPTY, size)


class RecordingInstance(_Recorded):
    """One connection's storage instance (``new_instance()``), recorded under its number."""

    def __init__(self, inner: Any, writer: TraceWriter, owner: RecordingStorage, number: int):
        self._zst_setup(inner, writer)
        self._zst_owner = owner
        self._zst_connection = number
        self._zst_released = False

    def release(self) -> Any:
        sink = self._zst_writer.sink
        now = _now()
        try:
            return self._zst_inner.release()
        finally:
            if not self._zst_released:
                self._zst_released = True
                self._zst_put(sink, now, RELEASE, _thread_bytes(), _EMPTY, 0)
                self._zst_owner._zst_free(self._zst_connection)


class RecordingStorage(_Recorded):
    """A storage whose calls, and its connections' calls, are written to a trace.

    Use :func:`record` to make one.  ``close()`` closes the storage, then
    writes what is queued and closes the trace.
    """

    def __init__(self, storage: Any, writer: TraceWriter) -> None:
        self._zst_setup(storage, writer)
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
        instance._zst_put(sink, _now(), op << 48, _thread_bytes(), tid, 0)
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
            return super().poll_invalidations()
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
