"""ZEO clients: of a server the user runs (``<zeoclient>``) or the tool runs (``<embeddedzeo>``).

The client keeps a cache (in memory or, with ``client``, in a persistent
file that one process locks) and, with its own ``blob-dir``, a blob cache.
Load requests are counted where the client protocol sends them; they are
sent by the client's I/O thread, so a worker thread's share is found per
client connection and object (see :class:`_ThreadRequests`).
"""

from __future__ import annotations

import os
from typing import Any

from ZODB.utils import z64

from zodbshootout.config_keys import written
from zodbshootout.embedded_zeo import EmbeddedZEO
from zodbshootout.storages.base import (
    TRACE_SUFFIX,
    CacheWorkload,
    SizeReading,
    StorageKind,
    ThreadLoadCounter,
    median_latency_seconds,
    package_version,
    smaller_than_data_note,
    zodb_config_factory,
)
from zodbshootout.storages.filestorage import file_length

# loadBefore requests this process put on the wire, once counting is installed.
_requests_sent = 0
_installed = False
# The same requests by client connection (id of ZEO's ClientIO) and oid, once
# a thread counter asked for them.  Written by each client's I/O thread only,
# read between phases when no request is in flight.
_by_client: dict[int, dict[bytes, int]] | None = None


class ZEOKind(StorageKind):
    name = "zeo"
    one_client_per_gevent_process = True

    def owns(self, storage: Any) -> bool:
        return type(storage).__module__.startswith("ZEO.")

    def owns_factory(self, factory: Any) -> bool:
        return isinstance(factory, EmbeddedZEO) or zodb_config_factory(factory, "ZEOClient")

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
        return _requests_sent if _installed else None

    def cache_hits(self, storage: Any) -> int | None:
        return int(storage._cache.getStats()[4])

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

    def trace_client_cache(self, storage: Any, path: str) -> bool:
        _trace(storage._cache, path)
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


def _trace(cache: Any, path: str) -> None:
    """ZEO's own tracing, opened at *path* whether the cache is persistent or not.

    ZEO opens ``<cache file>.trace`` itself only for a persistent cache and
    only when ZEO_CACHE_TRACE is set; its ``_setup_trace`` takes the path
    without ".trace" and reads that variable.
    """
    if not path.endswith(TRACE_SUFFIX):
        raise ValueError(f"a trace path ends with {TRACE_SUFFIX}: {path}")
    cache._unsetup_trace()  # a trace ZEO opened itself (ZEO_CACHE_TRACE) is closed
    saved = os.environ.get("ZEO_CACHE_TRACE")
    os.environ["ZEO_CACHE_TRACE"] = "1"
    try:
        cache._setup_trace(path[: -len(TRACE_SUFFIX)])
    finally:
        if saved is None:
            del os.environ["ZEO_CACHE_TRACE"]
        else:
            os.environ["ZEO_CACHE_TRACE"] = saved
    if cache._tracefile is None:
        raise OSError(f"ZEO could not open the cache trace {path}")
    cache._trace = _one_record_per_load(cache._trace)


#: ZEO's trace codes for a load that missed: in ``load`` and in ``loadBefore``.
_LOAD_MISS = 0x20
_LOAD_BEFORE_MISS = 0x24


def _one_record_per_load(trace: Any) -> Any:
    """ZEO's tracer, fixed in two ways for ZEO 6 on Python 3 (the records are ZEO's own).

    - ``ClientCache.loadBefore`` traces a miss with ``tid=""``, which
      ``struct.pack`` refuses: the first cold load would fail.  ZEO writes
      ``z64`` for a tid of None; "" means the same.
    - ``loadBefore`` calls ``load``, which traces the miss (0x20), then
      traces it again itself (0x24): cache_stats and cache_simul would count
      every miss twice.  The second record of the same miss is dropped; a
      0x24 on its own (current data too new for the transaction) is kept.
    """
    last: list[Any] = [None, b""]  # code and oid of the previous record

    def trace_once(
        code: int, oid: bytes = b"", tid: Any = z64, end_tid: Any = z64, dlen: int = 0
    ) -> None:
        repeated = code == _LOAD_BEFORE_MISS and last == [_LOAD_MISS, oid]
        last[:] = [code, oid]
        if not repeated:
            trace(code, oid, tid or z64, end_tid or z64, dlen)

    return trace_once


KIND = ZEOKind()
