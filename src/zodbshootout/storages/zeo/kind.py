"""ZEO clients: of a server the user runs (``<zeoclient>``) or the tool runs (``<embeddedzeo>``).

The client keeps a cache (in memory or, with ``client``, in a persistent
file that one process locks) and, with its own ``blob-dir``, a blob cache.
Load requests are counted where the client protocol sends them; they are
sent by the client's I/O thread, so a worker thread's share is found per
client connection and object (see :class:`_ThreadRequests`).
"""

from __future__ import annotations

import contextvars
import struct
import threading
import time
from typing import Any

from ZODB.utils import z64

from zodbshootout.config.keys import written
from zodbshootout.storages.base import (
    TRACE_SUFFIX,
    CacheWorkload,
    SizeReading,
    StorageKind,
    ThreadLoadCounter,
    counting_requests,
    median_latency_seconds,
    package_version,
    smaller_than_data_note,
    zodb_config_factory,
)
from zodbshootout.storages.filestorage import file_length
from zodbshootout.storages.network import ServerLink
from zodbshootout.storages.tracefile import TraceFile
from zodbshootout.storages.zeo.network import zeo_links
from zodbshootout.storages.zeo.section import EmbeddedZEO

# loadBefore requests this process put on the wire, once counting is installed.
_requests_sent = 0
# Requests a client thread waited on (see _count_round_trips), and the prefetch
# batches that put at least one request on the wire (counted once each).
_round_trips = 0
_batches_sent: set[int] = set()
_batch_number = [0]
#: The prefetch batch an I/O-thread task works for (0: none).  Tasks copy
#: the context they were created in, so the loads a prefetch spawns see it.
_PREFETCH_BATCH: contextvars.ContextVar[int] = contextvars.ContextVar("prefetch_batch", default=0)
_installed = False
# The same requests by client connection (id of ZEO's ClientIO) and oid, once
# a thread counter asked for them.  Written by each client's I/O thread only,
# read between phases when no request is in flight.
_by_client: dict[int, dict[bytes, int]] | None = None


class ZEOKind(StorageKind):
    name = "zeo"
    one_client_per_gevent_process = True
    preload_modules = ("ZEO.ClientStorage",)

    def disconnected(self, storage: Any) -> bool:
        # A call while disconnected waits wait-timeout (30 s by default) first.
        return not storage.is_connected()

    def server_lost(self, error: BaseException) -> bool:
        # ZEO's ClientDisconnected, without importing ZEO: each retry waits wait-timeout.
        return any(cls.__name__ == "ClientDisconnected" for cls in type(error).__mro__)

    def owns(self, storage: Any) -> bool:
        return type(storage).__module__.startswith("ZEO.")

    def owns_factory(self, factory: Any) -> bool:
        if isinstance(factory, EmbeddedZEO) or zodb_config_factory(factory, "ZEOClient"):
            return True
        # ZEO's own <clientstorage> section (%import ZEO): the same keys.
        cls = type(factory)
        return cls.__module__ == "ZEO.zconfig" and cls.__name__ == "ClientStorageConfig"

    def name_client_cache(self, factory: Any, label: str) -> None:
        # ZEO locks a persistent cache file, so two workers can't share one.
        # The writer and the reader with the same label (worker number) use
        # the same file, which is what lets warm find what the writer cached.
        config = factory.config
        if getattr(config, "client", None):
            base = config.__dict__.setdefault("_zodbshootout_client_base", config.client)
            config.client = f"{base}-{label}"

    def size_client_cache(self, factory: Any, workload: CacheWorkload) -> list[str]:
        config = factory.config
        if not written(config, "cache-size"):
            config.cache_size = max(config.cache_size, workload.client_cache_bytes)
        elif config.cache_size < workload.data_bytes:
            return [smaller_than_data_note("ZEO cache (cache-size)", config.cache_size, workload)]
        return []

    def client_cache_sizes(self, factory: Any) -> dict[str, int]:
        size = getattr(factory.config, "cache_size", None)
        return {} if size is None else {"ZEO cache": int(size)}

    def persistent_cache_key(self, factory: Any) -> str | None:
        return "client" if getattr(factory.config, "client", None) else None

    def clear_client_cache(self, storage: Any) -> None:
        storage._cache.clear()

    def blob_cache_dir(self, storage: Any) -> str | None:
        blob_dir = getattr(storage, "blob_dir", None)
        if blob_dir and not getattr(storage, "shared_blob_dir", False):
            return str(blob_dir)
        return None

    def install_request_counters(self, storage: Any) -> None:
        global _installed
        if not _installed:
            _count_requests()
            _installed = True

    def storage_loads(self, storage: Any, loads: int) -> int | None:
        return _requests_sent if _installed and counting_requests() else None

    def round_trips(self, storage: Any) -> int | None:
        if not (_installed and counting_requests()):
            return None
        return _round_trips + len(_batches_sent)

    def cache_hits(self, storage: Any) -> int | None:
        return int(storage._cache.getStats()[4])

    def cache_fills(self, storage: Any) -> int | None:
        # ZEO's ClientCache.store counts an add for each object it keeps: an
        # answer of the server (a load or a prefetch) or a commit's object.
        return int(storage._cache.getStats()[0])

    def thread_load_counter(
        self, storage: Any, worker: int, shared_client: bool, shared_oids: frozenset[bytes]
    ) -> ThreadLoadCounter | None:
        global _by_client
        client = getattr(getattr(storage, "_server", None), "client", None)
        if client is None:
            return None
        if _by_client is None:
            _by_client = {}
        return _ThreadRequests(id(client), worker, shared_client, shared_oids)

    def client_cache_series(self, storage: Any) -> dict[str, tuple[str, float]]:
        """ZEO's ClientCache counts (kept by the cache; its length too)."""
        cache = storage._cache
        adds, _added_bytes, _evicts, _evicted_bytes, accesses = cache.getStats()
        return {
            "client_cache_objects": ("objects", len(cache)),
            "client_cache_hits": ("loads", int(accesses)),
            "client_cache_fills": ("objects", int(adds)),
        }

    samples_servers = True

    def server_samplers(self, storage: Any) -> list[Any]:
        """The server's own status (server_status), through this client storage."""
        return [_ServerStatus(storage)]

    def trace_client_cache(self, storage: Any, path: str) -> bool:
        _trace(storage, path)
        return True

    def size(self, storage: Any, database_factory: Any) -> SizeReading:
        """The FileStorage an ``<embeddedzeo>`` server serves, its path read from the config."""
        section = database_factory.config.storage
        if not isinstance(section, EmbeddedZEO):
            return SizeReading(
                None,
                "the ZEO server's storage is not visible from the client; serve a "
                "filestorage through <embeddedzeo> to measure its size",
            )
        served = section.config.base
        if not zodb_config_factory(served, "FileStorage"):
            return SizeReading(
                None,
                f"the embedded ZEO server serves a {type(served).__name__}, whose size "
                "zodbshootout can't read",
            )
        return file_length(served.config.path)

    def describe(self, storage: Any, info: dict[str, Any]) -> None:
        cache = storage._cache
        info["database"] = "zeo"
        info["zeo_version"] = package_version("ZEO")
        # What the server speaks (e.g. Z5): its version is not sent to clients.
        protocol = getattr(storage, "protocol_version", None)
        if isinstance(protocol, bytes):
            info["server_protocol"] = protocol.decode("ascii", "replace")
        info["server_address"] = str(storage._server_addr)
        info["cache_size_bytes"] = cache.maxsize
        info["persistent_cache"] = bool(getattr(cache, "path", None))
        info["latency_seconds"] = median_latency_seconds(storage.ping)
        info["history"] = "preserving" if storage.supportsUndo() else "free"

    def network_links(self, factory: Any) -> list[ServerLink]:
        return zeo_links(factory)


def _count_requests() -> None:
    from ZEO.asyncio.client import Protocol

    original = Protocol.load_before

    def load_before(self: Any, oid: bytes, tid: bytes) -> Any:
        global _requests_sent
        if (oid, tid) not in self.futures:
            _requests_sent += 1
            if _by_client is not None:
                per_client = _by_client.setdefault(id(self.client), {})
                per_client[oid] = per_client.get(oid, 0) + 1
        return original(self, oid, tid)

    Protocol.load_before = load_before
    _count_round_trips()


def _count_round_trips() -> None:
    """Count the requests a client waits for a reply to: its round trips.

    Every request that expects a reply goes through ``Protocol.call_sync``
    (loads, votes, ``tpc_finish``, ``new_oids``, ...); a load already in
    flight is joined, not sent again.  The loads of one ``prefetch`` are
    sent together without waiting, so a prefetch batch counts once, however
    many objects it asks for; the one-way messages (``storea``) are no
    round trips.  Counted in the client's I/O thread.
    """
    from ZEO.asyncio.client import ClientIO, Protocol

    original_call = Protocol.call_sync

    def call_sync(self: Any, method: str, args: Any, *rest: Any, **kwargs: Any) -> Any:
        global _round_trips
        batch = _PREFETCH_BATCH.get()
        if batch:
            _batches_sent.add(batch)
        else:
            _round_trips += 1
        return original_call(self, method, args, *rest, **kwargs)

    Protocol.call_sync = call_sync
    original_prefetch = ClientIO.prefetch_co

    async def prefetch_co(self: Any, oids: Any, tid: bytes) -> Any:
        _batch_number[0] += 1
        _PREFETCH_BATCH.set(_batch_number[0])
        return await original_prefetch(self, oids, tid)

    ClientIO.prefetch_co = prefetch_co


class _ThreadRequests(ThreadLoadCounter):
    """A worker thread's share of its client's requests.

    With a client of its own ("unique") a worker counts all of them.  With
    one shared client each worker counts the requests for the objects it
    loaded itself, and the objects every worker loads (*shared_oids*: the
    root and the tool's top mapping) are counted once, by worker 0, so the
    workers' counts add up to the client's.
    """

    def __init__(
        self, client: int, worker: int, shared_client: bool, shared_oids: frozenset[bytes]
    ) -> None:
        self.client = client
        self.worker = worker
        self.shared_client = shared_client
        self.shared_oids = shared_oids
        self._before: dict[bytes, int] = {}

    def _requests(self) -> dict[bytes, int]:
        return (_by_client or {}).get(self.client, {})

    def start(self) -> None:
        self._before = dict(self._requests())

    def stop(self, loaded: list[bytes]) -> int | None:
        now = self._requests()
        if self.shared_client:
            oids = set(loaded) - self.shared_oids
            if self.worker == 0:
                oids |= self.shared_oids
        else:
            oids = set(now)
        return sum(now.get(oid, 0) - self._before.get(oid, 0) for oid in oids)


def _trace(storage: Any, path: str) -> None:
    """The client cache's trace in ZEO's own format, for any cache, at *path*.

    ZEO opens ``<cache file>.trace`` itself only for a persistent cache and
    only when ZEO_CACHE_TRACE is set (its ``_setup_trace``); this installs a
    tracer of the same records for every cache (see :class:`_LoadTracer`), whose
    file ZEO's ``close`` closes as its own.
    """
    from ZEO.cache import ClientCache

    if not path.endswith(TRACE_SUFFIX):
        raise ValueError(f"a trace path ends with {TRACE_SUFFIX}: {path}")
    cache = storage._cache
    cache._unsetup_trace()  # a trace ZEO opened itself (ZEO_CACHE_TRACE) is closed
    file = TraceFile(path, "zeo", int(cache.maxsize))
    io_thread = getattr(getattr(storage, "_server", None), "thread", None)
    record = struct.Struct(ClientCache.TRACE_FMT)
    cache._trace = _LoadTracer(file, record, getattr(io_thread, "ident", None))
    cache._tracefile = file


#: ZEO's trace codes for a load that missed: in ``load`` and in ``loadBefore``.
_LOAD_MISS = 0x20
_LOAD_BEFORE_MISS = 0x24
_MISSES = (_LOAD_MISS, _LOAD_BEFORE_MISS)


class _LoadTracer:
    """ZEO's ``_trace``, writing one load record per load a connection asked for.

    That is how the run's hit-rate row counts (ZEO's hits against the
    connections' loads), and what ZEO 6.2 does not do by itself:

    - ``ClientCache.loadBefore`` calls ``load``, which traces a miss (0x20),
      then traces the same miss again (0x24): the second is dropped (a
      0x24 on its own, current data too new for the transaction, is kept);
    - after a connection's miss, the client's I/O thread looks the object
      up again (``load_before_co``): that second look decides the record.
      It is a hit when a prefetch's answer arrived in between (ZEO counts
      that hit too), otherwise the held miss is written;
    - ``prefetch`` looks every object up in the I/O thread before asking
      the server: those lookups are no loads of a connection, not traced
      (the I/O thread's stores and invalidations are);
    - ``loadBefore`` passes ``tid=""`` for a miss, which ``struct.pack``
      refuses on Python 3: ``z64`` is written, as ZEO writes for None.
    """

    def __init__(self, file: TraceFile, record: struct.Struct, io_thread: int | None) -> None:
        self.file = file
        self.pack = record.pack
        self.io_thread = io_thread
        self.last: tuple[int, bytes] = (0, b"")  # the previous load record of a connection
        # oid -> a connection's miss, until the I/O thread looks too
        self.held: dict[bytes, bytes] = {}
        file.before_close = self._write_held  # a miss still held when the cache closes

    def __call__(
        self, code: int, oid: bytes = b"", tid: Any = z64, end_tid: Any = z64, dlen: int = 0
    ) -> None:
        record = self.pack(
            int(time.time()), (dlen << 8) + code, len(oid), tid or z64, end_tid or z64
        )
        if code & 0x70 != 0x20:
            self.file.write(record + oid)
        elif self.io_thread is not None and threading.get_ident() == self.io_thread:
            held = self.held.pop(oid, None)
            if held is not None:
                self.file.write(held if code in _MISSES else record + oid)
        else:
            repeated = code == _LOAD_BEFORE_MISS and self.last == (_LOAD_MISS, oid)
            self.last = (code, oid)
            if repeated:
                return
            self._write_held()  # this connection's earlier misses were answered
            if code in _MISSES and self.io_thread is not None:
                self.held[oid] = record + oid
            else:
                self.file.write(record + oid)

    def _write_held(self) -> None:
        for held in self.held.values():
            self.file.write(held)
        self.held.clear()


KIND = ZEOKind()


#: server_status's counts sampled, with their units (ZEO.monitor.StorageStats).
_STATUS = {
    "connections": "connections",
    "loads": "loads",
    "stores": "stores",
    "commits": "transactions",
    "aborts": "transactions",
    "conflicts": "conflicts",
    "conflicts_resolved": "conflicts",
    "active_txns": "transactions",
    "waiting": "transactions",
}


class _ServerStatus:
    """The ZEO server's statistics of the storage, asked through a client of the sampler's own.

    Its ``connections`` include that client.
    """

    name = "zeo"

    def __init__(self, storage: Any) -> None:
        self.storage = storage

    def read(self) -> dict[str, tuple[str, float]]:
        status = self.storage.server_status()
        reading: dict[str, tuple[str, float]] = {}
        for key, unit in _STATUS.items():
            value = status.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                reading[key] = (unit, value)
        if not reading:
            raise LookupError("the server's status has none of the counts")
        return reading

    def close(self) -> None:
        """The client storage is closed with its database."""
