"""Describe a database before it is measured: what explains its numbers.

Server product and version, driver and its version, history mode, cache
settings, and the round-trip latency to the server (median of a few trivial
requests).  Read in the parent, outside any timed region; a probe that fails
leaves its field out and says why rather than guessing.
"""

from __future__ import annotations

from typing import Any

from zodbshootout import storages
from zodbshootout.config.loader import ConfigSource, parse_source
from zodbshootout.database.open import open_database
from zodbshootout.probes.storage_size import storage_size
from zodbshootout.redact import redact
from zodbshootout.storages.base import median_latency_seconds

__all__ = [
    "database_notes",
    "describe_database",
    "median_latency_seconds",
    "probe_database",
]


def describe_database(db: Any) -> dict[str, Any]:
    """Facts about an open database; values are plain JSON-able data.

    A probe that fails keeps the facts found before it and says why.
    """
    storage = db.storage
    kind = storages.kind_of(storage)
    info: dict[str, Any] = {
        "storage": f"{type(storage).__module__}.{type(storage).__name__}",
        "kind": kind.name,
        "pickle_cache_objects": db.getCacheSize(),
    }
    try:
        kind.describe(storage, info)
    except Exception as e:  # a probe must never cost the measurement
        info["probe_error"] = f"{type(e).__name__}: {e}"
    return info


def database_notes(db: Any, name: str, info: dict[str, Any], gevent_mode: bool) -> list[str]:
    """The notes under the table that *info* (from describe_database) calls for."""
    return storages.kind_of(db.storage).notes(name, info, gevent_mode)


def _size_description(db: Any, factory: Any) -> dict[str, Any]:
    """How the storage's size is read for bytes/object, or why it can't be (see storagesize)."""
    try:
        reading = storage_size(db, factory)
    except Exception as e:
        return {"unknown": f"its size could not be read: {type(e).__name__}: {e}"}
    if reading.size_bytes is None:
        return {"unknown": reading.reason}
    if reading.granularity_bytes:
        return {"method": reading.method, "granularity_bytes": reading.granularity_bytes}
    return {"method": reading.method}


def probe_database(
    source: ConfigSource,
    name: str,
    addresses: list[tuple[str, int]],
    secrets: set[str],
    gevent_mode: bool,
) -> tuple[dict[str, Any], list[str]]:
    """Open *name* in this process and describe it: (facts, notes for under the table)."""
    db = open_database(source, name, addresses, client_label="probe")
    try:
        info = describe_database(db)
        notes = database_notes(db, name, info, gevent_mode)
        info["size"] = _size_description(db, parse_source(source).databases[name])
    finally:
        db.close()
    if "probe_error" in info:
        info["probe_error"] = redact(info["probe_error"], secrets)
    return info, notes
