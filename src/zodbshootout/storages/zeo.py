"""ZEO clients: of a server the user runs (``<zeoclient>``) or the tool runs (``<embeddedzeo>``).

The client keeps a cache (in memory or, with ``client``, in a persistent
file that one process locks) and, with its own ``blob-dir``, a blob cache.
Load requests are counted where the client protocol sends them; they are
sent by the client's I/O thread, so a worker thread's share is found per
client connection and object (see :class:`_ThreadRequests`).
"""

from __future__ import annotations

from typing import Any

from zodbshootout.config_keys import written
from zodbshootout.embedded_zeo import EmbeddedZEO
from zodbshootout.storages.base import (
    CacheWorkload,
    StorageKind,
    ThreadLoadCounter,
    median_latency_seconds,
    package_version,
    smaller_than_data_note,
    zodb_config_factory,
)

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


KIND = ZEOKind()
