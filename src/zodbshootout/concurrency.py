"""How the c workers run: processes (default), threads, or gevent greenlets.

The runner opens a *session* per repetition (:func:`open_session`), lets it
populate the database, then runs the write stage and the read stage in it.

processes
    Each stage in c fresh worker processes (zodbshootout.workers); the
    runner process populates.  A storage that only one process can open
    (FileStorage, MappingStorage) can't be measured with c > 1.
threads, ``--threads shared`` (the default for threads)
    One DB in this process, opened before populate and closed after the read
    stage, used by all c worker threads, as most threaded applications do.
    Each worker gets a connection from the DB's pool and, within a stage,
    the same connection back when it opens again (so update and steamin find
    their own pickle cache, as a worker process would).  **warm** reads
    through the DB that the writer threads used: whatever its pooled
    connections' pickle caches and its storage client cache still hold —
    with c = 1 that is everything, so warm equals steamin.
threads, ``--threads unique``
    One DB per worker thread, opened before each stage and closed after it,
    so the read stage starts with new DB objects: **warm** then measures, as
    with processes, only what outlives a DB (persistent client caches,
    shared caches).  A storage that one process can open only once gets
    opened once per repetition, with a DB per thread on top of it whose
    invalidations reach the other DBs.
gevent (``--gevent``, implies threads)
    The same thread session, in a child process that gevent monkey-patches
    before anything else is imported; the worker threads are greenlets.
    RelStorage must use a driver that cooperates with gevent.

In every mode each worker's counts are its own (see thread_counting for how
threads' counts are split, and what a shared DB's cache hits mean).
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import transaction
from ZODB.mvccadapter import MVCCAdapter
from ZODB.utils import z64

from zodbshootout import caches, thread_counting, workers
from zodbshootout.config import ConfigSource, parse_source
from zodbshootout.drivers import describe_open_error
from zodbshootout.errors import CellError
from zodbshootout.storage import (
    ROOT_KEY,
    open_database,
    process_mode_reason,
    single_process_reason,
    storage_factories,
)
from zodbshootout.workers import StageOutcome, StageTask

PROCESSES = "processes"
THREADS = "threads"
GEVENT = "gevent"
MODES = (PROCESSES, THREADS, GEVENT)
SHARED = "shared"
UNIQUE = "unique"
SHARINGS = (SHARED, UNIQUE)

#: Seconds a stage's threads get beyond the stage timeout to notice a broken barrier.
_JOIN_GRACE_SECONDS = 5.0


@dataclass(frozen=True)
class SessionSpec:
    """What a session needs; plain data, sent to the gevent child as is."""

    source: ConfigSource
    database: str
    server_addresses: tuple[tuple[str, int], ...]
    concurrency: int
    mode: str = PROCESSES
    sharing: str = SHARED  # threads and gevent only


def describe_mode(mode: str, sharing: str) -> str:
    """The mode as RunResult.metadata["concurrency_mode"] records it."""
    return PROCESSES if mode == PROCESSES else f"{mode}:{sharing}"


def warm_note(mode: str, sharing: str) -> str:
    """What the table's warm row means when the workers were not processes."""
    workers = "greenlets (--gevent)" if mode == GEVENT else "threads"
    if sharing == SHARED:
        return (
            f"workers ran as {workers} sharing one DB: warm read through the DB the "
            "writers used (its pooled pickle caches and its storage cache)"
        )
    return (
        f"workers ran as {workers} with a DB each, opened anew for the read stage: "
        "warm found only caches that outlive a DB"
    )


class Session(Protocol):
    def populate(self, fill: Callable[[Any], None]) -> None: ...
    def run_stage(self, tasks: list[StageTask], timeout_seconds: float) -> StageOutcome: ...
    def close(self) -> None: ...


def open_session(spec: SessionSpec) -> Session:
    """The session for *spec*'s mode; close it after the repetition."""
    if spec.mode == THREADS:
        return ThreadSession(spec)
    if spec.mode == GEVENT:
        from zodbshootout.gevent_host import GeventSession

        return GeventSession(spec)
    return ProcessSession(spec)


def mode_problem(mode: str, sharing: str, concurrency: int, database_factory: Any) -> str | None:
    """Why this mode can't measure this database at this concurrency, or None."""
    if mode == PROCESSES:
        return process_mode_reason(database_factory, concurrency)
    if mode == GEVENT and sharing == UNIQUE and concurrency > 1 and _uses_zeo(database_factory):
        return (
            "--gevent with --threads unique needs a ZEO client per greenlet, but ZEO "
            "clients each run an asyncio loop and only one can run in a gevent process; "
            "use --gevent with --threads shared"
        )
    return None


def _uses_zeo(database_factory: Any) -> bool:
    return any(
        type(factory).__name__ in ("ZEOClient", "EmbeddedZEO")
        for factory in storage_factories(database_factory)
    )


class ProcessSession:
    """Workers are processes; the runner's process populates."""

    def __init__(self, spec: SessionSpec) -> None:
        self.spec = spec

    def populate(self, fill: Callable[[Any], None]) -> None:
        db = open_database(
            self.spec.source,
            self.spec.database,
            list(self.spec.server_addresses),
            client_label="populate",
        )
        try:
            fill(db)
        finally:
            db.close()

    def run_stage(self, tasks: list[StageTask], timeout_seconds: float) -> StageOutcome:
        return workers.run_stage_in_processes(tasks, timeout_seconds)

    def close(self) -> None:
        pass


class _OwnConnectionView:
    """A worker's view of a shared DB: its next open returns its last connection.

    DB.open hands out the most recently closed connection, which with several
    threads is often another worker's; a worker process would find its own
    pickle cache again, so a worker thread does too (when that connection is
    idle in the pool).  Everything else is the DB's.
    """

    def __init__(self, db: Any, connection: Any = None) -> None:
        self._db = db
        self._last: Any = connection

    def open(self, transaction_manager: Any = None, **kwargs: Any) -> Any:
        conn = None
        if self._last is not None and not kwargs:
            conn = _take_from_pool(self._db, self._last)
        if conn is None:
            conn = self._db.open(transaction_manager=transaction_manager, **kwargs)
        else:
            conn.open(transaction_manager)
        self._last = conn
        return conn

    def __getattr__(self, name: str) -> Any:
        return getattr(self._db, name)


def _take_from_pool(db: Any, conn: Any) -> Any:
    """Remove *conn* from the DB's idle connections (as DB.open's pop would), or None."""
    with db._lock:
        available = db.pool.available
        for index, (_stamp, candidate) in enumerate(available):
            if candidate is conn:
                del available[index]
                return conn
    return None


class _ThreadWorkerDatabase:
    """workers.WorkerDatabase for a thread: per-thread counts; closes only its own DB."""

    def __init__(self, db: Any, meter: thread_counting.ThreadMeter, close: Callable[[], None]):
        self.db = db
        self._meter = meter
        self._close = close

    def start_counting(self) -> None:
        self._meter.start()

    def stop_counting(self) -> caches.Counters:
        return self._meter.stop()

    def close(self) -> None:
        self._close()


def _nothing() -> None:
    pass


class ThreadSession:
    """Run one repetition's stages as threads of this process (see the module doc)."""

    def __init__(self, spec: SessionSpec, check_db: Callable[[Any], None] | None = None):
        thread_counting.install()
        self.spec = spec
        self._check_db = check_db
        self._config = parse_source(spec.source)
        factory = self._config.databases[spec.database]
        # A storage one process can open only once is opened once per session.
        self._single = single_process_reason(factory) is not None
        self._storage: Any = None
        self._adapters: list[Any] = []  # live MVCC adapters over self._storage
        self._shared_db: Any = None
        self._shared_oids: frozenset[bytes] = frozenset()
        self._broken: str | None = None
        if spec.sharing == SHARED:
            self._shared_db = self._open("shared")

    # -- opening databases --

    def _open(self, label: str) -> Any:
        if self._single:
            db = self._open_on_shared_storage()
        else:
            db = open_database(
                self.spec.source,
                self.spec.database,
                list(self.spec.server_addresses),
                client_label=label,
            )
        try:
            if self._check_db is not None:
                self._check_db(db)
            caches.install_request_counters(db)
        except BaseException:
            self._close_db(db)
            raise
        return db

    def _open_on_shared_storage(self) -> Any:
        """A new DB over the session's one open storage (see the module doc)."""
        factory = self._config.databases[self.spec.database]
        storage_factory = factory.config.storage
        try:
            if self._storage is None:
                self._storage = storage_factory.open()
            storage = self._storage
            storage_factory.open = lambda: storage  # this DB only; removed below
            try:
                db = factory.open()
            finally:
                del storage_factory.open
        except CellError:
            raise
        except Exception as e:
            raise CellError(describe_open_error(e)) from e
        adapter = db._mvcc_storage
        if isinstance(adapter, MVCCAdapter):
            adapter.close = functools.partial(_retire_adapter, adapter, self._adapters)
            adapter._invalidate_finish = functools.partial(_invalidate_all, self._adapters)
            self._adapters.append(adapter)
        return db

    def _close_db(self, db: Any) -> None:
        db.close()

    # -- the session API --

    def populate(self, fill: Callable[[Any], None]) -> None:
        if self._shared_db is not None:
            fill(self._shared_db)
            self._shared_oids = _common_oids(self._shared_db)
            return
        db = self._open("populate")
        try:
            fill(db)
        finally:
            self._close_db(db)

    def run_stage(self, tasks: list[StageTask], timeout_seconds: float) -> StageOutcome:
        if self._broken:
            return StageOutcome(error=self._broken)
        # Opening the workers' databases counts against the timeout too.
        deadline = time.monotonic() + timeout_seconds
        try:
            worker_dbs = self._worker_databases(tasks)
        except CellError as e:
            return StageOutcome(error=str(e))
        barrier = threading.Barrier(len(tasks))
        results: dict[int, list[Any]] = {}
        errors: list[str] = []
        secondary: list[str] = []

        def work(task: StageTask, worker_db: _ThreadWorkerDatabase) -> None:
            try:
                results[task.worker] = workers.execute_stage(task, barrier, worker_db=worker_db)
            except threading.BrokenBarrierError:
                secondary.append("another worker stopped")
            except CellError as e:
                barrier.abort()
                errors.append(str(e))
            except BaseException as e:
                barrier.abort()
                errors.append(f"{type(e).__name__}: {e}")

        threads = [
            threading.Thread(
                target=work,
                args=(task, worker_db),
                name=f"zodbshootout-worker-{task.worker}",
                daemon=True,
            )
            for task, worker_db in zip(tasks, worker_dbs, strict=True)
        ]
        try:
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(max(0.0, deadline - time.monotonic()))
        except BaseException:
            # Ctrl-C: release the workers waiting at a barrier; they stop at once.
            barrier.abort()
            for thread in threads:
                thread.join(_JOIN_GRACE_SECONDS)
            if any(thread.is_alive() for thread in threads):
                self._broken = "interrupted"
            raise
        if any(thread.is_alive() for thread in threads):
            barrier.abort()
            for thread in threads:
                thread.join(_JOIN_GRACE_SECONDS)
            errors.insert(
                0,
                f"timed out: a worker did not finish within {timeout_seconds:g} s "
                "(raise --timeout for very large runs)",
            )
            if any(thread.is_alive() for thread in threads):
                # A thread can't be stopped: this session's DB stays in use.
                self._broken = errors[0]
        if errors or secondary:
            return StageOutcome(error=(errors or secondary)[0])
        outcome = StageOutcome()
        for task in tasks:
            outcome.timings.extend(results[task.worker])
        return outcome

    def _worker_databases(self, tasks: list[StageTask]) -> list[_ThreadWorkerDatabase]:
        """Each worker's database, opened here one after another (untimed)."""
        opened: list[_ThreadWorkerDatabase] = []
        if self._shared_db is not None:
            connections = _reserve_connections(self._shared_db, len(tasks))
        try:
            for index, task in enumerate(tasks):
                if self._shared_db is not None:
                    view = _OwnConnectionView(self._shared_db, connections[index])
                    meter = thread_counting.ThreadMeter(
                        self._shared_db, task.worker, True, self._shared_oids
                    )
                    opened.append(_ThreadWorkerDatabase(view, meter, _nothing))
                else:
                    db = self._open(str(task.worker))
                    meter = thread_counting.ThreadMeter(db, task.worker, False, frozenset())
                    opened.append(
                        _ThreadWorkerDatabase(db, meter, functools.partial(self._close_db, db))
                    )
        except BaseException:
            for worker_db in opened:
                worker_db.close()
            raise
        return opened

    def close(self) -> None:
        if self._broken:
            return  # a hung worker thread still uses the DB; the process exit cleans up
        try:
            if self._shared_db is not None:
                self._shared_db.close()
        finally:
            if self._storage is not None:
                self._storage.close()
                self._storage = None


def _reserve_connections(db: Any, count: int) -> list[Any]:
    """*count* distinct pooled connections, in the order DB.open hands them out.

    Each worker thread starts the stage with its own: with small N a worker
    may finish before another starts, and without this both would use (and
    warm up) the same connection, which concurrent workers never do.
    """
    connections = [
        db.open(transaction_manager=transaction.TransactionManager()) for _ in range(count)
    ]
    for conn in connections:
        conn.close()
    return connections


def _retire_adapter(adapter: Any, adapters: list[Any]) -> None:
    """Close a DB's MVCC adapter without closing the storage other DBs still use."""
    adapter.closed = True
    if adapter in adapters:
        adapters.remove(adapter)


def _invalidate_all(adapters: list[Any], tid: bytes, oids: Any, committing: Any) -> None:
    """Tell every DB over the shared storage what a commit changed, as ZEO would."""
    for adapter in list(adapters):
        MVCCAdapter._invalidate_finish(adapter, tid, oids, committing)


def _common_oids(db: Any) -> frozenset[bytes]:
    """The objects every worker loads: the root and the tool's top mapping."""
    conn = db.open()
    try:
        top = conn.root().get(ROOT_KEY)
        oids = {z64}
        if top is not None and top._p_oid is not None:
            oids.add(top._p_oid)
        return frozenset(oids)
    finally:
        conn.transaction_manager.abort()
        conn.close()
