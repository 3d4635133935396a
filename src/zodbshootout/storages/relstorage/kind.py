"""RelStorage: a SQL database behind local and shared (memcached) client caches.

Object states are counted where the mover reads them from the database, in
the calling thread, so a worker thread's share is exact.  On MySQL the
adapter gets mariadb_compat's adjustments before it opens.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from zodbshootout.storages.base import (
    MIB,
    CacheWorkload,
    Driver,
    SizeReading,
    StorageKind,
    ThreadLoadCounter,
    counting_requests,
    median_latency_seconds,
    package_version,
    smaller_than_data_note,
)
from zodbshootout.storages.network import ServerLink
from zodbshootout.storages.relstorage import (
    locks,
    lost,
    mariadb_compat,
    round_trips,
    samplers,
    sqlite_planner,
)
from zodbshootout.storages.relstorage.network import memcached_latency_seconds, relstorage_links
from zodbshootout.storages.tracefile import TraceFile

# Object states this process read from the database, once counting is installed.
_reads = 0
_installed = False
# The reads of the current thread while a thread counter runs (None otherwise).
_thread = threading.local()

# Driver module -> the distribution that installs it, for its version.
_DISTRIBUTIONS = {
    "psycopg2": "psycopg2-binary",
    "MySQLdb": "mysqlclient",
    "pymysql": "PyMySQL",
    "pg8000": "pg8000",
    "sqlite3": None,
}

_VERSION_QUERIES = {
    "postgresql": "SELECT version()",
    "mysql": "SELECT VERSION()",
    "sqlite": "SELECT 'SQLite ' || sqlite_version()",
}


class RelStorageKind(StorageKind):
    name = "relstorage"
    preload_modules = ("relstorage.storage",)
    drivers = (
        Driver("psycopg2", "PostgreSQL", extra="postgresql"),
        Driver("pg8000", "PostgreSQL", extra="postgresql"),
        Driver("psycopg2cffi", "PostgreSQL", package="psycopg2cffi"),
        Driver("MySQLdb", "MySQL", extra="mysql"),
        Driver("pymysql", "MySQL", extra="mysql"),
        Driver("mysql", "MySQL", package="mysql-connector-python"),
        # cache-servers: the shared cache's client library.
        Driver("pylibmc", "memcached", extra="memcache"),
        Driver("memcache", "memcached", package="python-memcached"),
    )

    def owns(self, storage: Any) -> bool:
        return type(storage).__module__.startswith("relstorage.")

    def owns_factory(self, factory: Any) -> bool:
        return type(factory).__module__.startswith("relstorage.")

    def prepare_process(self, factory: Any) -> None:
        if type(factory).__name__ == "MySQLAdapterFactory":
            mariadb_compat.install()
        # Before the storage connects: only connections opened later are counted.
        if counting_requests():
            round_trips.install()

    def before_repetition(self, factory: Any) -> None:
        path = sqlite_planner.database_path_of_factory(factory)
        if path is not None and os.path.exists(path):
            sqlite_planner.discard_planner_statistics(path)

    def gevent_problem(self, storage: Any) -> str | None:
        driver = storage._adapter.driver
        cooperative = getattr(driver, "gevent_cooperative", None)
        if cooperative is None or cooperative():
            return None
        name = getattr(driver, "__name__", type(driver).__name__)
        return (
            f"the database driver {name!r} blocks gevent's event loop; "
            "name a gevent-compatible driver in the section ('driver gevent sqlite3', "
            "'driver PyMySQL', 'driver pg8000', 'driver gevent MySQLdb' or "
            "'driver gevent psycopg2')"
        )

    def size_client_cache(self, factory: Any, workload: CacheWorkload) -> list[str]:
        if type(factory).__name__ != "RelStorageFactory":
            return []  # the adapter's section: the sizes are the storage's
        from relstorage.options import Options

        config = factory.config
        notes = []
        # Unset keys are None (no ZConfig default): Options' defaults apply.
        if config.cache_local_mb is None:
            wanted = -(-workload.client_cache_bytes // MIB)
            config.cache_local_mb = max(Options.cache_local_mb, wanted)
        elif config.cache_local_mb * MIB < workload.data_bytes:
            notes.append(
                smaller_than_data_note(
                    "RelStorage local cache (cache-local-mb)", config.cache_local_mb * MIB, workload
                )
            )
        # Larger states never enter the local cache: hot would read them from
        # the database, the objects and the worker's container (N entries) alike.
        largest = max(workload.object_bytes, workload.container_bytes)
        if config.cache_local_object_max is None:
            config.cache_local_object_max = max(Options.cache_local_object_max, largest)
        elif config.cache_local_object_max < largest:
            notes.append(
                f"RelStorage caches objects up to {config.cache_local_object_max} bytes "
                "(cache-local-object-max), smaller than the objects or their container: "
                "hot reads the database"
            )
        return notes

    def client_cache_sizes(self, factory: Any) -> dict[str, int]:
        if type(factory).__name__ != "RelStorageFactory":
            return {}
        from relstorage.options import Options

        megabytes = factory.config.cache_local_mb
        megabytes = Options.cache_local_mb if megabytes is None else megabytes
        return {"RelStorage local cache": int(megabytes * MIB)}

    def persistent_cache_key(self, factory: Any) -> str | None:
        if type(factory).__name__ != "RelStorageFactory":
            return None
        return "cache_local_dir" if factory.config.cache_local_dir else None

    def persistent_cache_ignored(self, factory: Any) -> str | None:
        adapter = getattr(factory.config, "adapter", None)
        if type(adapter).__name__ == "Sqlite3AdapterFactory":  # (RelStorage logs it)
            return (
                "RelStorage on SQLite ignores cache-local-dir (a persistent cache of a local "
                "database makes no sense, its log says)"
            )
        return None

    def clear_client_cache(self, storage: Any) -> None:
        # load_persistent=False: a cold read must not be refilled from the
        # persistent cache file either.
        storage._cache.clear(load_persistent=False)

    def blob_cache_dir(self, storage: Any) -> str | None:
        helper = getattr(storage, "blobhelper", None)
        if helper is not None and type(helper).__name__ == "CacheBlobHelper":
            return str(helper.blob_dir)
        return None

    def install_request_counters(self, storage: Any) -> None:
        global _installed
        if not _installed:
            _count_reads(storage)
            _installed = True

    def storage_loads(self, storage: Any, loads: int) -> int | None:
        return _reads if _installed and counting_requests() else None

    def cache_hits(self, storage: Any) -> int | None:
        return int(storage._cache.local_client.stats()["hits"])

    def statements(self, storage: Any, this_thread: bool) -> int | None:
        if not (round_trips.installed() and counting_requests()):
            return None
        return round_trips.in_this_thread() if this_thread else round_trips.in_process()

    def round_trips(self, storage: Any) -> int | None:
        """Each statement is a round trip to the database (BEGIN and COMMIT included)."""
        return self.statements(storage, this_thread=False)

    def thread_load_counter(
        self, storage: Any, worker: int, shared_client: bool, shared_oids: frozenset[bytes]
    ) -> ThreadLoadCounter:
        return _ThreadReads()

    def shared_cache_counts(self, storage: Any) -> tuple[int, int, int] | None:
        """memcached's get_hits, get_misses and cmd_set, summed over the servers (get_stats).

        The servers count every client's gets: with c workers, a phase's
        delta is all of theirs (and anyone else's using the same servers).
        Read through a pylibmc client of the tool's own, opened and closed
        here: the storage's client is shared by thread workers, and a
        pylibmc client used by two threads at once fails ("error 19 from
        get_stats: SERVER HAS FAILED").
        """
        if not _uses_pylibmc(storage):
            return None
        servers = _server_list(storage._options.cache_servers)
        if not servers:
            return None
        import pylibmc

        client = pylibmc.Client(servers)
        try:
            hits = misses = sets = 0
            for _server, stats in client.get_stats():
                hits += int(stats.get("get_hits", 0))
                misses += int(stats.get("get_misses", 0))
                sets += int(stats.get("cmd_set", 0))
        finally:
            client.disconnect_all()
        return hits, misses, sets

    def client_cache_series(self, storage: Any) -> dict[str, tuple[str, float]]:
        """The local cache's own counts (LocalClient.stats: no walk of the cache), and
        how many transactions deep its MVCC object index is (a connection that doesn't
        poll, e.g. one idle in the pool, holds it back: docs/soak.rst)."""
        cache = storage._cache
        stats = cache.local_client.stats()
        index = getattr(cache.polling_state, "object_index", None)
        return {
            "client_cache_objects": ("objects", int(stats["len"])),
            "client_cache_bytes": ("bytes", int(stats["bytes"])),
            "client_cache_hits": ("loads", int(stats["hits"])),
            "client_cache_misses": ("loads", int(stats["misses"])),
            # The count of the index's maps (a vector's size): read, never walked.
            "client_cache_index_depth": ("transactions", index.depth if index else 0),
        }

    samples_servers = True

    def server_samplers(self, storage: Any) -> list[Any]:
        """The database's statistics, and each memcached server of cache-servers."""
        adapter = storage._adapter
        family = type(adapter).__module__.split(".")[2]  # relstorage.adapters.<family>.adapter
        found: list[Any] = samplers.sql_samplers(adapter, family)
        for server in _server_list(storage._options.cache_servers):
            found.append(_Deferred(f"memcached {server}", samplers.MemcachedSampler, server))
        return found

    def trace_client_cache(self, storage: Any, path: str) -> bool:
        _trace(storage._cache, path)
        return True

    def size(self, storage: Any, database_factory: Any) -> SizeReading:
        adapter = storage._adapter
        measure = _SIZE_QUERIES.get(type(adapter).__name__)
        if measure is None:
            return SizeReading(
                None, f"zodbshootout can't read the size of RelStorage's {type(adapter).__name__}"
            )
        # On a connection of its own, not any worker's.
        reading: SizeReading = adapter.connmanager.open_and_call(
            lambda _conn, cursor: measure(cursor)
        )
        return reading

    def object_count(self, storage: Any) -> int:
        # RelStorage's len() is the server's estimate on PostgreSQL and MySQL
        # (0 before an ANALYZE): count the rows of current objects instead.
        table = "current_object" if storage._options.keep_history else "object_state"

        def count(_conn: Any, cursor: Any) -> int:
            cursor.execute(f"SELECT COUNT(*) FROM {table}")
            return int(cursor.fetchone()[0])

        counted: int = storage._adapter.connmanager.open_and_call(count)
        return counted

    def describe(self, storage: Any, info: dict[str, Any]) -> None:
        adapter = storage._adapter
        options = storage._options
        driver = adapter.driver
        module_name = getattr(driver, "MODULE_NAME", None) or type(driver).__name__
        family = type(adapter).__module__.split(".")[2]  # relstorage.adapters.<family>.adapter
        info["database"] = family
        info["driver"] = getattr(driver, "__name__", module_name)
        info["driver_version"] = _driver_version(module_name)
        info["history"] = "preserving" if options.keep_history else "free"
        info["cache_local_mb"] = options.cache_local_mb
        info["cache_local_dir"] = bool(options.cache_local_dir)
        info["cache_servers"] = _server_list(options.cache_servers)
        info["relstorage_version"] = package_version("RelStorage")
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
            if family == "postgresql":
                info["lock_table"] = locks.read_lock_table(cursor)
            if family == "mysql":
                _note_mariadb_adjustments(adapter, cursor, info)
        finally:
            adapter.connmanager.close(conn, cursor)
        if info["cache_servers"]:
            info["cache_server_latency_seconds"] = _memcached_latencies(info["cache_servers"])

    def network_links(self, factory: Any) -> list[ServerLink]:
        return relstorage_links(factory)

    def retryable(self, error: BaseException) -> bool:
        # RelStorage's lock timeouts (not all of them ConflictErrors), without importing it.
        return any(cls.__name__ == "UnableToAcquireLockError" for cls in type(error).__mro__)

    def server_lost(self, error: BaseException) -> bool:
        # PostgreSQL's or MySQL's server gone: each retry fails again, until the end.
        return lost.connection_lost(error)

    def notes(self, name: str, info: dict[str, Any], gevent_mode: bool) -> list[str]:
        notes = []
        if info.get("mariadb_adjustments"):
            notes.append(mariadb_compat.NOTE)
        if info.get("cache_servers"):
            notes.append(
                f"{name}: RelStorage {info.get('relstorage_version')} reads its shared cache "
                "(cache-servers) only for objects whose current transaction it learned by "
                "polling, so a fresh process's warm reads go to the database; memcached "
                "helps readers of objects that other processes change while they run"
            )
        if str(info.get("driver", "")).startswith("gevent ") and not gevent_mode:
            notes.append(
                f"{name}: RelStorage chose its {info['driver']!r} driver (gevent is installed), "
                "which yields to gevent while not running under it; name the plain driver "
                "in the section (e.g. 'driver sqlite3') to measure that instead"
            )
        return notes

    def plan_notes(
        self, name: str, info: dict[str, Any], object_counts: list[int], concurrencies: list[int]
    ) -> list[str]:
        settings = info.get("lock_table")
        note = settings and locks.plan_note(name, settings, object_counts, concurrencies)
        return [note] if note else []

    def failure_hint(
        self, error: str, info: dict[str, Any], object_count: int, concurrency: int
    ) -> str | None:
        return locks.failure_hint(error, info, object_count, concurrency)


def _note_mariadb_adjustments(adapter: Any, cursor: Any, info: dict[str, Any]) -> None:
    """Record mariadb_compat's adjustments for this server in *info*.

    RelStorage asks its upsert question lazily, at the first commit; asking
    it here makes the adjustment known (and noted) before anything is written.
    """
    detector = getattr(adapter, "version_detector", None)
    if detector is not None:
        detector.requires_values_upsert_alias(cursor)
    applied = mariadb_compat.adjustments_applied()
    if applied:
        info["mariadb_adjustments"] = applied


# -- cache traces (--cache-trace) --


def _trace(storage_cache: Any, path: str) -> None:
    """RelStorage's own tracer around the root storage cache's state cache.

    RelStorage opens a trace itself only with ZEO_CACHE_TRACE set and a
    ``cache-local-dir`` (named ``relstorage-trace-PREFIX.PID.trace`` there);
    this builds the same ``TracingStateCache`` and ``ZEOTracer`` for any
    cache, before the DB derives its connections' instances from it.  The
    tracer writes to a :class:`TraceFile`, so a full disk ends the trace
    instead of failing loads and logging every record.
    """
    from relstorage.cache._statecache_wrappers import TracingStateCache
    from relstorage.cache.trace import ZEOTracer

    state_cache = storage_cache.cache
    if isinstance(state_cache, TracingStateCache):
        # RelStorage traces already (ZEO_CACHE_TRACE and cache-local-dir): use ours.
        state_cache.tracer.close()
        state_cache = state_cache.cache
    limit = int(storage_cache.local_client.limit)
    tracer = ZEOTracer(TraceFile(path, "relstorage", limit))
    tracer.trace(0x00)  # a start record, as RelStorage writes one
    storage_cache.cache = _tracing_state_cache_class()(state_cache, tracer)


_tracing_class: Any = None


def _tracing_state_cache_class() -> Any:
    """RelStorage's TracingStateCache, tracing the loads of connections only.

    - RelStorage 4.x's prefetch asks ``(oid, tid) in cache``; TracingStateCache
      has no ``__contains__``, so Python falls back to indexing it with 0, 1, ...
      and prefetch fails with a TypeError.  A membership test is not a load:
      it is answered by the wrapped cache, untraced.
    - A lookup with ``peek=True`` (the conflict resolution's prefetch) is no
      load either, and RelStorage's own hit count leaves it out: untraced.

    So the trace counts what the run's hit-rate row counts: one record per
    load, a hit when the local cache answered it.
    """
    global _tracing_class
    if _tracing_class is None:
        from relstorage.cache._statecache_wrappers import TracingStateCache

        class LoadTracingStateCache(TracingStateCache):  # type: ignore[misc]
            __slots__ = ()

            def __contains__(self, key: Any) -> bool:
                return key in self.cache

            def __getitem__(self, key: Any, peek: bool = False) -> Any:
                if peek:
                    return self.cache.get(key, peek)
                return super().__getitem__(key)

            get = __getitem__

        _tracing_class = LoadTracingStateCache
    return _tracing_class


# -- sizes (bytes per object; see zodbshootout.probes.storage_size) --

MYSQL_METHOD = "InnoDB data_length + index_length after ANALYZE TABLE (1 MiB extents)"


def _postgresql_size(cursor: Any) -> SizeReading:
    cursor.execute(
        "SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
        "JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = current_schema() AND c.relkind = 'r'"
    )
    (total,) = cursor.fetchone()
    return SizeReading(int(total), method="pg_total_relation_size of RelStorage's tables")


def _mysql_size(cursor: Any) -> SizeReading:
    cursor.execute(
        "SELECT table_name FROM information_schema.TABLES "
        "WHERE table_schema = DATABASE() AND engine = 'InnoDB'"
    )
    # RelStorage's MySQL connections may hand back names as bytes.
    tables = [_text(row[0]) for row in cursor.fetchall()]
    if not tables:
        return SizeReading(0, method="no InnoDB tables")
    quoted = ", ".join(f"`{name}`" for name in tables)
    # Not to the binary log: replicas need no statistics of a benchmark's tables.
    cursor.execute(f"ANALYZE NO_WRITE_TO_BINLOG TABLE {quoted}")
    failed = [row for row in cursor.fetchall() if _text(row[2]).lower() == "error"]
    if failed:
        return SizeReading(None, f"ANALYZE TABLE failed: {_text(failed[0][3])}")
    cursor.execute("COMMIT")  # a fresh snapshot of the refreshed statistics
    cursor.execute(
        "SELECT COALESCE(SUM(data_length + index_length), 0) "
        "FROM information_schema.TABLES WHERE table_schema = DATABASE()"
    )
    (total,) = cursor.fetchone()
    return SizeReading(int(total), method=MYSQL_METHOD, granularity_bytes=MIB)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _sqlite_size(cursor: Any) -> SizeReading:
    cursor.execute("PRAGMA database_list")
    schemas = [row[1] for row in cursor.fetchall()]
    total = 0
    for schema in schemas:
        pages = _pragma(cursor, schema, "page_count") - _pragma(cursor, schema, "freelist_count")
        total += pages * _pragma(cursor, schema, "page_size")
    return SizeReading(total, method="SQLite pages in use")


def _pragma(cursor: Any, schema: str, name: str) -> int:
    cursor.execute(f'PRAGMA "{schema}".{name}')
    return int(cursor.fetchone()[0])


_SIZE_QUERIES = {
    "PostgreSQLAdapter": _postgresql_size,
    "MySQLAdapter": _mysql_size,
    "Sqlite3Adapter": _sqlite_size,
}


# -- counting reads --


def _count_reads(storage: Any) -> None:
    mover_class = type(storage._adapter.mover)
    load_current = mover_class.load_current
    load_currents = mover_class.load_currents

    def counted_load_current(self: Any, cursor: Any, oid: int) -> Any:
        _counted()
        return load_current(self, cursor, oid)

    def counted_load_currents(self: Any, cursor: Any, oids: Any) -> Any:
        for row in load_currents(self, cursor, oids):
            _counted()
            yield row

    mover_class.load_current = counted_load_current
    mover_class.load_currents = counted_load_currents


def _counted() -> None:
    global _reads
    _reads += 1
    if getattr(_thread, "reads", None) is not None:
        _thread.reads += 1


class _ThreadReads(ThreadLoadCounter):
    """The object states read in this thread (RelStorage reads in the calling thread)."""

    def start(self) -> None:
        _thread.reads = 0

    def stop(self, loaded: list[bytes]) -> int | None:
        reads: int = _thread.reads
        _thread.reads = None
        return reads


def _driver_version(module_name: str) -> str | None:
    if module_name == "sqlite3":
        import sqlite3

        return sqlite3.sqlite_version
    distribution = _DISTRIBUTIONS.get(module_name, module_name)
    version = package_version(distribution) if distribution else None
    if version is None and module_name == "psycopg2":
        version = package_version("psycopg2")
    return version


def _uses_pylibmc(storage: Any) -> bool:
    """Whether the storage's shared cache is a pylibmc client (relstorage.pylibmc_wrapper)."""
    cache = storage._cache.cache
    cache = getattr(cache, "cache", cache)  # under a TracingStateCache (--cache-trace)
    shared = getattr(cache, "g", None)  # MultiStateCache: local (l) and shared (g)
    client = getattr(shared, "client", None)
    # relstorage.pylibmc_wrapper keeps the pylibmc client as _client.
    client = getattr(client, "_client", client)
    return type(client).__module__.split(".")[0] in ("pylibmc", "_pylibmc")


def _memcached_latencies(servers: list[str]) -> dict[str, float]:
    """Each TCP cache server's round trip (see network.memcached_latency_seconds)."""
    latencies = {}
    for server in servers:
        seconds = memcached_latency_seconds(server)
        if seconds is not None:
            latencies[server] = seconds
    return latencies


def _server_list(servers: Any) -> list[str]:
    """RelStorage keeps cache-servers as the configured string or as a sequence."""
    if not servers:
        return []
    if isinstance(servers, str):
        return servers.split()
    return [str(server) for server in servers]


class _Deferred:
    """A sampler opened at its first read, so that one that can't open fails alone, once."""

    def __init__(self, name: str, make: Any, *args: Any) -> None:
        self.name = name
        self._make = make
        self._args = args
        self._sampler: Any = None

    def read(self) -> dict[str, tuple[str, float]]:
        if self._sampler is None:
            self._sampler = self._make(*self._args)
        reading: dict[str, tuple[str, float]] = self._sampler.read()
        return reading

    def close(self) -> None:
        if self._sampler is not None:
            self._sampler.close()


KIND = RelStorageKind()
