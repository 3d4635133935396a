"""The maintenance operations, each timed in a process of its own (see :mod:`.child`).

Each one opens the database, reads its size and object count (untimed),
starts a new memory peak, times the operation alone, reads the peak and the
size and count again.  What is timed:

pack
    ``DB.pack(now)``: the storage's own pack with its configured garbage
    collection (FileStorage, RelStorage; through ZEO the server packs).
pack-nogc
    The same with ``pack-gc false`` set on the storage's section: old
    revisions go, unreachable objects stay (FileStorage, RelStorage).
gc
    zc.zodbdgc's external garbage collection, between two packs without GC
    (untimed: the history, then its deletion records; :mod:`.external_gc`).
pack-under-load
    The pack while a ``mix`` workload runs on the same database
    (:mod:`.load`): storages several processes can share.
open
    Opening the database (the storage, its index or caches, the root).
reindex
    FileStorage without its ``.index`` file: opening rebuilds the index by
    reading the whole data file (the file is removed first; FileStorage
    writes it again on close).
index-write
    FileStorage's index written to its ``.index`` file.
first-transaction
    Opening the database and committing a first (read) transaction that
    walks to the fill's tree: what a restarted application waits for, with
    whatever persistent client cache the configuration gives.
first-transaction-warm, first-transaction-cold
    The same after the persistent client cache was filled with N objects,
    and with the persistent cache turned off (:mod:`.client_cache`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import transaction

from zodbshootout import storages
from zodbshootout.config.loader import ConfigSource, LoadedConfig, parse_source
from zodbshootout.database.open import open_database
from zodbshootout.database.state import pack_own_files, refuse_foreign_data
from zodbshootout.maintenance import memory
from zodbshootout.maintenance.fill import fill_state
from zodbshootout.probes.storage_size import storage_size
from zodbshootout.workload.root import ROOT_KEY

OPERATIONS = (
    "pack", "pack-nogc", "pack-under-load", "gc", "open", "reindex", "index-write",
    "first-transaction", "first-transaction-warm", "first-transaction-cold",
)  # fmt: skip
#: The operations that pack (each after the first at a size starts from a refill).
PACKS = ("pack", "pack-nogc", "pack-under-load", "gc")
#: The operations that time the opening itself.
OPENING = (
    "open", "reindex", "first-transaction", "first-transaction-warm", "first-transaction-cold",
)  # fmt: skip
#: The persistent client cache filled first (untimed, by maintain in a process of its own).
WARM_CACHE = "warm-cache"


def storage_section(factory: Any) -> Any:
    """The storage section of a ``<zodb>`` section's factory."""
    return factory.config.storage.config


def not_applicable(operation: str, factory: Any) -> str | None:
    """Why *operation* does not apply to the database of *factory*, or None."""
    section = storage_section(factory)
    names = section.getSectionAttributes()
    if operation == "pack-nogc" and "pack_gc" not in names:
        return "its storage section has no pack-gc (a server's storage packs as it is set up)"
    if operation == "gc":
        from zodbshootout.maintenance import external_gc

        return external_gc.missing() or (None if "pack_gc" in names else external_gc.NEEDS_PACK_GC)
    if operation in ("reindex", "index-write") and not ("path" in names and "packer" in names):
        return "only a FileStorage opened by the tool keeps an index file"
    if operation in ("first-transaction-warm", "first-transaction-cold"):
        from zodbshootout.maintenance import client_cache

        return client_cache.problem(factory)
    if operation == "pack-under-load":
        from zodbshootout import concurrency
        from zodbshootout.maintenance.load import LOAD_WORKERS

        mode = concurrency.mode_of(concurrency.PROCESSES)
        return mode.problem(concurrency.SHARED, LOAD_WORKERS + 1, factory) or None
    return None


def run_operation(
    request: dict[str, Any], ready: Callable[[], None] = lambda: None
) -> dict[str, Any]:
    """Run one operation as *request* says; its plain record (see the module doc).

    *ready()* is called just before the timed region of an operation on an
    open database, and returns when it may start (a pack under load waits
    there for the foreground's lead).
    """
    source = ConfigSource(**request["source"])
    name, operation = request["database"], request["operation"]
    config = parse_source(source)
    factory = config.databases[name]
    section = storage_section(factory)
    if operation in ("pack-nogc", "gc"):
        section.pack_gc = False  # (opened from this parsed config, below)
    if operation == "reindex":
        with _opened(config, name, request) as db:
            refuse_foreign_data(db)  # before removing anything
        index = section.path + ".index"
        if os.path.exists(index):
            os.remove(index)
    if operation == "first-transaction-cold":
        from zodbshootout.maintenance.client_cache import turn_off

        turn_off(factory)
    if operation == WARM_CACHE:
        return _warm(config, name, request)
    if operation in OPENING:
        return _timed_open(config, name, request, operation)
    with _opened(config, name, request) as db:
        refuse_foreign_data(db)
        work, done = _work(operation, db, factory)
        # Read at the cue: a foreground loads its dataset while this process waits.
        ready()
        before = _state(db, factory)
        memory.reset_peak()
        started_at = time.time()  # (the wall clock, for a foreground's phases)
        started = time.perf_counter()
        problem = work()
        seconds = time.perf_counter() - started
        ended_at = time.time()
        peak = memory.peak_rss_bytes()
        extra = done()
        after = _state(db, factory)
        record = {**_record(seconds, peak, before, after, problem), **extra}
    return {**record, "wall": [started_at, ended_at]}


def _work(
    operation: str, db: Any, factory: Any
) -> tuple[Callable[[], str | None], Callable[[], dict[str, Any]]]:
    """The timed work, and what to add to the record after it (untimed)."""
    if operation == "gc":
        from zodbshootout.maintenance.external_gc import Collection

        collection = Collection(db, factory)
        collection.prepare()
        return collection.run, collection.finish
    if operation in ("pack", "pack-nogc"):
        return (lambda: pack_own_files(db, factory)), dict
    return (lambda: db.storage._save_index()), dict  # index-write


def _timed_open(
    config: LoadedConfig, name: str, request: dict[str, Any], operation: str
) -> dict[str, Any]:
    """Open (and for first-transaction*, a first transaction) timed; the cache counted between."""
    from zodbshootout.maintenance.client_cache import cache_objects

    factory = config.databases[name]
    memory.reset_peak()
    started = time.perf_counter()
    db = _open(config, name, request)
    try:
        seconds = time.perf_counter() - started
        cached = cache_objects(db)  # (untimed: between the two timed parts)
        if operation.startswith("first-transaction"):
            started = time.perf_counter()
            _first_transaction(db)
            seconds += time.perf_counter() - started
        peak = memory.peak_rss_bytes()
        refuse_foreign_data(db)  # (a refusal is still the record's answer)
        state = _state(db, factory)
    finally:
        db.close()
    return {**_record(seconds, peak, state, state, None), "cache_objects": cached}


def _first_transaction(db: Any) -> None:
    """A first (read) transaction that walks to the fill's tree."""
    tm = transaction.TransactionManager(explicit=True)
    conn = db.open(transaction_manager=tm)
    tm.begin()
    top = conn.root().get(ROOT_KEY)
    fill = top.get("fill") if top is not None else None
    if fill is not None:
        fill["tree"].minKey()
    tm.commit()
    conn.close()


def _warm(config: LoadedConfig, name: str, request: dict[str, Any]) -> dict[str, Any]:
    """The persistent client cache filled with the fill's objects (untimed)."""
    from zodbshootout.maintenance.client_cache import warm

    with _opened(config, name, request) as db:
        refuse_foreign_data(db)
        return {"warmed": warm(db, request.get("cache_objects"))}


def _open(config: LoadedConfig, name: str, request: dict[str, Any]) -> Any:
    """The database, opened from *config* (as the operation may have changed it)."""
    return open_database(
        config.source, name, request["addresses"], client_label="maintain", config=config
    )


class _opened:
    def __init__(self, config: LoadedConfig, name: str, request: dict[str, Any]) -> None:
        self.db = _open(config, name, request)

    def __enter__(self) -> Any:
        return self.db

    def __exit__(self, *exc: object) -> None:
        self.db.close()


def _state(db: Any, factory: Any) -> dict[str, Any]:
    size = storage_size(db, factory)
    marker = fill_state(db)
    return {
        "bytes": size.size_bytes,
        "bytes_method": size.method if size.size_bytes is not None else size.reason,
        "objects": storages.kind_of(db.storage).object_count(db.storage),
        "filled": marker["done"] if marker else 0,
    }


def _record(
    seconds: float,
    peak: int | None,
    before: dict[str, Any],
    after: dict[str, Any],
    problem: str | None,
) -> dict[str, Any]:
    return {
        "seconds": seconds,
        "peak_rss_bytes": peak,
        "bytes_before": before["bytes"],
        "bytes_after": after["bytes"],
        "bytes_method": after["bytes_method"],
        "objects_before": before["objects"],
        "objects_after": after["objects"],
        "reason": problem,
        "filled": after["filled"],
    }
