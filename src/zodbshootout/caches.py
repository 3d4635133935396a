"""Empty the caches a phase must start without, and count where loads came from.

Three layers can answer a load: the connection's pickle cache (no load at
all), the storage's client cache (ZEO's cache file, RelStorage's local and
memcached caches), and the storage itself (the ZEO server, the SQL database,
the FileStorage file).  Each read phase empties a chosen set of layers first;
:func:`counters` reads how many loads each layer served, outside the timed
region, so tests (and curious users) can check that every phase measured the
layer it names.

Counting server requests needs one counter increment per request on the
client side (:func:`install_request_counters`); the storages keep the other
numbers themselves.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# Requests for object state sent to a server or database by this process,
# counted where the client sends them (see install_request_counters).
_requests_sent = {"zeo": 0, "relstorage": 0}
_installed: set[str] = set()

#: Called as ``observer(kind, client, oid)`` for every request counted above,
#: in the thread that sends it: when workers are threads of one process, the
#: process-wide totals must be split per worker (see thread_counting).
#: *client* is ZEO's connection object (None for RelStorage).
request_observer: Callable[[str, Any, Any], None] | None = None


@dataclass(frozen=True)
class Counters:
    """Cumulative counts at one moment; subtract two to get a phase's share.

    loads: object states the connections loaded from their storage (pickle
        cache misses).
    storage_loads: object states fetched from the backing store (server,
        database or file) rather than from a client cache; None if unknown.
    cache_hits: loads the storage's client cache answered; None when the
        storage has no client cache.
    """

    loads: int
    storage_loads: int | None
    cache_hits: int | None

    def __sub__(self, other: Counters) -> Counters:
        def minus(a: int | None, b: int | None) -> int | None:
            return None if a is None or b is None else a - b

        return Counters(
            loads=self.loads - other.loads,
            storage_loads=minus(self.storage_loads, other.storage_loads),
            cache_hits=minus(self.cache_hits, other.cache_hits),
        )


def storage_kind(storage: Any) -> str:
    """``zeo``, ``relstorage``, ``filestorage``, ``memory`` or ``other``."""
    module = type(storage).__module__
    if module.startswith("ZEO."):
        return "zeo"
    if module.startswith("relstorage."):
        return "relstorage"
    if module == "ZODB.FileStorage.FileStorage":
        return "filestorage"
    if module in ("ZODB.MappingStorage", "ZODB.DemoStorage"):
        return "memory"
    return "other"


def clear_pickle_cache(db: Any) -> None:
    """Ghostify every object in every pooled connection's pickle cache."""
    db.cacheMinimize()


def clear_storage_caches(db: Any) -> None:
    """Empty the storage's client caches, including shared ones (memcached).

    A storage kind whose caches this function doesn't know raises CellError
    rather than letting a cold read silently hit a cache.
    """
    from zodbshootout.errors import CellError

    storage = db.storage
    kind = storage_kind(storage)
    if kind == "zeo":
        storage._cache.clear()
    elif kind == "relstorage":
        # load_persistent=False: a cold read must not be refilled from the
        # persistent cache file either.
        storage._cache.clear(load_persistent=False)
    elif kind in ("filestorage", "memory"):
        pass  # no client cache: every load goes to the file or the memory store
    else:
        raise CellError(
            f"zodbshootout doesn't know how to empty the caches of {type(storage).__name__}"
        )
    from zodbshootout.blobs import clear_blob_cache

    clear_blob_cache(storage)


def install_request_counters(db: Any) -> None:
    """Count, in this process, the object loads the storage sends to its server.

    ZEO: every ``loadBefore`` request the client protocol puts on the wire
    (loads and prefetches; a request already in flight is not sent twice).
    RelStorage: every object state the mover reads from the database.
    """
    kind = storage_kind(db.storage)
    if kind in _installed:
        return
    if kind == "zeo":
        _count_zeo_requests()
    elif kind == "relstorage":
        _count_relstorage_reads(db.storage)
    _installed.add(kind)


def _count_zeo_requests() -> None:
    from ZEO.asyncio.client import Protocol

    original = Protocol.load_before

    def load_before(self: Any, oid: bytes, tid: bytes) -> Any:
        if (oid, tid) not in self.futures:
            _requests_sent["zeo"] += 1
            if request_observer is not None:
                request_observer("zeo", self.client, oid)
        return original(self, oid, tid)

    Protocol.load_before = load_before


def _count_relstorage_reads(storage: Any) -> None:
    mover_class = type(storage._adapter.mover)
    load_current = mover_class.load_current
    load_currents = mover_class.load_currents

    def counted_load_current(self: Any, cursor: Any, oid: int) -> Any:
        _requests_sent["relstorage"] += 1
        if request_observer is not None:
            request_observer("relstorage", None, oid)
        return load_current(self, cursor, oid)

    def counted_load_currents(self: Any, cursor: Any, oids: Any) -> Any:
        for row in load_currents(self, cursor, oids):
            _requests_sent["relstorage"] += 1
            if request_observer is not None:
                request_observer("relstorage", None, row[0])
            yield row

    mover_class.load_current = counted_load_current
    mover_class.load_currents = counted_load_currents


def counters(db: Any) -> Counters:
    """The cumulative counts of this process's database, read without side effects."""
    loads = [0]

    def add_loads(conn: Any) -> None:
        loads[0] += conn.getTransferCounts()[0]

    db._connectionMap(add_loads)
    storage = db.storage
    kind = storage_kind(storage)
    storage_loads: int | None = None
    cache_hits: int | None = None
    if kind == "zeo":
        storage_loads = _requests_sent["zeo"] if "zeo" in _installed else None
        cache_hits = storage._cache.getStats()[4]
    elif kind == "relstorage":
        storage_loads = _requests_sent["relstorage"] if "relstorage" in _installed else None
        cache_hits = storage._cache.local_client.stats()["hits"]
    elif kind in ("filestorage", "memory"):
        storage_loads = loads[0]
    return Counters(loads=loads[0], storage_loads=storage_loads, cache_hits=cache_hits)
