"""Describe a database before it is measured: what explains its numbers.

Server product and version, driver and its version, history mode, cache
settings, and the round-trip latency to the server (median of a few trivial
requests).  Read in the parent, outside any timed region; a probe that fails
leaves its field out and says why rather than guessing.
"""

from __future__ import annotations

from typing import Any

from zodbshootout import storages
from zodbshootout.config import ConfigSource, parse_source
from zodbshootout.database import open_database
from zodbshootout.redact import redact
from zodbshootout.storages.base import median_latency_seconds
from zodbshootout.storagesize import storage_size

__all__ = [
    "database_notes",
    "describe_database",
    "format_description",
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


def _versions(info: dict[str, Any]) -> list[str]:
    """The server's, ZEO's, RelStorage's and the driver's versions, as far as known."""
    parts = []
    if info.get("server_version"):
        parts.append(info["server_version"].split(" on ")[0].split(",")[0])
    if info.get("zeo_version"):
        protocol = info.get("server_protocol")
        parts.append(f"ZEO {info['zeo_version']}" + (f" (protocol {protocol})" if protocol else ""))
    if info.get("relstorage_version"):
        parts.append(f"RelStorage {info['relstorage_version']}")
    if info.get("driver"):
        version = info.get("driver_version")
        parts.append(f"driver {info['driver']}" + (f" {version}" if version else ""))
    return parts


def format_description(name: str, info: dict[str, Any]) -> str:
    """One readable line for ``-v``."""
    if info.get("kind") == "rawkv":
        return _floor_description(name, info)
    return _database_description(name, info)


def _database_description(name: str, info: dict[str, Any]) -> str:
    """The ``-v`` line of a ZODB database: server, driver, history, caches, latency."""
    parts = []
    if "database" in info:
        parts.append(str(info["database"]))
    parts.extend(_versions(info))
    if info.get("history"):
        parts.append(f"history-{info['history']}")
    if info.get("cache_servers"):
        parts.append("shared cache " + ",".join(info["cache_servers"]))
    if info.get("cache_local_dir") or info.get("persistent_cache"):
        parts.append("persistent client cache")
    if "latency_seconds" in info:
        parts.append(f"latency {info['latency_seconds'] * 1e6:.0f} µs")
    if "probe_error" in info:
        parts.append(f"(probe failed: {info['probe_error']})")
    if not parts:
        parts.append(info.get("storage", "?"))
    return f"{name}: " + ", ".join(parts)


def _floor_description(name: str, info: dict[str, Any]) -> str:
    """The ``-v`` line of a ``<rawkv>`` floor (see rawkv.floor.describe)."""
    version = info.get("library_version")
    library = f"{info['backend']} {version}" if version else info["backend"]
    sync = "sync" if info.get("sync") else "no sync"
    return f"{name}: raw key-value floor, {library}, {sync}, {info['path']}"


def _size_description(db: Any, factory: Any) -> dict[str, Any]:
    """How the storage's size is read for bytes/object, or why it can't be (see storagesize)."""
    try:
        reading = storage_size(db, factory)
    except Exception as e:
        return {"unknown": f"its size could not be read: {type(e).__name__}: {e}"}
    if reading.size_bytes is None:
        return {"unknown": reading.reason}
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
