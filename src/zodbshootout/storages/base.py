"""What zodbshootout must know about one kind of storage: the :class:`StorageKind` contract.

A kind is a subclass of :class:`StorageKind` that overrides what differs
from the defaults (a storage without a client cache, shared by any number
of processes, whose every load reads the store is the default).  The
registry in :mod:`zodbshootout.storages` asks each kind, in order, whether
it recognises a storage instance (:meth:`StorageKind.owns`) or a ZConfig
storage factory (:meth:`StorageKind.owns_factory`); nothing outside this
package switches on a storage's class or module.
"""

from __future__ import annotations

import importlib.metadata
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from zodbshootout.storages.network import ServerLink

#: Suffix of the files a blob cache holds; the cache's own files (layout
#: marker, lock, temporary directory) are left alone.
BLOB_SUFFIX = ".blob"

#: The ending of a client-cache trace file (ZEO's own convention).
TRACE_SUFFIX = ".trace"

#: Round trips a latency probe times.
PINGS = 7


#: Bytes a cached object takes beyond its payload: its pickle's class
#: reference and state, its entry in the container's pickle, the cache's
#: own record.  An estimate, on the generous side.
OBJECT_OVERHEAD_BYTES = 256
MIB = 1 << 20


@dataclass(frozen=True)
class CacheWorkload:
    """What the caches of one process must hold (see zodbshootout.database.cache_sizing).

    readers: the workers that read through one client cache (c with one DB
    shared by threads, else 1), *object_count* objects each.
    """

    object_count: int
    object_size_bytes: int
    readers: int = 1

    @property
    def pickle_cache_objects(self) -> int:
        """A connection's objects: N, the root, the tool's mapping and the
        worker's container, and a BTree container's buckets (at least 15
        objects each): a tenth more."""
        return self.object_count + self.object_count // 10 + 100

    @property
    def object_bytes(self) -> int:
        """Estimated bytes one object takes in a client cache."""
        return self.object_size_bytes + OBJECT_OVERHEAD_BYTES

    @property
    def container_bytes(self) -> int:
        """Estimated bytes of a worker's container's state: an entry (key and
        persistent reference) per object, generously."""
        return 64 * self.object_count + 1024

    @property
    def data_bytes(self) -> int:
        """Estimated bytes of the objects read through one client cache."""
        return self.readers * self.object_count * self.object_bytes

    @property
    def client_cache_bytes(self) -> int:
        """The client cache size to give: twice the data, plus a MiB for the rest."""
        return 2 * self.data_bytes + MIB


def smaller_than_data_note(cache: str, size_bytes: int, workload: CacheWorkload) -> str:
    """The note for a client cache the configuration made smaller than the data."""
    return (
        f"the {cache} of {size_bytes / MIB:.0f} MB set in the configuration is smaller than "
        f"the ~{workload.data_bytes / MIB:.0f} MB of objects read: hot may measure the server"
    )


@dataclass(frozen=True)
class ProcessLimit:
    """How many worker processes may share a storage, and why no more.

    max_processes: 0 when the data lives in one process's memory (worker
    processes never see it), 1 when one process locks the storage.
    """

    max_processes: int
    reason: str


@dataclass(frozen=True)
class Driver:
    """A Python module a kind's sections may name as their driver, and what installs it.

    *extra*: this package's install extra that brings it (``postgresql``); else
    *package*, its name on PyPI.  *database*: what it talks to, for a message.
    """

    module: str
    database: str
    extra: str | None = None
    package: str | None = None


@dataclass(frozen=True)
class SizeReading:
    """A storage's size in bytes (see probes.storage_size), or why it can't be known."""

    size_bytes: int | None
    reason: str | None = None  # set when size_bytes is None
    method: str = ""  # what was counted, e.g. "FileStorage file length"
    #: The steps the size grows in (InnoDB: 1 MiB extents), when larger than a byte:
    #: a growth smaller than one step may read as 0.
    granularity_bytes: int | None = None


#: Whether this process counts requests in the timed region (``--counters``).
_counting_requests = [False]


def count_requests(on: bool) -> None:
    """Count loads sent and statements from now on in this process (``--counters``), or not.

    Counting wraps driver and protocol calls: a Python call per statement or
    per load, inside the timed region, so it is off unless asked for.  Only
    connections and storages opened after switching it on are counted.
    """
    _counting_requests[0] = on


def counting_requests() -> bool:
    """Whether this process counts requests (see :func:`count_requests`)."""
    return _counting_requests[0]


class ThreadLoadCounter:
    """Counts the storage loads of one worker thread over one phase.

    :meth:`stop` receives the oids the thread loaded through its connection
    (see concurrency.thread_counting); this default says every load read
    the store, which is true of storages without a client cache.
    """

    def start(self) -> None:
        pass

    def stop(self, loaded: list[bytes]) -> int | None:
        return len(loaded)


class StorageKind:
    """One kind of storage; override what differs from these defaults."""

    #: The kind's name, as recorded in the result file (``databases.*.kind``).
    name = "other"

    # -- recognising --

    def owns(self, storage: Any) -> bool:
        """Whether *storage* (an open storage instance) is of this kind."""
        return False

    def owns_factory(self, factory: Any) -> bool:
        """Whether *factory* (a ZConfig storage section factory) opens this kind."""
        return False

    # -- before opening, per process --

    def check_paths(self, factory: Any) -> None:
        """A CellError for a path that opening *factory* would harm (a device, a FIFO).

        Asked before a worker opens the storage and, for a storage an
        embedded ZEO server serves, in the runner before the server starts.
        """

    def prepare_process(self, factory: Any) -> None:
        """Patch what this process needs before *factory* opens (e.g. mariadb_compat)."""

    def name_client_cache(self, factory: Any, label: str) -> None:
        """Give a persistent client cache a file of its own for worker *label*."""

    def process_limit(self, factory: Any) -> ProcessLimit | None:
        """How many worker processes may share the storage; None: any number."""
        return None

    def size_client_cache(self, factory: Any, workload: CacheWorkload) -> list[str]:
        """Raise the client cache *factory* opens to fit *workload*, unless the
        configuration wrote its size; notes on a written size that is too small."""
        return []

    def client_cache_sizes(self, factory: Any) -> dict[str, int]:
        """The client caches *factory* will open, by name (``ZEO cache``), in bytes."""
        return {}

    def pack_backups(self, factory: Any) -> list[str]:
        """Files a pack of *factory*'s storage would delete or replace (FileStorage's ``.old``)."""
        return []

    #: Modules a forkserver imports once, so that each worker process starts
    #: with them loaded (the client library; see concurrency.processes).
    preload_modules: tuple[str, ...] = ()

    #: The drivers its sections may name (see database.drivers).
    drivers: tuple[Driver, ...] = ()

    #: Its clients each run an asyncio loop, of which a gevent process can run one.
    one_client_per_gevent_process = False

    def gevent_problem(self, storage: Any) -> str | None:
        """Why this open storage would block every greenlet under --gevent, or None."""
        return None

    # -- caches and counting --

    def persistent_cache_key(self, factory: Any) -> str | None:
        """The key of *factory*'s section that, set, makes its client cache persistent."""
        return None

    def persistent_cache_ignored(self, factory: Any) -> str | None:
        """Why the storage ignores the persistent client cache its section sets, or None."""
        return None

    def clear_client_cache(self, storage: Any) -> None:
        """Empty the client caches (shared ones included) so that loads go to the store."""

    def blob_cache_dir(self, storage: Any) -> str | None:
        """The directory of the client's blob *cache*; None if blobs have only one copy."""
        return None

    def install_request_counters(self, storage: Any) -> None:
        """Start counting the loads this process sends to the server (idempotent)."""

    def storage_loads(self, storage: Any, loads: int) -> int | None:
        """Object states fetched from the store so far, by this process; None: unknown.

        *loads* is the connections' total; without a client cache it is the answer.
        """
        return loads

    def cache_hits(self, storage: Any) -> int | None:
        """Loads the client cache answered so far; None: no client cache."""
        return None

    def cache_fills(self, storage: Any) -> int | None:
        """Objects the client cache took from the server so far, by its own count; None: unknown.

        Read between the barriers, never inside the timed region: a count the
        cache keeps anyway, so ``storage_loads`` is known without ``--counters``
        in a step that stored nothing (see phases.caches.Counters).
        """
        return None

    def statements(self, storage: Any, this_thread: bool) -> int | None:
        """Requests sent to a database so far, by this process or thread; None: not counted."""
        return None

    def round_trips(self, storage: Any) -> int | None:
        """Requests this process waited on a server for, so far; None: not counted.

        Counted only while requests are (``--counters``, ``--work``'s counting
        pass).  The default is a storage without a server (FileStorage,
        MappingStorage): it never waits on one, so 0.
        """
        return 0

    def before_repetition(self, factory: Any) -> None:
        """Untimed, in the runner's process, after populate and before the write stage."""

    def thread_load_counter(
        self, storage: Any, worker: int, shared_client: bool, shared_oids: frozenset[bytes]
    ) -> ThreadLoadCounter | None:
        """A per-thread storage-load counter (see concurrency.thread_counting); None: unknown."""
        return ThreadLoadCounter()

    def shared_cache_counts(self, storage: Any) -> tuple[int, int, int] | None:
        """(get hits, get misses, sets) of a shared cache's servers so far; None: none."""
        return None

    def trace_client_cache(self, storage: Any, path: str) -> bool:
        """Make the client cache write its own access trace to *path*; False: no cache."""
        return False

    # -- series on the run's time axis (probes.series) --

    def client_cache_series(self, storage: Any) -> dict[str, tuple[str, float]]:
        """The storage client cache's figures now, name -> (unit, value); {}: no cache.

        Read in a worker between transactions, every interval: only counts
        the cache keeps anyway, nothing that walks it.  Cumulative counts are
        named ``client_cache_hits`` and ``client_cache_misses`` (or
        ``client_cache_fills``, objects taken from the server or a commit).
        """
        return {}

    #: Its storages reach servers that :meth:`server_samplers` reads: the runner
    #: opens a client of its own for them (a FileStorage it would lock).
    samples_servers = False

    def server_samplers(self, storage: Any) -> list[Any]:
        """Samplers of the servers *storage* reaches (probes.series.Sampler), each with a
        connection of its own; opened in the runner's process, read in its sampler
        thread.  May raise: the run goes on without them, with a note."""
        return []

    # -- database state and description --

    def size(self, storage: Any, database_factory: Any) -> SizeReading:
        """The storage's bytes on disk or in its server now (untimed; see storagesize)."""
        return SizeReading(None, f"zodbshootout can't read the size of a {type(storage).__name__}")

    def object_count(self, storage: Any) -> int:
        """How many objects the storage holds now, garbage included (untimed; maintain).

        The storage's own ``len()`` by default: exact for FileStorage and ZEO.
        """
        return len(storage)

    def zap(self, storage: Any) -> str | None:
        """Wipe the storage its own way and say how; None: empty the root and pack.

        The default uses ``zap_all`` where a storage has one (RelStorage, test doubles).
        """
        if callable(getattr(storage, "zap_all", None)):
            storage.zap_all()
            return "emptied its tables (zap_all)"
        return None

    def describe(self, storage: Any, info: dict[str, Any]) -> None:
        """Add facts that explain this storage's numbers to *info* (may raise)."""

    def retryable(self, error: BaseException) -> bool:
        """Whether a transaction that failed with this kind's *error* may succeed if retried.

        Beyond transaction's TransientError (which every caller checks first).
        """
        return False

    def disconnected(self, storage: Any) -> bool:
        """Whether this kind's open *storage* knows that its server is gone."""
        return False

    def server_lost(self, error: BaseException) -> bool:
        """Whether *error* says this kind's server is gone: retrying only waits (no retry)."""
        return False

    def notes(self, name: str, info: dict[str, Any], gevent_mode: bool) -> list[str]:
        """Notes for under the table, from the facts :meth:`describe` found."""
        return []

    def plan_notes(
        self, name: str, info: dict[str, Any], object_counts: list[int], concurrencies: list[int]
    ) -> list[str]:
        """Before measuring: notes on levels of the run the server described in *info*
        (see :meth:`describe`) is not set up for, e.g. a lock table too small."""
        return []

    def failure_hint(
        self, error: str, info: dict[str, Any], object_count: int, concurrency: int
    ) -> str | None:
        """For a stage that failed with *error*: one short line of what to change, if this
        kind knows the cause from the facts in *info*; else None (a footnote keeps 200
        characters)."""
        return None

    def network_links(self, factory: Any) -> list[ServerLink]:
        """The servers *factory*'s own section reaches over the network (see storages.network)."""
        return []


def remove_blob_files(cache_dir: str | None) -> int:
    """Delete the ``*.blob`` files below *cache_dir*; return how many were deleted."""
    if cache_dir is None or not os.path.isdir(cache_dir):
        return 0
    removed = 0
    for directory, _subdirs, files in os.walk(cache_dir):
        for name in files:
            if name.endswith(BLOB_SUFFIX):
                try:
                    os.remove(os.path.join(directory, name))
                    removed += 1
                except FileNotFoundError:
                    pass  # another worker sharing the cache removed it first
    return removed


def zodb_config_factory(factory: Any, *names: str) -> bool:
    """Whether *factory* is one of ZODB.config's storage factories called *names*."""
    cls = type(factory)
    return cls.__module__ == "ZODB.config" and cls.__name__ in names


def median_latency_seconds(ping: Callable[[], object], pings: int = PINGS) -> float:
    """The median duration of *pings* calls of *ping*, after one untimed warm-up call."""
    ping()
    durations = []
    for _ in range(pings):
        start = time.perf_counter()
        ping()
        durations.append(time.perf_counter() - start)
    return statistics.median(durations)


def package_version(name: str) -> str | None:
    """The installed version of distribution *name*, or None."""
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None
