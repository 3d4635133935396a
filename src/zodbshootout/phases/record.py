"""The :class:`Phase` record: everything the tool knows about one phase or benchmark.

Classic phases (zodbshootout.phases.classic) and extra benchmarks
(zodbshootout.phases.benchmarks) are both Phase records in one registry
(``phases.REGISTRY``); the worker loop, the stage planner, the runner and
the renderers read their flags instead of switching on names.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from zodbshootout.phases.recorder import StepRecorder

WRITE = "write"
READ = "read"

#: ``run_loops(scope, prepared, loops, clock) -> (seconds, outcome)``
LoopedRun = Callable[["WorkerScope", Any, int, Callable[[], float]], tuple[float, Any]]

#: Cache layers a phase can empty before its barrier (see zodbshootout.phases.caches).
PICKLE = "pickle"
STORAGE = "storage"


@dataclass
class WorkerScope:
    """What one worker's phases act on; built once per stage, outside timing."""

    db: Any
    worker: int
    object_count: int
    object_size_bytes: int
    blobs: bool = False  # --blobs: the objects are ZODB blobs (see zodbshootout.workload.blobs)
    index_entries: int = 0  # --index-entries: index entries kept per object (see indexes)
    #: Per step: the operations and latencies a phase records (see phases.recorder).
    recorder: StepRecorder | None = None


@dataclass(frozen=True)
class Phase:
    """One phase or benchmark.

    name: how users select it and how results record it.
    stage: WRITE or READ, the stage whose workers run it.
    run: the timed part, ZODB work only: ``run(scope, prepared) -> outcome``.
    clears: cache layers (PICKLE, STORAGE) emptied before the barrier.
    prepare: untimed work before the barrier; its result is handed to run.
    verify: untimed check of run's outcome; raises DataMismatch.
    counts_conflicts: run returns a benchmarks.Contended with the conflicts.
    extra: an extra benchmark, run only when named (after the classic reads).
    fills_caches_first: needs an earlier read in the stage (an untimed cold
        read is planned when none is selected): hot and steamin.
    uses_shared_area: needs the benchmarks' shared objects (benchmarks.setup).
    run_loops: the phase can repeat inside one sample without changing what
        it measures (see zodbshootout.run.calibration): it repeats its work
        *loops* times and returns the seconds its ZODB work took, timed
        with *clock*, so that what must happen between two repetitions
        (emptying the pickle cache for hot) stays out of the sample.
    one_operation: a repetition is one operation (opening a connection),
        not N objects.
    """

    name: str
    stage: str
    run: Callable[[WorkerScope, Any], Any]
    clears: tuple[str, ...] = ()
    prepare: Callable[[WorkerScope], Any] | None = None
    verify: Callable[[WorkerScope, Any], None] | None = None
    counts_conflicts: bool = False
    extra: bool = False
    fills_caches_first: bool = False
    uses_shared_area: bool = False
    run_loops: LoopedRun | None = None
    one_operation: bool = False
    #: Why a ``<rawkv>`` floor has no number for this phase (its footnote); None:
    #: the generic reason (zodbshootout.rawkv.stage.not_measured_reason).
    raw_store_note: str | None = None
