"""Count each worker's loads when the workers are threads of one process.

:func:`zodbshootout.caches.counters` reads process-wide numbers: right for a
worker process, but the sum of all workers when they are threads.  Here each
worker thread's numbers are kept apart:

loads
    The objects this thread unghosted (``Connection.setstate`` calls made in
    the thread), exact in every mode.
storage_loads
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
from typing import Any

from ZODB.Connection import Connection

from zodbshootout import caches
from zodbshootout.caches import Counters

_local = threading.local()
_installed = False
_install_lock = threading.Lock()

# ZEO requests by client connection (id of ZEO's ClientIO) and oid.  Written
# by each client's I/O thread only, read between phases when no request is
# in flight.
_zeo_requests: dict[int, dict[bytes, int]] = {}


def install() -> None:
    """Start counting per thread in this process (idempotent).

    Wraps ``Connection.setstate``: one list append per load, in the timed
    region, the same order of cost as the request counters of caches.
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
        caches.request_observer = _observe
        _installed = True


def _observe(kind: str, client: Any, oid: Any) -> None:
    if kind == "zeo":
        per_client = _zeo_requests.setdefault(id(client), {})
        per_client[oid] = per_client.get(oid, 0) + 1
    elif kind == "relstorage" and getattr(_local, "loaded", None) is not None:
        _local.relstorage_requests += 1


def _zeo_client_id(storage: Any) -> int | None:
    """id of the ZEO client connection object that the request counter sees."""
    server = getattr(storage, "_server", None)
    client = getattr(server, "client", None)
    return None if client is None else id(client)


class ThreadMeter:
    """One worker thread's counts over one phase: start(), the phase, stop().

    *shared_client*: the worker shares its DB (and so its storage client)
    with the other workers.  *shared_oids*: objects every worker loads,
    counted for worker 0 only (ZEO with a shared client).
    """

    def __init__(
        self, db: Any, worker: int, shared_client: bool, shared_oids: frozenset[bytes]
    ) -> None:
        self.db = db
        self.worker = worker
        self.shared_client = shared_client
        self.shared_oids = shared_oids
        self.kind = caches.storage_kind(db.storage)
        self._zeo_client = _zeo_client_id(db.storage) if self.kind == "zeo" else None
        self._records_cache_hits = worker == 0 or not shared_client
        self._zeo_before: dict[bytes, int] = {}
        self._hits_before: int | None = None

    def start(self) -> None:
        _local.loaded = []
        _local.relstorage_requests = 0
        if self._zeo_client is not None:
            self._zeo_before = dict(_zeo_requests.get(self._zeo_client, {}))
        if self._records_cache_hits:
            self._hits_before = caches.counters(self.db).cache_hits

    def stop(self) -> Counters:
        loaded: list[bytes] = getattr(_local, "loaded", None) or []
        relstorage_requests = getattr(_local, "relstorage_requests", 0)
        _local.loaded = None
        storage_loads: int | None
        if self.kind in ("filestorage", "memory"):
            storage_loads = len(loaded)
        elif self.kind == "relstorage":
            storage_loads = relstorage_requests
        elif self.kind == "zeo":
            storage_loads = self._zeo_requests_of(loaded)
        else:
            storage_loads = None
        cache_hits = None
        if self._records_cache_hits:
            now = caches.counters(self.db).cache_hits
            # RelStorage resets its hit counter now and then (when it drops
            # its cache); a negative difference is unknown, not a number.
            if now is not None and self._hits_before is not None and now >= self._hits_before:
                cache_hits = now - self._hits_before
        return Counters(loads=len(loaded), storage_loads=storage_loads, cache_hits=cache_hits)

    def _zeo_requests_of(self, loaded: list[bytes]) -> int | None:
        if self._zeo_client is None:
            return None
        now = _zeo_requests.get(self._zeo_client, {})
        before = self._zeo_before
        if self.shared_client:
            oids = set(loaded) - self.shared_oids
            if self.worker == 0:
                oids |= self.shared_oids
        else:
            oids = set(now)
        return sum(now.get(oid, 0) - before.get(oid, 0) for oid in oids)
