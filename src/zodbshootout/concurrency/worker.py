"""The worker loop: one worker's stage, step by step, between barriers.

The same loop runs in a worker process (concurrency.processes), a worker
thread (concurrency.threads) or a greenlet (concurrency.gevent).
"""

from __future__ import annotations

import cProfile
import gc
import pstats
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from zodbshootout import caches, cachetrace, diagnostics, faults, phases, storages
from zodbshootout.cache_sizing import CacheWorkload
from zodbshootout.config import ConfigSource, parse_source
from zodbshootout.database import open_database
from zodbshootout.faults import Fault
from zodbshootout.phase_record import WRITE
from zodbshootout.phases import Phase, Step, WorkerScope
from zodbshootout.redact import find_secrets
from zodbshootout.results import PhaseTiming
from zodbshootout.storagesize import storage_size


class Barrier(Protocol):
    def wait(self, timeout: float | None = None) -> int: ...
    def abort(self) -> None: ...


@dataclass(frozen=True)
class StageTask:
    """Everything one worker needs for one stage; crosses the process boundary."""

    source: ConfigSource
    database: str
    server_addresses: tuple[tuple[str, int], ...]
    worker: int
    object_count: int
    object_size_bytes: int
    steps: tuple[Step, ...]
    barrier_timeout_seconds: float
    profile_prefix: str | None = None  # path prefix; the phase and worker are appended
    leaks: bool = False  # count gc-tracked objects around each timed phase (--leaks)
    log: diagnostics.LogSetup | None = None  # --log: configured in the worker
    blobs: bool = False  # --blobs: the measured objects are ZODB blobs
    fault: Fault | None = None  # tests only: make this worker fail here (see faults)
    #: (phase, loops) for the phases that repeat inside a sample (calibration);
    #: a phase not listed runs once.
    loops: tuple[tuple[str, int], ...] = ()
    index_entries: int = 0  # --index-entries: index entries per object (see indexes)
    cache_trace_prefix: str | None = None  # --cache-trace: the stage and worker are appended
    measure_size: bool = False  # worker 0: read the storage's size around each write phase


@dataclass
class StageOutcome:
    """The workers' timings, or why the stage failed."""

    timings: list[PhaseTiming] = field(default_factory=list)
    error: str | None = None


class WorkerDatabase(Protocol):
    """The database a worker uses, and how its loads are counted.

    A worker process opens its own (:class:`OwnDatabase`); thread workers get
    theirs from concurrency.threads, whose counts are split per thread.
    """

    db: Any

    def start_counting(self) -> None: ...
    def stop_counting(self) -> caches.Counters: ...
    def close(self) -> None: ...


class OwnDatabase:
    """A database this worker process alone uses: the process's counts are its own."""

    def __init__(self, db: Any) -> None:
        self.db = db
        self._before: caches.Counters | None = None

    def start_counting(self) -> None:
        self._before = caches.counters(self.db)

    def stop_counting(self) -> caches.Counters:
        assert self._before is not None
        return caches.counters(self.db) - self._before

    def close(self) -> None:
        self.db.close()


def execute_stage(
    task: StageTask,
    barrier: Barrier,
    clock: Callable[[], float] = time.perf_counter,
    worker_db: WorkerDatabase | None = None,
) -> list[PhaseTiming]:
    """Run the stage's steps in this process (or thread); return the timed ones.

    Each step: prepare (untimed) → barrier → timed run → barrier → counters
    and checks (untimed).  The second barrier keeps one worker's untimed work
    (cache clearing, checking) out of the others' timed regions.  Without
    *worker_db* the worker opens the database itself, as a process does.
    """
    diagnostics.configure_logging(task.log, find_secrets(task.source.text))
    if worker_db is None:
        worker_db = OwnDatabase(
            open_database(
                task.source,
                task.database,
                list(task.server_addresses),
                client_label=str(task.worker),
                workload=CacheWorkload(task.object_count, task.object_size_bytes),
                cache_trace=_trace_path(task),
            )
        )
    db = worker_db.db
    size = _size_reader(task, db)
    try:
        caches.install_request_counters(db)
        scope = WorkerScope(
            db,
            task.worker,
            task.object_count,
            task.object_size_bytes,
            blobs=task.blobs,
            index_entries=task.index_entries,
        )
        fault = task.fault  # tests only; None in real runs
        loops_by_phase = dict(task.loops)
        timings = []
        for step in task.steps:
            phase = phases.REGISTRY[step.phase]
            prepared = phases.prepare(step.phase, scope)
            profiler = cProfile.Profile() if task.profile_prefix and step.timed else None
            worker_db.start_counting()
            objects_before = diagnostics.object_counts() if task.leaks and step.timed else None
            # Before the first barrier no worker writes; after the second all have committed.
            sizing = size is not None and step.timed and phase.stage == WRITE
            size_before = size() if size is not None and sizing else None
            shared_before = _shared_counts(task, db) if step.timed else None
            # Collect the untimed work's garbage now, so that collecting it
            # doesn't fall into the timed region.
            gc.collect()
            barrier.wait(task.barrier_timeout_seconds)
            if fault is not None and fault.matches(task.database, step.phase, task.worker):
                faults.fire(fault)
            if profiler is not None:
                profiler.enable()
            loops = loops_by_phase.get(step.phase, 1) if phase.run_loops else 1
            metered = MeteredClock(clock, _statement_counter(db))
            seconds, outcome = _timed_run(phase, scope, prepared, loops, metered)
            if profiler is not None:
                profiler.disable()
            barrier.wait(task.barrier_timeout_seconds)
            size_growth = _growth(size, size_before)
            shared = _shared_delta(task, db, shared_before)
            counted = worker_db.stop_counting()
            growth = None
            if objects_before is not None:
                growth = diagnostics.object_growth(objects_before, diagnostics.object_counts())
            phases.verify(step.phase, scope, outcome)
            if profiler is not None:
                _write_profile(profiler, f"{task.profile_prefix}-{step.phase}-w{task.worker}")
            if step.timed:
                timings.append(
                    PhaseTiming(
                        phase=step.phase,
                        worker=task.worker,
                        seconds=seconds,
                        objects=1 if phase.one_operation else task.object_count,
                        loads=counted.loads,
                        storage_loads=counted.storage_loads,
                        cache_hits=counted.cache_hits,
                        conflicts=outcome.conflicts if phase.counts_conflicts else 0,
                        object_growth=growth,
                        loops=loops,
                        statements=metered.statements_timed,
                        storage_growth_bytes=size_growth,
                        shared_cache_hits=None if shared is None else shared[0],
                        shared_cache_misses=None if shared is None else shared[1],
                    )
                )
        return timings
    finally:
        worker_db.close()


def _trace_path(task: StageTask) -> str | None:
    """Where this worker's stage writes its client cache trace (--cache-trace), or None."""
    if not task.cache_trace_prefix:
        return None
    stage = phases.REGISTRY[task.steps[0].phase].stage
    return cachetrace.trace_path(task.cache_trace_prefix, stage, task.worker)


def _size_reader(task: StageTask, db: Any) -> Callable[[], int | None] | None:
    """Worker 0's reader of the storage's size in bytes (see storagesize), or None."""
    if not task.measure_size:
        return None
    factory = parse_source(task.source).databases[task.database]
    return lambda: storage_size(db, factory).size_bytes


def _shared_counts(task: StageTask, db: Any) -> tuple[int, int] | None:
    """Worker 0 reads the shared cache's server-wide counts (they count every worker)."""
    if task.worker != 0:
        return None
    return storages.kind_of(db.storage).shared_cache_counts(db.storage)


def _shared_delta(
    task: StageTask, db: Any, before: tuple[int, int] | None
) -> tuple[int, int] | None:
    """The shared cache's get hits and misses since *before* (after the second barrier)."""
    after = _shared_counts(task, db) if before is not None else None
    if before is None or after is None:
        return None
    return after[0] - before[0], after[1] - before[1]


def _growth(size: Callable[[], int | None] | None, before: int | None) -> int | None:
    """What the storage grew by since *before* (untimed, after the second barrier)."""
    if size is None or before is None:
        return None
    after = size()
    return None if after is None else after - before


class MeteredClock:
    """A clock that also counts the database statements sent while it is running.

    A phase calls its clock in pairs, start then stop (a looped phase once
    per timed repetition), so the statements between the two calls of each
    pair are the ones inside the timed region: untimed work in between (a
    looped read's open and close) is not counted.
    """

    def __init__(self, clock: Callable[[], float], statements: Callable[[], int | None]):
        self._clock = clock
        self._statements = statements
        self._started_at: int | None = None
        self._calls = 0
        self.statements_timed: int | None = None

    def __call__(self, /) -> float:
        starting = self._calls % 2 == 0
        self._calls += 1
        if starting:
            # Counted before the clock starts and after it stops: the counting
            # itself stays out of the timed region.
            self._started_at = self._statements()
            return self._clock()
        now_seconds = self._clock()
        now = self._statements()
        if now is not None and self._started_at is not None:
            self.statements_timed = (self.statements_timed or 0) + now - self._started_at
        return now_seconds


def _statement_counter(db: Any) -> Callable[[], int | None]:
    """This thread's count of statements to the database (None: not counted)."""
    kind = storages.kind_of(db.storage)
    return lambda: kind.statements(db.storage, this_thread=True)


def _timed_run(
    phase: Phase, scope: WorkerScope, prepared: Any, loops: int, clock: Callable[[], float]
) -> tuple[float, Any]:
    """The phase's timed work: (seconds, outcome).

    A phase that repeats inside its sample times itself, so that the work
    between two repetitions stays untimed; any other is timed whole.
    """
    if phase.run_loops is not None:
        return phase.run_loops(scope, prepared, loops, clock)
    start = clock()
    outcome = phase.run(scope, prepared)
    return clock() - start, outcome


def _write_profile(profiler: cProfile.Profile, prefix: str) -> None:
    """Save a .prof file (for pstats, snakeviz) and a readable .txt beside it."""
    profiler.dump_stats(prefix + ".prof")
    with open(prefix + ".txt", "w", encoding="utf-8") as out:
        stats = pstats.Stats(profiler, stream=out)
        stats.sort_stats("cumulative").print_stats(60)
