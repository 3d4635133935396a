"""One worker's phases on a raw store, with the ZODB workers' barrier discipline.

Which phases mean something without ZODB:

add, update
    One write transaction of N records (the same payloads ZODB's objects
    carry, as raw bytes: no pickling), inserted, then overwritten.
cold
    The read stage's workers are new processes, and each opens its store
    handle anew (untimed) before reading: no cache of the store's library
    (LevelDB's block cache, SQLite's page cache) holds the records.  The
    operating system's page cache is not emptied, for ZODB's cold phase
    neither.
hot
    The same handle reads the same records again: the library's own caches
    may now answer.

The others have no raw-store counterpart and get a footnote instead of a
number (:func:`not_measured_reason`, from the phases' records).  Like a ZODB
worker, each step is: prepare (untimed) → barrier → timed transaction →
barrier → checks (untimed).
"""

from __future__ import annotations

import dataclasses
import gc
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from zodbshootout.config.loader import ConfigSource
from zodbshootout.phases.classic import REGISTRY, Step
from zodbshootout.rawkv.backends import Store, open_store, record_key
from zodbshootout.rawkv.section import StoreSpec
from zodbshootout.results.record import PhaseTiming, timings_from_plain, timings_to_plain
from zodbshootout.workload.objects import ADDED, UPDATED, check_payloads, make_payloads

WRITE_PHASES = ("add", "update")
READ_PHASES = ("cold", "hot")
MEASURED = WRITE_PHASES + READ_PHASES

#: Why an extra benchmark has no raw-store number.
_BENCHMARK_NOTE = "a benchmark of ZODB's storage API or conflict handling, which a raw store lacks"


def not_measured_reason(phase: str) -> str:
    """Why a floor has no number for *phase* (the table's footnote), from its record.

    Any phase but :data:`MEASURED`, also one added later: its record's
    ``raw_store_note``, or a reason that fits every phase of its sort.
    """
    record = REGISTRY.get(phase)
    if record is not None and record.raw_store_note:
        return record.raw_store_note
    if record is not None and record.extra:
        return _BENCHMARK_NOTE
    return f"a raw key-value store has no counterpart of ZODB's {phase} phase"


@dataclass(frozen=True)
class RawStageTask:
    """Everything one raw-store worker needs for one stage; crosses the process boundary."""

    source: ConfigSource  # only so the process harness can mask passwords, as for ZODB
    spec: StoreSpec
    worker: int
    object_count: int
    object_size_bytes: int
    steps: tuple[Step, ...]
    barrier_timeout_seconds: float
    measure_size: bool = False  # worker 0: read the store's size around each write phase
    #: (phase, loops): a looped phase (hot) repeats its reads this many times in a
    #: sample, as ZODB's do (the runner calibrates them in the warm-up).
    loops: tuple[tuple[str, int], ...] = ()

    # The task protocol of zodbshootout.concurrency.task (a floor runs in processes only).

    def execute(self, barrier: Any, context: Any = None) -> list[Any]:
        """Run this stage in the current process; its timings as plain data."""
        return timings_to_plain(execute_stage(self, barrier))

    def decode(self, results: list[Any]) -> list[Any]:
        return timings_from_plain(results)

    def timed_waits(self) -> list[tuple[int, str]]:
        # Each step waits twice, as a ZODB stage's; the first wait starts its clock.
        return [(2 * index, step.phase) for index, step in enumerate(self.steps) if step.timed]

    def to_plain(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_plain(cls, data: dict[str, Any]) -> RawStageTask:
        return cls(
            **{
                **data,
                "source": ConfigSource(**data["source"]),
                "spec": StoreSpec(**data["spec"]),
                "steps": tuple(Step(**step) for step in data["steps"]),
                "loops": tuple((phase, loops) for phase, loops in data["loops"]),
            }
        )


def plan_stages(selected: Sequence[str]) -> tuple[list[Step], list[Step]]:
    """The write and read stages that measure the selected phases a raw store has.

    As for ZODB, the write stage always adds and updates (reads check the
    update's values), and hot needs an earlier read on the same handle.
    """
    chosen = set(selected)
    writes = [Step(phase, phase in chosen) for phase in WRITE_PHASES]
    reads: list[Step] = []
    if "cold" in chosen or "hot" in chosen:
        reads.append(Step("cold", timed="cold" in chosen))
    if "hot" in chosen:
        reads.append(Step("hot"))
    return writes, reads


def execute_stage(
    task: RawStageTask, barrier: Any, clock: Callable[[], float] = time.perf_counter
) -> list[PhaseTiming]:
    """Run the stage's steps on the store; return the timed steps' timings."""
    handle = [open_store(task.spec)]
    keys = [record_key(task.worker, index) for index in range(task.object_count)]
    loops = dict(task.loops)
    try:
        timings = []
        for step in task.steps:
            if step.phase == "cold":
                # A fresh handle: none of the library's caches hold the records.
                handle[0].close()
                handle[0] = open_store(task.spec)
            store = handle[0]
            prepared = _prepare(step.phase, task, keys)
            sizing = task.measure_size and step.phase in WRITE_PHASES
            # Before the first barrier no worker writes; after the second all have committed.
            size_before = store.size_bytes() if sizing else 0
            gc.collect()
            barrier.wait(task.barrier_timeout_seconds)
            run, repeats = _RUNS[step.phase], loops.get(step.phase, 1)
            start = clock()
            for _ in range(repeats):
                outcome = run(store, prepared)
            end = clock()
            barrier.wait(task.barrier_timeout_seconds)
            growth = store.size_bytes() - size_before if sizing else None
            if step.phase in READ_PHASES:
                read = [value if value is not None else b"" for value in outcome]
                check_payloads(
                    task.worker, read, UPDATED, task.object_size_bytes, task.object_count
                )
            if step.timed:
                reads = task.object_count if step.phase in READ_PHASES else 0
                timings.append(
                    PhaseTiming(
                        phase=step.phase,
                        worker=task.worker,
                        seconds=end - start,
                        objects=task.object_count,
                        loads=reads,
                        storage_loads=reads,
                        cache_hits=None,
                        storage_growth_bytes=growth,
                        loops=repeats,
                    )
                )
        return timings
    finally:
        handle[0].close()


def _prepare(phase: str, task: RawStageTask, keys: list[bytes]) -> Any:
    """Untimed: the records to write, or the keys to read."""
    if phase in WRITE_PHASES:
        generation = ADDED if phase == "add" else UPDATED
        payloads = make_payloads(task.worker, task.object_count, generation, task.object_size_bytes)
        return list(zip(keys, payloads, strict=True))
    return keys


def _write(store: Store, items: Any) -> None:
    store.write(items)


def _read(store: Store, keys: Any) -> list[bytes | None]:
    return store.read(keys)


#: The timed part of each phase: the store's work only.
_RUNS: dict[str, Callable[[Store, Any], Any]] = {
    "add": _write,
    "update": _write,
    "cold": _read,
    "hot": _read,
}


def remove_records(spec: StoreSpec) -> int:
    """Untimed set-up before a repetition: delete the tool's records (the parent does it)."""
    store = open_store(spec)
    try:
        return store.remove_ours()
    finally:
        store.close()
