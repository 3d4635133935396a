"""The worker loop: one worker's stage, step by step, between barriers.

The same loop runs in a worker process (concurrency.processes), a worker
thread (concurrency.threads), a greenlet (concurrency.gevent) or a process on
another host (concurrency.hosts).  What a worker reads around a step's
timed region are probes (zodbshootout.probes), chosen once per stage by
:func:`select_probes` and entered together; the loop itself knows none of them.
"""

from __future__ import annotations

import dataclasses
import gc
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from zodbshootout import faults, storages
from zodbshootout.concurrency.task import Barrier, DatabaseTask, WorkerContext, WorkerDatabase
from zodbshootout.config.loader import parse_source
from zodbshootout.database.cache_sizing import CacheWorkload
from zodbshootout.database.open import open_database
from zodbshootout.faults import Fault
from zodbshootout.phases import caches
from zodbshootout.phases import classic as phases
from zodbshootout.phases.classic import Phase, Step, WorkerScope
from zodbshootout.phases.record import WRITE
from zodbshootout.phases.recorder import StepRecorder
from zodbshootout.probes import cache_trace as cachetrace
from zodbshootout.probes import diagnostics, work
from zodbshootout.probes.base import Probe, ProbeSet
from zodbshootout.probes.counts import LoadCounts, SharedCacheCounts, Statements
from zodbshootout.probes.profiler import Profiler
from zodbshootout.probes.storage_size import StorageGrowth, storage_size
from zodbshootout.probes.work import WorkMeter
from zodbshootout.redact import find_secrets
from zodbshootout.results.record import PhaseTiming, timings_from_plain, timings_to_plain


@dataclass(frozen=True)
class StageTask(DatabaseTask):
    """Everything one worker needs for one stage; crosses the process boundary.

    A task of the concurrency layer's protocol (concurrency.task): every
    mode calls :meth:`execute` in the worker and :meth:`decode` here.
    """

    worker: int
    object_count: int
    object_size_bytes: int
    steps: tuple[Step, ...]
    barrier_timeout_seconds: float
    profile_prefix: str | None = None  # path prefix; the phase and worker are appended
    leaks: bool = False  # count gc-tracked objects around each timed phase (--leaks)
    counters: bool = False  # --counters: count loads sent and statements (storages.count_requests)
    log: diagnostics.LogSetup | None = None  # --log: configured in the worker
    blobs: bool = False  # --blobs: the measured objects are ZODB blobs
    fault: Fault | None = None  # tests only: make this worker fail here (see faults)
    #: (phase, loops) for the phases that repeat inside a sample (calibration);
    #: a phase not listed runs once.
    loops: tuple[tuple[str, int], ...] = ()
    index_entries: int = 0  # --index-entries: index entries per object (see indexes)
    cache_trace_prefix: str | None = None  # --cache-trace: the stage and worker are appended
    measure_size: bool = False  # worker 0: read the storage's size around each write phase
    work: bool = False  # --work's counting pass: count each timed region's work (probes.work)

    def execute(self, barrier: Barrier, context: WorkerContext) -> list[Any]:
        """The stage's timed steps (see :func:`execute_stage`), as plain data."""
        return timings_to_plain(execute_stage(self, barrier, worker_db=context.database))

    def decode(self, results: list[Any]) -> list[Any]:
        return timings_from_plain(results)

    def timed_waits(self) -> list[tuple[int, str]]:
        # Each step waits twice; the first wait starts its clock.
        return [(2 * index, step.phase) for index, step in enumerate(self.steps) if step.timed]

    @classmethod
    def from_plain(cls, data: dict[str, Any]) -> StageTask:
        fields = cls.decoded(data)
        fields["steps"] = tuple(Step(**step) for step in fields["steps"])
        fields["loops"] = tuple((phase, loops) for phase, loops in fields["loops"])
        if fields["log"] is not None:
            fields["log"] = diagnostics.LogSetup(**fields["log"])
        if fields["fault"] is not None:
            fields["fault"] = Fault(**fields["fault"])
        return cls(**fields)


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

    Each step: prepare and probes (untimed) → barrier → timed run → barrier
    → probes and checks (untimed).  The second barrier keeps one worker's
    untimed work (cache clearing, checking) out of the others' timed regions.
    Without *worker_db* the worker opens the database itself, as a process does.
    """
    diagnostics.configure_logging(task.log, find_secrets(task.source.text))
    if worker_db is None:
        worker_db = _open_own_database(task)
    try:
        caches.install_request_counters(worker_db.db)
        scope = WorkerScope(
            worker_db.db,
            task.worker,
            task.object_count,
            task.object_size_bytes,
            blobs=task.blobs,
            index_entries=task.index_entries,
        )
        probes = ProbeSet(select_probes(task, worker_db))
        timings = [_run_step(task, step, scope, probes, barrier, clock) for step in task.steps]
        return [timing for timing in timings if timing is not None]
    finally:
        worker_db.close()


def _open_own_database(task: StageTask) -> OwnDatabase:
    """The database of a worker process (or host): opened here, counted as this worker's."""
    storages.count_requests(task.counters or task.work)
    if task.work:  # before the storage opens: its connections are counted
        work.install()
    return OwnDatabase(
        open_database(
            task.source,
            task.database,
            list(task.server_addresses),
            client_label=str(task.worker),
            workload=CacheWorkload(task.object_count, task.object_size_bytes),
            cache_trace=_trace_path(task),
        )
    )


def select_probes(task: StageTask, worker_db: WorkerDatabase) -> list[Probe]:
    """The instruments this worker reads around its steps, in the order they are entered.

    The one place that looks at the options that turn them on.  The trace
    marks come last, so the other probes' reads fall outside them.
    """
    db = worker_db.db
    chosen: list[Probe] = [LoadCounts(worker_db)]
    if task.leaks:
        chosen.append(diagnostics.Leaks())
    if task.measure_size:
        factory = parse_source(task.source).databases[task.database]
        chosen.append(StorageGrowth(lambda: storage_size(db, factory).size_bytes, _writes))
    if task.worker == 0:
        chosen.append(SharedCacheCounts(db))
    if task.counters:  # without --counters nothing counts statements: no metered clock
        chosen.append(Statements(db))
    if task.work:
        chosen.append(WorkMeter(db, lambda: caches.counters(db)))
    if task.profile_prefix:
        chosen.append(Profiler(task.profile_prefix, task.worker))
    chosen.append(cachetrace.TraceMarks())
    return chosen


def _writes(phase: str) -> bool:
    return phases.REGISTRY[phase].stage == WRITE


def _run_step(
    task: StageTask,
    step: Step,
    scope: WorkerScope,
    probes: ProbeSet,
    barrier: Barrier,
    clock: Callable[[], float],
) -> PhaseTiming | None:
    """One step between the two barriers; its record if it is timed."""
    phase = phases.REGISTRY[step.phase]
    prepared = phases.prepare(step.phase, scope)
    loops = dict(task.loops).get(step.phase, 1) if phase.run_loops else 1
    probes.before(step)
    timed_clock = probes.clock(clock)
    recorder = StepRecorder(timed_clock)
    step_scope = dataclasses.replace(scope, recorder=recorder)
    # Collect the untimed work's garbage now, so that collecting it
    # doesn't fall into the timed region.
    gc.collect()
    barrier.wait(task.barrier_timeout_seconds)
    faults.fire_if_due(task.fault, task.database, step.phase, task.worker)  # tests only
    with probes.during(step):
        seconds, outcome = _timed_run(phase, step_scope, prepared, loops, timed_clock)
    barrier.wait(task.barrier_timeout_seconds)
    fields = probes.after(step)
    phases.verify(step.phase, scope, outcome)
    if not step.timed:
        return None
    return PhaseTiming(
        phase=step.phase,
        worker=task.worker,
        seconds=seconds,
        objects=1 if phase.one_operation else task.object_count,
        conflicts=outcome.conflicts if phase.counts_conflicts else 0,
        loops=loops,
        **fields,
        **recorder.fields(),
    )


def _trace_path(task: StageTask) -> str | None:
    """Where this worker's stage writes its client cache trace (--cache-trace), or None."""
    if not task.cache_trace_prefix:
        return None
    stage = phases.REGISTRY[task.steps[0].phase].stage
    return cachetrace.trace_path(task.cache_trace_prefix, stage, task.worker)


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
