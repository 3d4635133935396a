"""Describe a database before it is measured: what explains its numbers.

Server product and version, driver and its version, history mode, cache
settings, and the round-trip latency to the server (median of a few trivial
requests).  Read in the parent, outside any timed region; a probe that fails
leaves its field out and says why rather than guessing.
"""

from __future__ import annotations

import importlib.metadata
import statistics
import time
from collections.abc import Callable
from typing import Any

from zodbshootout.caches import storage_kind

PINGS = 7


def median_latency_seconds(ping: Callable[[], object], pings: int = PINGS) -> float:
    """The median duration of *pings* calls of *ping*, after one untimed warm-up call."""
    ping()
    durations = []
    for _ in range(pings):
        start = time.perf_counter()
        ping()
        durations.append(time.perf_counter() - start)
    return statistics.median(durations)


def describe_database(db: Any) -> dict[str, Any]:
    """Facts about an open database; values are plain JSON-able data."""
    storage = db.storage
    kind = storage_kind(storage)
    info: dict[str, Any] = {
        "storage": f"{type(storage).__module__}.{type(storage).__name__}",
        "kind": kind,
        "pickle_cache_objects": db.getCacheSize(),
    }
    try:
        if kind == "relstorage":
            info.update(_describe_relstorage(storage))
        elif kind == "zeo":
            info.update(_describe_zeo(storage))
        elif kind == "filestorage":
            info["history"] = "preserving"
    except Exception as e:  # a probe must never cost the measurement
        info["probe_error"] = f"{type(e).__name__}: {e}"
    return info


def _package_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


# Driver module -> the distribution that installs it, for its version.
_DISTRIBUTIONS = {
    "psycopg2": "psycopg2-binary",
    "MySQLdb": "mysqlclient",
    "pymysql": "PyMySQL",
    "pg8000": "pg8000",
    "sqlite3": None,
}


def _driver_version(module_name: str) -> str | None:
    if module_name == "sqlite3":
        import sqlite3

        return sqlite3.sqlite_version
    distribution = _DISTRIBUTIONS.get(module_name, module_name)
    version = _package_version(distribution) if distribution else None
    if version is None and module_name == "psycopg2":
        version = _package_version("psycopg2")
    return version


_VERSION_QUERIES = {
    "postgresql": "SELECT version()",
    "mysql": "SELECT VERSION()",
    "sqlite": "SELECT 'SQLite ' || sqlite_version()",
}


def _describe_relstorage(storage: Any) -> dict[str, Any]:
    adapter = storage._adapter
    options = storage._options
    driver = adapter.driver
    module_name = getattr(driver, "MODULE_NAME", None) or type(driver).__name__
    family = type(adapter).__module__.split(".")[2]  # relstorage.adapters.<family>.adapter
    info: dict[str, Any] = {
        "database": family,
        "driver": getattr(driver, "__name__", module_name),
        "driver_version": _driver_version(module_name),
        "history": "preserving" if options.keep_history else "free",
        "cache_local_mb": options.cache_local_mb,
        "cache_local_dir": bool(options.cache_local_dir),
        "cache_servers": _server_list(options.cache_servers),
        "relstorage_version": _package_version("RelStorage"),
    }
    conn, cursor = adapter.connmanager.open()
    try:
        query = _VERSION_QUERIES.get(family)
        if query:
            cursor.execute(query)
            info["server_version"] = str(cursor.fetchone()[0])

        def ping() -> None:
            cursor.execute("SELECT 1")
            cursor.fetchall()

        info["latency_seconds"] = median_latency_seconds(ping)
    finally:
        adapter.connmanager.close(conn, cursor)
    return info


def _server_list(servers: Any) -> list[str]:
    """RelStorage keeps cache-servers as the configured string or as a sequence."""
    if not servers:
        return []
    if isinstance(servers, str):
        return servers.split()
    return [str(server) for server in servers]


def _describe_zeo(storage: Any) -> dict[str, Any]:
    cache = storage._cache
    info: dict[str, Any] = {
        "database": "zeo",
        "zeo_version": _package_version("ZEO"),
        # What the server speaks (e.g. Z5): its version is not sent to clients.
        "server_protocol": _text(getattr(storage, "protocol_version", None)),
        "server_address": str(storage._server_addr),
        "cache_size_bytes": cache.maxsize,
        "persistent_cache": bool(getattr(cache, "path", None)),
        "latency_seconds": median_latency_seconds(storage.ping),
    }
    info["history"] = "preserving" if storage.supportsUndo() else "free"
    return info


def _text(value: Any) -> str | None:
    if isinstance(value, bytes):
        return value.decode("ascii", "replace")
    return None if value is None else str(value)


def format_description(name: str, info: dict[str, Any]) -> str:
    """One readable line for ``-v``."""
    parts = []
    if "database" in info:
        parts.append(str(info["database"]))
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
