"""Threads mode (and gevent's greenlets): a stage's workers as threads of one process.

See zodbshootout.concurrency for what ``--threads shared`` and ``unique`` mean.
"""

from __future__ import annotations

import functools
import queue
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import transaction
from ZODB.mvccadapter import MVCCAdapter
from ZODB.utils import z64

from zodbshootout import storages
from zodbshootout.concurrency import thread_counting
from zodbshootout.concurrency.session import SessionSpec
from zodbshootout.concurrency.task import (
    OnProgress,
    ProgressFollower,
    StageOutcome,
    Task,
    WorkerContext,
)
from zodbshootout.config.loader import parse_source
from zodbshootout.database.cache_sizing import size_caches
from zodbshootout.database.drivers import describe_open_error
from zodbshootout.database.open import open_database
from zodbshootout.errors import CellError
from zodbshootout.phases import caches
from zodbshootout.workload.root import ROOT_KEY

#: Seconds a stage's threads get beyond the stage timeout to notice a broken barrier.
_JOIN_GRACE_SECONDS = 5.0


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
        #: Every connection this worker opened, by id (whose loads are its own).
        self.opened: dict[int, Any] = {} if connection is None else {id(connection): connection}

    def open(self, transaction_manager: Any = None, **kwargs: Any) -> Any:
        conn = None
        if self._last is not None and not kwargs:
            conn = _take_from_pool(self._db, self._last)
        if conn is None:
            conn = self._db.open(transaction_manager=transaction_manager, **kwargs)
        else:
            conn.open(transaction_manager)
        self._last = conn
        self.opened[id(conn)] = conn
        return conn

    def connections(self) -> list[Any]:
        """The connections this worker opened (their loads are its own)."""
        return list(self.opened.values())

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
    """worker.WorkerDatabase for a thread: per-thread counts; closes only its own DB."""

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
        storages.count_requests(spec.counters)
        if spec.counters:
            thread_counting.install()
        self.spec = spec
        self._check_db = check_db
        self._config = parse_source(spec.source)
        factory = self._config.databases[spec.database]
        # A storage one process can open only once is opened once per session.
        self._single = storages.single_process_reason(factory) is not None
        self._storage: Any = None
        self._adapters: list[Any] = []  # live MVCC adapters over self._storage
        self._shared_db: Any = None
        self._shared_oids: frozenset[bytes] = frozenset()
        self._broken: str | None = None
        if spec.shares_one_db:
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
                workload=self.spec.cache_workload,
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
        if self.spec.cache_workload is not None:
            size_caches(factory, self.spec.cache_workload)
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

    def populate(self, fill: Callable[[Any], Any]) -> Any:
        if self._shared_db is not None:
            value = fill(self._shared_db)
            self._shared_oids = _common_oids(self._shared_db)
            return value
        db = self._open("populate")
        try:
            return fill(db)
        finally:
            self._close_db(db)

    def run_stage(
        self, tasks: Sequence[Task], timeout_seconds: float, on_progress: OnProgress | None = None
    ) -> StageOutcome:
        if self._broken:
            return StageOutcome(error=self._broken)
        # Opening the workers' databases counts against the timeout too.
        deadline = time.monotonic() + timeout_seconds
        try:
            worker_dbs = self._worker_databases(tasks)
        except CellError as e:
            return StageOutcome(error=str(e))
        follower = None if on_progress is None else ProgressFollower(queue.Queue(), on_progress)
        stage = _ThreadStage(tasks, worker_dbs, None if follower is None else follower.channel)
        try:
            stage.run(deadline)
        except BaseException:
            # Ctrl-C: release the workers waiting at a barrier; they stop at once.
            if not stage.stop():
                self._broken = "interrupted"
            raise
        finally:
            if follower is not None:
                follower.stop()
        if stage.alive():
            stopped = stage.stop()
            stage.errors.insert(
                0,
                f"timed out: a worker did not finish within {timeout_seconds:g} s "
                "(raise --timeout for very large runs)",
            )
            if not stopped:
                # A thread can't be stopped: this session's DB stays in use.
                self._broken = stage.errors[0]
        return stage.outcome()

    def _worker_databases(self, tasks: Sequence[Task]) -> list[_ThreadWorkerDatabase]:
        """Each worker's database, opened here one after another (untimed)."""
        opened: list[_ThreadWorkerDatabase] = []
        if self._shared_db is not None:
            connections = _reserve_connections(self._shared_db, len(tasks))
        try:
            for index, task in enumerate(tasks):
                if self._shared_db is not None:
                    view = _OwnConnectionView(self._shared_db, connections[index])
                    meter = thread_counting.ThreadMeter(
                        self._shared_db,
                        task.worker,
                        True,
                        self._shared_oids,
                        connections=view.connections,
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


class _ThreadStage:
    """One stage's worker threads, their results and their errors."""

    def __init__(
        self, tasks: Sequence[Task], worker_dbs: list[_ThreadWorkerDatabase], channel: Any = None
    ) -> None:
        self.tasks = tasks
        self.progress = None if channel is None else channel.put_nowait
        self.barrier = threading.Barrier(len(tasks))
        self.results: dict[int, list[Any]] = {}
        self.errors: list[str] = []
        self.secondary: list[str] = []
        self.threads = [
            threading.Thread(
                target=self._work,
                args=(task, worker_db),
                name=f"zodbshootout-worker-{task.worker}",
                daemon=True,
            )
            for task, worker_db in zip(tasks, worker_dbs, strict=True)
        ]

    def _work(self, task: Task, worker_db: _ThreadWorkerDatabase) -> None:
        try:
            context = WorkerContext(worker_db, self.progress)
            self.results[task.worker] = task.decode(task.execute(self.barrier, context))
        except threading.BrokenBarrierError:
            self.secondary.append("another worker stopped")
        except CellError as e:
            self.barrier.abort()
            self.errors.append(str(e))
        except BaseException as e:
            self.barrier.abort()
            self.errors.append(f"{type(e).__name__}: {e}")

    def run(self, deadline: float) -> None:
        """Start the threads and wait for them until *deadline* (time.monotonic)."""
        for thread in self.threads:
            thread.start()
        for thread in self.threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    def alive(self) -> bool:
        return any(thread.is_alive() for thread in self.threads)

    def stop(self) -> bool:
        """Break the barrier and give the threads a moment; True if all ended."""
        self.barrier.abort()
        for thread in self.threads:
            thread.join(_JOIN_GRACE_SECONDS)
        return not self.alive()

    def outcome(self) -> StageOutcome:
        if self.errors or self.secondary:
            return StageOutcome(error=(self.errors or self.secondary)[0])
        outcome = StageOutcome()
        for task in self.tasks:
            outcome.timings.extend(self.results[task.worker])
        return outcome


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
