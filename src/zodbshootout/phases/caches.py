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
numbers themselves.  What differs per storage kind lives in zodbshootout.storages.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from zodbshootout import storages
from zodbshootout.workload import blobs


@dataclass(frozen=True)
class Counters:
    """Cumulative counts at one moment; subtract two to get a phase's share.

    loads: object states the connections loaded from their storage (pickle
        cache misses).
    storage_loads: object states fetched from the backing store (server,
        database or file) rather than from a client cache; None if unknown.
    cache_hits: loads the storage's client cache answered; None when the
        storage has no client cache.
    statements: requests sent to an SQL database (RelStorage); None: not counted.
    stores: object states the connections stored (committed or not).
    cache_fills: objects the client cache took from the server, by its own
        count (ZEO's cache's ``adds``); None when the storage keeps none.
    """

    loads: int
    storage_loads: int | None
    cache_hits: int | None
    statements: int | None = None
    stores: int = 0
    cache_fills: int | None = None

    def __sub__(self, other: Counters) -> Counters:
        def minus(a: int | None, b: int | None) -> int | None:
            return None if a is None or b is None else a - b

        stores = self.stores - other.stores
        storage_loads = minus(self.storage_loads, other.storage_loads)
        if storage_loads is None and stores == 0:
            # Without per-request counting: a client cache keeps every object
            # the server sends it, and, when nothing was stored, nothing else.
            storage_loads = minus(self.cache_fills, other.cache_fills)
        return Counters(
            loads=self.loads - other.loads,
            storage_loads=storage_loads,
            cache_hits=minus(self.cache_hits, other.cache_hits),
            statements=minus(self.statements, other.statements),
            stores=stores,
            cache_fills=minus(self.cache_fills, other.cache_fills),
        )


def clear_pickle_cache(db: Any) -> None:
    """Ghostify every object in every pooled connection's pickle cache."""
    db.cacheMinimize()


def clear_storage_caches(db: Any) -> None:
    """Empty the storage's client caches, including shared ones (memcached) and blobs.

    A storage kind whose caches zodbshootout doesn't know raises CellError
    rather than letting a cold read silently hit a cache.
    """
    storages.kind_of(db.storage).clear_client_cache(db.storage)
    blobs.clear_blob_cache(db.storage)  # the directory is the kind's (blob_cache_dir)


def install_request_counters(db: Any) -> None:
    """Count, in this process, the object loads the storage sends to its server.

    ZEO: every ``loadBefore`` request the client protocol puts on the wire
    (loads and prefetches; a request already in flight is not sent twice).
    RelStorage: every object state the mover reads from the database.
    Only with ``--counters`` (storages.count_requests): otherwise the
    storage loads of ZEO and RelStorage are not counted (None).
    """
    if not storages.counting_requests():
        return
    storages.kind_of(db.storage).install_request_counters(db.storage)


def counters(db: Any) -> Counters:
    """The cumulative counts of this process's database, read without side effects."""
    loads = [0, 0]  # loads, stores

    def add_loads(conn: Any) -> None:
        loaded, stored = conn.getTransferCounts()
        loads[0] += loaded
        loads[1] += stored

    db._connectionMap(add_loads)
    storage = db.storage
    kind = storages.kind_of(storage)
    return Counters(
        loads=loads[0],
        storage_loads=kind.storage_loads(storage, loads[0]),
        cache_hits=kind.cache_hits(storage),
        statements=kind.statements(storage, this_thread=False),
        stores=loads[1],
        cache_fills=kind.cache_fills(storage),
    )
