"""Caches big enough for the objects a phase reads, unless the configuration chose.

steamin reads N objects from the pickle cache and hot from the storage's
client cache; with the defaults (5000 objects; ZEO 20 MB; RelStorage 10 MB)
a larger N measures evictions and reloads instead (at ``-n 10000`` steamin
cost 13–24 times more per object than at 1000).  So each process sizes them
from N before it opens the database: the pickle cache to N plus the
containers, the client caches (each storage kind its own, see
StorageKind.size_client_cache) to twice the estimated bytes of the objects
read through them (ZEO's cache is a ring buffer, RelStorage's evicts by
generation: both need room to spare).  A size the configuration wrote
(zodbshootout.config.keys) is the user's choice and is kept; if it is
smaller than the data, a note says so.
"""

from __future__ import annotations

from typing import Any

from zodbshootout import storages
from zodbshootout.config.keys import written
from zodbshootout.config.loader import ConfigSource, parse_source
from zodbshootout.storages.base import CacheWorkload

__all__ = ["CacheWorkload", "configured_cache_notes", "configured_cache_sizes", "size_caches"]


def size_caches(database_factory: Any, workload: CacheWorkload) -> list[str]:
    """Raise the caches of a database about to be opened; return notes on sizes kept.

    Sizes are only ever raised, and only where the configuration didn't set them.
    """
    notes = []
    section = database_factory.config
    objects = workload.pickle_cache_objects
    if not written(section, "cache-size"):
        section.cache_size = max(section.cache_size, objects)
    elif section.cache_size < objects:
        notes.append(
            f"the pickle cache (cache-size {section.cache_size} objects) is smaller than "
            f"the {objects} a worker's connection may hold ({workload.object_count} objects, "
            "their containers and a BTree's buckets): steamin and hot may reload objects"
        )
    for factory in storages.storage_factories(database_factory):
        notes.extend(storages.kind_of_factory(factory).size_client_cache(factory, workload))
    return notes


def configured_cache_notes(source: ConfigSource, name: str, workload: CacheWorkload) -> list[str]:
    """The notes :func:`size_caches` gives for database *name*, on a copy of its configuration.

    The runner says under the table what the workers' caches will be, without
    touching the configuration it keeps.
    """
    fresh = parse_source(source).databases[name]
    return [f"{name} (n={workload.object_count}): {note}" for note in size_caches(fresh, workload)]


def configured_cache_sizes(
    source: ConfigSource, name: str, workload: CacheWorkload
) -> dict[str, int]:
    """The sizes the workers' caches will have for *workload* (after sizing), on a copy
    of the configuration: ``pickle cache objects`` per connection, each client cache in bytes.
    """
    fresh = parse_source(source).databases[name]
    size_caches(fresh, workload)
    sizes = {"pickle cache objects": int(fresh.config.cache_size)}
    for factory in storages.storage_factories(fresh):
        sizes.update(storages.kind_of_factory(factory).client_cache_sizes(factory))
    return sizes
