"""``--cache-trace DIR``: record the client caches' own access traces.

Both ZEO and RelStorage can write a trace of every cache access (load hit,
load miss, store, invalidation) in ZEO's trace format, which ZEO's
``cache_simul`` and ``cache_stats`` scripts read (see
:mod:`zodbshootout.cachesim`).  Left to themselves, they trace only
persistent caches:

- ZEO's ``ClientCache`` opens ``<cache file>.trace`` when the environment
  variable ``ZEO_CACHE_TRACE`` is set *and* the cache has a file (a ``client``
  name); a cache in a temporary file is never traced.
- RelStorage opens ``relstorage-trace-<prefix>.<pid>.trace`` in its
  ``cache-local-dir`` when ``ZEO_CACHE_TRACE`` is set, and traces nothing
  without a ``cache-local-dir``.

The tool wants a trace for every cache and in a directory of the user's
choice, so it switches on the libraries' own tracing itself, when the storage
is opened: ZEO's ``ClientCache._setup_trace`` pointed at a path in DIR, and
RelStorage's ``TracingStateCache`` with its ``ZEOTracer`` around the
storage's cache, exactly as RelStorage would build them.  One trace file per
worker process and stage, named after the database, count, concurrency,
repetition, stage and worker.

Tracing writes one record per cache access inside the timed region, so a
traced run's rates are not comparable with an untraced run's.
"""

from __future__ import annotations

import os
from typing import Any

from ZODB.utils import z64

from zodbshootout.caches import storage_kind

TRACE_SUFFIX = ".trace"

#: Told under the table of a traced run.
TIMING_NOTE = (
    "--cache-trace: every cache access wrote a trace record inside the timed "
    "region; compare these rates only with other traced runs"
)


def trace_path(prefix: str, stage: str, worker: int | str) -> str:
    """The trace file of one worker's stage: PREFIX-STAGE-wWORKER.trace."""
    return f"{prefix}-{stage}-w{worker}{TRACE_SUFFIX}"


def trace_on_open(database_factory: Any, path: str) -> None:
    """Make the database's storage trace its client cache to *path* once it is opened.

    The storage is wrapped before ZODB's DB sees it, so that every
    connection's storage instance (RelStorage derives each from the one
    opened here) writes to the same trace.  Storages without a client cache
    (FileStorage, MappingStorage) are left alone.
    """
    storage_factory = database_factory.config.storage
    original_open = storage_factory.open

    def open_traced() -> Any:
        storage = original_open()
        start_tracing(storage, path)
        return storage

    # An instance attribute: this factory only, in this process only.
    storage_factory.open = open_traced


def start_tracing(storage: Any, path: str) -> bool:
    """Trace *storage*'s client cache to *path*; False when it has none."""
    kind = storage_kind(storage)
    if kind == "zeo":
        _trace_zeo(storage._cache, path)
        return True
    if kind == "relstorage":
        _trace_relstorage(storage._cache, path)
        return True
    return False


def _trace_zeo(cache: Any, path: str) -> None:
    """ZEO's own tracing, opened at *path* whether the cache is persistent or not."""
    if not path.endswith(TRACE_SUFFIX):
        raise ValueError(f"a trace path ends with {TRACE_SUFFIX}: {path}")
    cache._unsetup_trace()  # a trace ZEO opened itself (ZEO_CACHE_TRACE) is closed
    saved = os.environ.get("ZEO_CACHE_TRACE")
    os.environ["ZEO_CACHE_TRACE"] = "1"  # _setup_trace reads it
    try:
        # ZEO appends ".trace" to the cache path it is given.
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


def _trace_relstorage(storage_cache: Any, path: str) -> None:
    """RelStorage's own tracer around the root storage cache's state cache."""
    from relstorage.cache._statecache_wrappers import TracingStateCache
    from relstorage.cache.trace import ZEOTracer

    state_cache = storage_cache.cache
    if isinstance(state_cache, TracingStateCache):
        # RelStorage traces already (ZEO_CACHE_TRACE and cache-local-dir): use ours.
        state_cache.tracer.close()
        state_cache = state_cache.cache
    tracer = ZEOTracer(open(path, "ab"))  # noqa: SIM115 (the tracer closes it)
    tracer.trace(0x00)  # a start record, as RelStorage writes one
    storage_cache.cache = _tracing_state_cache_class()(state_cache, tracer)


_tracing_class: Any = None


def _tracing_state_cache_class() -> Any:
    """RelStorage's TracingStateCache, with the membership test it lacks.

    RelStorage 4.x's prefetch asks ``(oid, tid) in cache``; TracingStateCache
    has no ``__contains__``, so Python falls back to indexing it with 0, 1, ...
    and prefetch fails with a TypeError.  A membership test is not a load:
    it is answered by the wrapped cache, untraced.
    """
    global _tracing_class
    if _tracing_class is None:
        from relstorage.cache._statecache_wrappers import TracingStateCache

        class ContainsTracingStateCache(TracingStateCache):  # type: ignore[misc]
            __slots__ = ()

            def __contains__(self, key: Any) -> bool:
                return key in self.cache

        _tracing_class = ContainsTracingStateCache
    return _tracing_class
