"""One mix worker: transactions drawn by weight for a set duration, each one recorded.

The worker opens its database, waits for the others (a barrier), runs an
untimed warm-up (closed loop, nothing recorded), waits again so that every
worker's measurement starts together, then runs transactions until the
duration is over.  A transaction is open → operation → commit → close; one
that fails with a transient error (ConflictError, ReadConflictError,
RelStorage's UnableToLock... errors) is retried, up to --max-tries attempts
in all, and its latency covers every attempt.  Each error is counted by
class; a transaction that runs out of attempts, or fails with any other
error, is a failure, counted by the class of its last error and never
hidden.  The worker returns plain data (see :meth:`MixTask.execute`).
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import transaction
from transaction.interfaces import TransientError
from ZODB.POSException import ConflictError

from zodbshootout import storages
from zodbshootout.concurrency.task import Barrier, DatabaseTask, OnProgress, WorkerContext
from zodbshootout.database.open import open_database
from zodbshootout.mix import operations
from zodbshootout.mix.idle import leave_idle
from zodbshootout.mix.keys import KeyChooser, make_chooser, zipfian_cumulative
from zodbshootout.mix.operations import Prepared, Shape
from zodbshootout.mix.recorder import Recorder
from zodbshootout.mix.schedule import OpenLoop
from zodbshootout.mix.workloads import INSERT, Workload
from zodbshootout.phases import caches
from zodbshootout.probes.series import ClientSampler


@dataclass(frozen=True)
class MixPlan:
    """What every worker of a database does; plain data."""

    workload: Workload
    objects: int  # M: keys 0..M-1 exist before the run
    shape: Shape
    duration_seconds: float
    warmup_seconds: float
    seed: int
    max_tries: int = 10
    rate_per_second: float | None = None  # None: closed loop
    arrival: str = "constant"
    interval_seconds: float = 1.0
    insert_base: int = 0  # the first key inserts may use (above every existing key)
    #: --until-steady: a file the runner creates once the run is steady; each worker
    #: looks for it when it closes an interval and then ends its measurement.
    stop_file: str | None = None
    #: --idle-connections: connections each worker leaves idle in its pool (mix.idle).
    idle_connections: int = 0


@dataclass(frozen=True)
class MixTask(DatabaseTask):
    """One worker's task (concurrency.task's protocol): every mode runs it, plain data back."""

    worker: int
    workers: int
    plan: MixPlan
    barrier_timeout_seconds: float
    #: Read the storage's load counters (False for all but one thread sharing a DB).
    count_loads: bool = True

    def timed_waits(self) -> list[tuple[int, str]]:
        # The second barrier wait starts the measured duration (--hosts records its skew).
        return [(1, "mix")]

    @classmethod
    def from_plain(cls, data: dict[str, Any]) -> MixTask:
        """The task :meth:`to_plain` encoded."""
        plan = dict(data["plan"])
        workload = dict(plan["workload"])
        workload["weights"] = tuple((op, weight) for op, weight in workload["weights"])
        workload["hot"] = tuple(workload["hot"])
        plan["workload"] = Workload(**workload)
        plan["shape"] = Shape(**plan["shape"])
        return cls(**{**cls.decoded(data), "plan": MixPlan(**plan)})

    def execute(self, barrier: Barrier, context: WorkerContext) -> list[Any]:
        """Run this worker in this process, or as a thread on the context's database; one report.

        Interval messages go to the context's progress, when someone listens.
        """
        began = time.perf_counter()
        if context.database is not None:
            db, close = context.database.db, context.database.close
        else:
            db = open_database(
                self.source,
                self.database,
                list(self.server_addresses),
                client_label=f"mix-{self.worker}",
            )
            close = db.close
        # The warm-up curve's start: a persistent cache is read while opening
        # (relstorage#513's slow start-up).
        opened = time.perf_counter() - began
        try:
            if self.count_loads:
                caches.install_request_counters(db)
            leave_idle(db, self.plan.idle_connections)  # before the first barrier: untimed
            report = run_worker(self, db, barrier, progress=context.progress)
            report["open_seconds"] = round(opened, 6)
            return [report]
        finally:
            close()

    def decode(self, results: list[Any]) -> list[Any]:
        """The reports are plain data already (results.mix merges them)."""
        return list(results)


class ServerLost(Exception):
    """The database's server is gone: this worker stops, keeping what it measured."""

    #: When the transaction that found it out started: the measured seconds end there.
    at: float | None = None


def retryable(error: BaseException) -> bool:
    """Whether a transaction that failed with *error* may succeed if tried again."""
    if isinstance(error, TransientError):
        return True
    # E.g. RelStorage's lock timeouts (not all of them ConflictErrors).
    return storages.retryable(error)


class Transactions:
    """A worker's transactions: draw the next one, run it with its retries.

    Public for mix.counting, whose untimed pass runs the same transactions.
    """

    def __init__(self, task: MixTask, db: Any) -> None:
        plan = task.plan
        self.db = db
        self.plan = plan
        self.worker = task.worker
        self.tm = transaction.TransactionManager(explicit=True)
        self.rng = random.Random(plan.seed * 7_919 + task.worker)
        shares = plan.workload.shares()
        self.names = list(shares)
        self.weights = [shares[name] for name in self.names]
        cumulative = None
        if plan.workload.keys in ("zipfian", "latest"):
            cumulative = zipfian_cumulative(plan.objects)
        self.keys: KeyChooser = make_chooser(
            plan.workload.keys, plan.objects, plan.seed, task.worker, plan.workload.hot, cumulative
        )
        self.keys.inserted(plan.insert_base - 1)
        self.next_insert = plan.insert_base + task.worker
        self.step = task.workers
        self.increments = 0  # object versions raised by committed transactions
        #: Versions of transactions whose commit failed with an error that is not a
        #: conflict: the storage may have committed them anyway (see the report).
        self.uncertain_increments = 0
        self._pending = 0  # what the attempt in progress would raise
        self._committing = False  # the attempt in progress is inside tm.commit()
        self.inserted = 0
        self.kind = storages.kind_of(db.storage)
        #: When the first measured transaction committed (the clock's reading).
        self.first_done: float | None = None

    def first_seconds(self, start: float) -> float | None:
        """Seconds from *start* to the first measured commit (None: none committed)."""
        return None if self.first_done is None else round(self.first_done - start, 6)

    def check_connected(self) -> None:
        """ServerLost if the storage knows its server is gone (untimed: before a draw)."""
        if self.kind.disconnected(self.db.storage):
            raise ServerLost("the storage lost its connection to the server")

    def draw(self) -> Prepared:
        operation = self.rng.choices(self.names, self.weights)[0]
        return operations.prepare(operation, self.keys, self.plan.shape, self.next_insert)

    def attempt(self, work: Prepared) -> int:
        conn = self.db.open(transaction_manager=self.tm)
        self._pending = 0
        self._committing = False
        try:
            self.tm.begin()
            raised = self._pending = operations.execute(conn, work, self.plan.shape, self.worker)
            self._committing = True
            self.tm.commit()
            return raised
        except BaseException:
            self.tm.abort()
            raise
        finally:
            conn.close()

    def run(self, work: Prepared, record: Any = None) -> bool:
        """Run *work* with its retries; True if it committed.  *record*: its OperationRecord."""
        for tries in range(1, self.plan.max_tries + 1):
            try:
                raised = self.attempt(work)
            except Exception as error:
                name = type(error).__name__
                if storages.server_lost(error):
                    # Not a conflict: each retry would wait out the client's timeout.
                    raise ServerLost(f"{name}: {error}") from error
                transient = retryable(error)
                if record is not None and transient:
                    record.conflicts[name] += 1
                if transient and tries < self.plan.max_tries:
                    if self._maybe_committed(error, transient):
                        self.uncertain_increments += self._pending
                    if record is not None:
                        record.retries += 1
                    continue
                if self._maybe_committed(error, transient):
                    self.uncertain_increments += self._pending
                if record is not None:
                    record.failures[name] += 1
                return False
            self._committed(work, raised)
            return True
        return False

    def _maybe_committed(self, error: Exception, transient: bool) -> bool:
        """Whether the failed attempt's changes may be in the database all the same.

        A conflict is refused before anything is written.  Anything else raised
        inside the commit may come after the storage committed (RelStorage on
        SQLite: a KeyError in tpc_vote; a CacheConsistencyError from the poll
        after tpc_finish), so its changes are counted as uncertain, not lost.
        """
        if not transient:
            return True
        return self._committing and not isinstance(error, ConflictError)

    def _committed(self, work: Prepared, raised: int) -> None:
        self.increments += raised
        if work.operation == INSERT:
            self.inserted += 1
            self.keys.inserted(self.next_insert)
            self.next_insert += self.step


def run_worker(
    task: MixTask,
    db: Any,
    barrier: Barrier,
    clock: Callable[[], float] = time.perf_counter,
    progress: OnProgress | None = None,
) -> dict[str, Any]:
    """Warm up, then measure for the plan's duration; the worker's report as plain data."""
    plan = task.plan
    work = Transactions(task, db)
    barrier.wait(task.barrier_timeout_seconds)
    warmup_end = clock() + plan.warmup_seconds
    while clock() < warmup_end:
        work.run(work.draw())
    warmup_increments, work.increments = work.increments, 0  # apart: every change made
    barrier.wait(task.barrier_timeout_seconds)
    before = caches.counters(db) if task.count_loads else None
    sampler = _client_sampler(task, db, work.kind)
    # Made before the clock starts: its histograms take a millisecond or more.
    recorder = Recorder(
        plan.workload.operations,
        0.0,
        plan.interval_seconds,
        open_loop=plan.rate_per_second is not None,
    )
    started_at, start = time.time(), clock()  # time.time: the servers' series' axis
    recorder.begin(start)
    deadline = _Deadline(start + plan.duration_seconds)
    recorder.on_interval = _on_interval(
        task.worker, progress, sampler, start, clock, _stop_check(plan.stop_file, deadline, clock)
    )
    schedule = _schedule(task, start)
    lost = None
    try:
        _measure(work, recorder, schedule, deadline, clock)
        finished = clock()
    except ServerLost as e:
        lost = str(e)  # the seconds before it stand; the runner fails the database
        finished = e.at if e.at is not None else clock()
        recorder.close_intervals(min(finished, deadline.at))
    end = deadline.at
    report = recorder.as_data()
    report.update(
        server_lost=lost,
        worker=task.worker,
        seconds=min(finished, end) - start if schedule else finished - start,
        unstarted=schedule.missed(end) if schedule else 0,
        increments=work.increments,
        warmup_increments=warmup_increments,
        uncertain_increments=work.uncertain_increments,
        inserted=work.inserted,
        first_transaction_seconds=work.first_seconds(start),
        counters=_counts(before, caches.counters(db)) if before is not None and not lost else None,
        started_at=started_at,
        **_sampled(sampler),
    )
    return report


def _sampled(sampler: ClientSampler | None) -> dict[str, Any]:
    """The report's series, their notes and the CPU seconds sampling cost."""
    if sampler is None:
        return {"series": {}, "series_notes": [], "series_seconds": None}
    return {
        "series": sampler.series.as_data(),
        "series_notes": sampler.notes,
        "series_seconds": sampler.seconds,
    }


def _schedule(task: MixTask, start: float) -> OpenLoop | None:
    """Under --rate, the worker's share of the open-loop schedule; None in a closed loop."""
    plan = task.plan
    if plan.rate_per_second is None:
        return None
    rng = random.Random(plan.seed * 104_729 + task.worker)
    return OpenLoop(plan.rate_per_second, task.workers, task.worker, start, plan.arrival, rng)


def _client_sampler(task: MixTask, db: Any, kind: Any) -> ClientSampler | None:
    """The client's series, their baseline read (one sampler per process: threads share a DB)."""
    if not task.count_loads:
        return None
    sampler = ClientSampler(db, kind, extra=("the loads", lambda: _loads(db)))
    sampler.sample(0.0)  # just before the start
    return sampler


def _loads(db: Any) -> dict[str, tuple[str, float]]:
    """The connections' loads and the client cache's hits so far (the warm-up curve's
    hit rate per interval: hits ÷ loads of the interval)."""
    counted = caches.counters(db)
    reading = {"loads": ("loads", float(counted.loads))}
    if counted.cache_hits is not None:
        reading["cache_hits"] = ("loads", float(counted.cache_hits))
    return reading


class _Deadline:
    """When the measurement ends: the duration's end, or earlier once the run is steady."""

    def __init__(self, at: float) -> None:
        self.at = at


def _stop_check(
    stop_file: str | None, deadline: _Deadline, clock: Callable[[], float]
) -> Callable[[], None] | None:
    """--until-steady: at an interval's close, end the measurement if the runner said so.

    The runner's word is a file (one stat per interval, between transactions):
    it reaches workers in every local mode, processes or threads, without a
    channel back to them.  The measurement ends there, at that interval's
    close, so that every interval kept is whole.
    """
    if stop_file is None:
        return None
    seen = [False]

    def check() -> None:
        if seen[0]:
            return
        if os.path.exists(stop_file):
            seen[0] = True
            deadline.at = min(deadline.at, clock())

    return check


def _measure(
    work: Transactions,
    recorder: Recorder,
    schedule: OpenLoop | None,
    deadline: _Deadline,
    clock: Callable[[], float],
) -> None:
    """The measured loop: until the deadline, draw, wait for the intended start, run, record.

    The keys are drawn before the clock starts (closed loop) or before the
    wait for the intended start (under a rate), so a latency is the
    transaction's alone: open, operation, commit, close.
    """
    records = recorder.operations
    while True:
        now = clock()
        end = deadline.at
        if now >= end:
            break
        intended: float | None = None
        if schedule is not None:
            if schedule.peek() >= end:
                time.sleep(max(0.0, end - now))
                break
            intended = schedule.take()
        try:
            work.check_connected()
        except ServerLost as e:
            e.at = clock()
            raise
        prepared = work.draw()
        started = clock()
        if intended is not None and intended > started:
            time.sleep(intended - started)
            started = clock()
        record = records[prepared.operation]
        try:
            committed = work.run(prepared, record)
        except ServerLost as e:
            e.at = started  # not the client's wait for a server that is gone
            raise
        if committed:
            start = started if intended is None else min(intended, started)
            done = clock()
            recorder.record(prepared.operation, start, started, done)
            if work.first_done is None:
                work.first_done = done
    recorder.close_intervals(min(clock(), deadline.at))


def _counts(before: caches.Counters, after: caches.Counters) -> dict[str, int | None]:
    delta = after - before
    return {
        "loads": delta.loads,
        "storage_loads": delta.storage_loads,
        "cache_hits": delta.cache_hits,
    }


def _on_interval(
    worker: int,
    progress: OnProgress | None,
    sampler: ClientSampler | None,
    start: float,
    clock: Callable[[], float],
    stop_check: Callable[[], None] | None = None,
) -> Any:
    """What a closed interval does, between two transactions: sample, send the interval."""

    def closed(index: int, transactions: int, histogram: str) -> None:
        if sampler is not None:
            sampler.sample(clock() - start)
        if stop_check is not None:
            stop_check()
        if progress is None:
            return
        try:
            progress(("interval", worker, index, transactions, histogram))
        except Exception:
            pass  # live progress is a courtesy: never let it stop the worker

    return closed
