"""Caches big enough for the objects a phase reads, unless the configuration chose.

steamin reads N objects from the pickle cache and hot from the storage's
client cache; with the defaults (5000 objects; ZEO 20 MB; RelStorage 10 MB)
a larger N measures evictions and reloads instead (at ``-n 10000`` steamin
cost 13–24 times more per object than at 1000).  So each worker sizes them
from N before it opens the database: the pickle cache to N plus the
containers, the client caches to twice the estimated bytes of the objects
it reads (ZEO's cache is a ring buffer, RelStorage's evicts by generation,
so they need room to spare).  A size the configuration sets explicitly is
kept as the user's choice; if it is smaller than the data, a note says so.

ZConfig fills in defaults, so whether a key was written is recorded while the
configuration is parsed (:func:`install_key_recording`).
"""

from __future__ import annotations

from typing import Any

import ZConfig.matcher

#: Bytes a cached object takes beyond its payload: its pickle's class
#: reference and state, its entry in the container's pickle, the cache's
#: own record.  An estimate, on the generous side.
OBJECT_OVERHEAD_BYTES = 256
MIB = 1 << 20

_RECORDED = "_zodbshootout_keys_written"


def install_key_recording() -> None:
    """Make every ZConfig section remember which keys its text wrote (idempotent)."""
    matcher_class = ZConfig.matcher.BaseMatcher
    if getattr(matcher_class.addValue, "_records_keys", False):
        return
    original = matcher_class.addValue

    def add_value(self: Any, key: str, value: Any, position: Any) -> Any:
        self.__dict__.setdefault(_RECORDED, set()).add(key.lower())
        return original(self, key, value, position)

    add_value._records_keys = True  # type: ignore[attr-defined]
    matcher_class.addValue = add_value


def written(section: Any, key: str) -> bool:
    """Whether the configuration text set *key* in *section* (a ZConfig SectionValue).

    Only known for configurations parsed after :func:`install_key_recording`;
    otherwise False, as if the default were in effect.
    """
    matcher = getattr(section, "_matcher", None)
    return key.lower() in getattr(matcher, _RECORDED, ())


def pickle_cache_objects(object_count: int) -> int:
    """Pickle cache target for reading *object_count* objects: them and their containers.

    The root, the tool's mapping and the worker's container, plus a BTree
    container's buckets (at least 15 objects per bucket): a tenth more.
    """
    return object_count + object_count // 10 + 100


def data_bytes(object_count: int, object_size_bytes: int, readers: int = 1) -> int:
    """Estimated bytes of the objects *readers* workers read through one client cache."""
    return readers * object_count * (object_size_bytes + OBJECT_OVERHEAD_BYTES)


def client_cache_bytes(object_count: int, object_size_bytes: int, readers: int = 1) -> int:
    """Client cache size for that data: twice its estimate, plus a MiB for the rest."""
    return 2 * data_bytes(object_count, object_size_bytes, readers) + MIB


def size_caches(
    database_factory: Any,
    storage_factories: list[Any],
    object_count: int,
    object_size_bytes: int,
    readers: int = 1,
) -> list[str]:
    """Raise the caches of a database about to be opened; return notes on kept sizes.

    *database_factory* is the ``<zodb>`` section's factory, *storage_factories*
    its storage factories (zodbshootout.storage.storage_factories); *readers*
    is how many workers read through one client cache (c with one DB shared
    by threads, else 1).  Sizes are only ever raised.
    """
    notes = []
    section = database_factory.config
    objects = pickle_cache_objects(object_count)
    if not written(section, "cache-size"):
        section.cache_size = max(section.cache_size, objects)
    elif section.cache_size < objects:
        notes.append(
            f"the pickle cache (cache-size {section.cache_size} objects) is smaller than "
            f"the {object_count} objects each worker reads: steamin and hot reload objects"
        )
    needed = client_cache_bytes(object_count, object_size_bytes, readers)
    data = data_bytes(object_count, object_size_bytes, readers)
    for factory in storage_factories:
        kind = type(factory).__name__
        config = factory.config
        if kind in ("ZEOClient", "EmbeddedZEO"):
            if not written(config, "cache-size"):
                config.cache_size = max(config.cache_size, needed)
            elif config.cache_size < data:
                notes.append(_smaller_note("ZEO cache (cache-size)", config.cache_size, data))
        elif kind == "RelStorageFactory":
            notes.extend(_size_relstorage(config, object_size_bytes, needed, data))
    return notes


def _size_relstorage(config: Any, object_size_bytes: int, needed: int, data: int) -> list[str]:
    from relstorage.options import Options

    notes = []
    # None when the section doesn't set it: RelStorage's Options default applies.
    megabytes = config.cache_local_mb
    if megabytes is None:
        config.cache_local_mb = max(Options.cache_local_mb, -(-needed // MIB))
    elif megabytes * MIB < data:
        notes.append(
            _smaller_note("RelStorage local cache (cache-local-mb)", megabytes * MIB, data)
        )
    # Objects above this size never enter the local cache: hot would read the database.
    largest = object_size_bytes + OBJECT_OVERHEAD_BYTES
    if config.cache_local_object_max is None:
        config.cache_local_object_max = max(Options.cache_local_object_max, largest)
    elif config.cache_local_object_max < largest:
        notes.append(
            f"RelStorage caches objects up to {config.cache_local_object_max} bytes "
            f"(cache-local-object-max), smaller than the objects: hot reads the database"
        )
    return notes


def _smaller_note(cache: str, size_bytes: int, data: int) -> str:
    return (
        f"the {cache} of {size_bytes / MIB:.0f} MB set in the configuration is smaller than "
        f"the ~{data / MIB:.0f} MB of objects read: hot may measure the server"
    )
