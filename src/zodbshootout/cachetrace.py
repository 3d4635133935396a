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
choice, so each storage kind switches on its library's own tracing itself
when the storage is opened (``StorageKind.trace_client_cache``), before the
DB derives its connections' storages from it.  One trace file per worker
process and stage, named after the database, count, concurrency,
repetition, stage and worker.

Tracing writes one record per cache access inside the timed region, so a
traced run's rates are not comparable with an untraced run's.
"""

from __future__ import annotations

from typing import Any

from zodbshootout import storages
from zodbshootout.storages.base import TRACE_SUFFIX

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

    The storage factory's ``open`` is wrapped (in this process, for this
    factory only), so the trace starts before ZODB's DB opens its first
    connection.  Storages without a client cache are left alone.
    """
    storage_factory = database_factory.config.storage
    original_open = storage_factory.open

    def open_traced() -> Any:
        storage = original_open()
        storages.kind_of(storage).trace_client_cache(storage, path)
        return storage

    storage_factory.open = open_traced
