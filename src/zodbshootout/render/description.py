"""The ``-v`` line of a database: what :mod:`zodbshootout.database.info` found, in words.

A pure function of the saved description (plain data), so that ``show``
prints it for a result file without opening anything.
"""

from __future__ import annotations

from typing import Any

__all__ = ["format_description", "is_floor"]


def is_floor(info: dict[str, Any]) -> bool:
    """Whether a saved description is a ``<rawkv>`` floor's (it names its store's library)."""
    return "backend" in info


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
    if is_floor(info):
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
    parts.extend(_cache_sizes(info.get("cache_sizes") or {}))
    if "probe_error" in info:
        parts.append(f"(probe failed: {info['probe_error']})")
    if not parts:
        parts.append(info.get("storage", "?"))
    return f"{name}: " + ", ".join(parts)


def _cache_sizes(by_count: dict[str, dict[str, int]]) -> list[str]:
    """``caches at n=1000: pickle cache 1,002 objects, ZEO cache 40.0 MiB``, per count."""
    parts = []
    for count, sizes in by_count.items():
        texts = [
            f"pickle cache {size:,} objects"
            if name == "pickle cache objects"
            else f"{name} {size / 2**20:.1f} MiB"
            for name, size in sizes.items()
        ]
        parts.append(f"caches at n={count}: " + ", ".join(texts))
    return parts


def _floor_description(name: str, info: dict[str, Any]) -> str:
    """The ``-v`` line of a ``<rawkv>`` floor (see rawkv.floor.describe)."""
    version = info.get("library_version")
    library = f"{info['backend']} {version}" if version else info["backend"]
    sync = "sync" if info.get("sync") else "no sync"
    return f"{name}: raw key-value floor, {library}, {sync}, {info['path']}"
