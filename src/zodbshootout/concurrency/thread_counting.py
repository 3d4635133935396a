"""Count each worker's loads when the workers are threads of one process.

:func:`zodbshootout.phases.caches.counters` reads process-wide numbers: right for a
worker process, but the sum of all workers when they are threads.  Here each
worker thread's numbers are kept apart:

loads
    The objects this thread unghosted: the load counts ZODB keeps per
    connection (``getTransferCounts``), over the connections the worker
    opened (a shared DB: those its view of the DB handed out; a DB of its
    own: all of them), read before and after the phase.  With
    ``--counters``, the ``Connection.setstate`` calls made in the thread.
storage_loads
    Only with ``--counters`` for ZEO and RelStorage (None otherwise).
    FileStorage and MappingStorage: equal to loads (every load reads the
    store).  RelStorage: the object states its database driver returned in
    this thread (RelStorage reads in the calling thread), exact.  ZEO: the
    requests are sent by the client's I/O thread, so they are counted per
    client connection and object: with a DB per thread ("unique") a worker's
    count is all requests of its own client (exact); with one shared DB each
    worker counts the requests for the objects it loaded itself, and the two
    objects every worker loads (the root and the tool's top mapping) are
    counted once, by worker 0 — so the workers' counts add up to the client's.
cache_hits
    The storage client cache's hit counter.  With a DB per thread it is the
    worker's own.  A shared DB has one cache for all threads whose hits can't
    be told apart: worker 0 records the total for all workers and the others
    record None.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from ZODB.Connection import Connection

from zodbshootout import storages
from zodbshootout.phases import caches
from zodbshootout.phases.caches import Counters

_local = threading.local()
_installed = False
_install_lock = threading.Lock()


def install() -> None:
    """Start counting per thread in this process (idempotent).

    Wraps ``Connection.setstate``: one list append per load, in the timed
    region, the same order of cost as the storage kinds' request counters;
    so only with ``--counters``.
    """
    global _installed
    with _install_lock:
        if _installed:
            return
        original = Connection.setstate

        def setstate(self: Any, obj: Any) -> Any:
            loaded = getattr(_local, "loaded", None)
            if loaded is not None:
                loaded.append(obj._p_oid)
            return original(self, obj)

        Connection.setstate = setstate  # type: ignore[method-assign]
        _installed = True


class ThreadMeter:
    """One worker thread's counts over one phase: start(), the phase, stop().

    *shared_client*: the worker shares its DB (and so its storage client)
    with the other workers.  *shared_oids*: objects every worker loads,
    counted for worker 0 only (ZEO with a shared client).  How storage loads
    are told apart per thread is the storage kind's business
    (StorageKind.thread_load_counter).
    """

    def __init__(
        self,
        db: Any,
        worker: int,
        shared_client: bool,
        shared_oids: frozenset[bytes],
        connections: Callable[[], list[Any]] | None = None,
    ) -> None:
        self.db = db
        # The worker's connections (default: all of the DB's), for its load counts.
        self._connections = connections or (lambda: _all_connections(db))
        self._loads_before: dict[int, int] = {}
        self._storage_loads = storages.kind_of(db.storage).thread_load_counter(
            db.storage, worker, shared_client, shared_oids
        )
        self._records_cache_hits = worker == 0 or not shared_client
        self._hits_before: int | None = None
        self._kind = storages.kind_of(db.storage)
        self._statements_before: int | None = None

    def start(self) -> None:
        counting = _installed and storages.counting_requests()
        _local.loaded = [] if counting else None
        self._loads_before = _load_counts(_all_connections(self.db))
        if self._storage_loads is not None:
            self._storage_loads.start()
        if self._records_cache_hits:
            self._hits_before = caches.counters(self.db).cache_hits
        # Each worker thread has its own RelStorage instance and connections.
        self._statements_before = self._kind.statements(self.db.storage, this_thread=True)

    def stop(self) -> Counters:
        loaded: list[bytes] | None = getattr(_local, "loaded", None)
        _local.loaded = None
        storage_loads: int | None = None
        if loaded is not None:
            loads = len(loaded)
            if self._storage_loads is not None:
                storage_loads = self._storage_loads.stop(loaded)
        else:
            counts = _load_counts(self._connections())
            loads = sum(count - self._loads_before.get(key, 0) for key, count in counts.items())
            storage_loads = self._kind.storage_loads(self.db.storage, loads)
        cache_hits = None
        if self._records_cache_hits:
            now = caches.counters(self.db).cache_hits
            # RelStorage resets its hit counter now and then (when it drops
            # its cache); a negative difference is unknown, not a number.
            if now is not None and self._hits_before is not None and now >= self._hits_before:
                cache_hits = now - self._hits_before
        statements = self._kind.statements(self.db.storage, this_thread=True)
        if statements is not None and self._statements_before is not None:
            statements -= self._statements_before
        return Counters(
            loads=loads,
            storage_loads=storage_loads,
            cache_hits=cache_hits,
            statements=statements,
        )


def _all_connections(db: Any) -> list[Any]:
    found: list[Any] = []
    db._connectionMap(found.append)
    return found


def _load_counts(connections: list[Any]) -> dict[int, int]:
    """Each connection's cumulative load count (ZODB's own), by id."""
    return {id(conn): conn.getTransferCounts()[0] for conn in connections}
