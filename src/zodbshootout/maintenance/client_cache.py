"""A restarted client's first transaction with and without its persistent cache (relstorage#513).

``first-transaction-warm`` first fills the persistent client cache (ZEO's
``client`` file, RelStorage's ``cache-local-dir``) in a process of its own,
untimed, under the client label the timed process uses, by loading N of the
fill's objects and closing (RelStorage writes its cache files on close).
The timed process then opens the database, which reads and checks that
cache, and commits its first transaction.  ``first-transaction-cold`` does
the same with the persistent cache turned off in its section.  Both report
how many objects the client cache held right after opening (read untimed).
"""

from __future__ import annotations

from typing import Any

from zodbshootout import storages
from zodbshootout.workload.root import ROOT_KEY

NO_CACHE = "its section has no persistent client cache (ZEO's client, RelStorage's cache-local-dir)"


def persistent_caches(database_factory: Any) -> list[tuple[Any, str]]:
    """The (factory, key) of each persistent client cache the database opens."""
    found = []
    for factory in storages.storage_factories(database_factory):
        key = storages.kind_of_factory(factory).persistent_cache_key(factory)
        if key is not None:
            found.append((factory, key))
    return found


def problem(database_factory: Any) -> str | None:
    """Why the database opens no persistent client cache, or None."""
    found = persistent_caches(database_factory)
    ignored = [
        storages.kind_of_factory(factory).persistent_cache_ignored(factory) for factory, _ in found
    ]
    if not found:
        return NO_CACHE
    return ignored[0] if all(ignored) else None


def turn_off(database_factory: Any) -> None:
    """The database's persistent client caches off: caches in memory alone."""
    for factory, key in persistent_caches(database_factory):
        setattr(factory.config, key, None)


def warm(db: Any, objects: int | None) -> int:
    """Load up to *objects* (None: all) of the fill's objects into the client cache; how many.

    The cache is emptied first, so that it holds those objects (and the
    tree's nodes on the way), not what an earlier run left in it.
    """
    storages.kind_of(db.storage).clear_client_cache(db.storage)
    conn = db.open()
    loaded = 0
    try:
        top = conn.root().get(ROOT_KEY)
        fill = top.get("fill") if top is not None else None
        if fill is None or objects == 0:
            return 0
        for value in fill["tree"].values():
            value._p_activate()  # its state, through the storage's cache
            loaded += 1
            if objects is not None and loaded >= objects:
                break
    finally:
        conn.close()
    return loaded


def cache_objects(db: Any) -> int | None:
    """The objects in the storage's client cache now (ZEO's and RelStorage's own count)."""
    cache = getattr(db.storage, "_cache", None)
    try:
        return None if cache is None else len(cache)
    except TypeError:
        return None
