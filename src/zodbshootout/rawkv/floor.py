"""The cell loop of a ``<rawkv>`` floor: repetitions of a write and a read stage.

The same loop as a ZODB database's (see zodbshootout.run.runner): for each count,
concurrency level and repetition, the tool's records are removed (untimed,
like populate), then c fresh worker processes run the write stage and c
other fresh processes the read stage, between the same barriers, and their
timings are recorded.  The runner hands in how it records, reports and fails
(:class:`FloorHooks`), and how it runs a stage in processes.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from zodbshootout.config.loader import LoadedConfig
from zodbshootout.rawkv.section import BACKENDS, RawKVSection
from zodbshootout.rawkv.stage import (
    MEASURED,
    READ_PHASES,
    RawStageTask,
    not_measured_reason,
    plan_stages,
    remove_records,
)
from zodbshootout.results.record import Measurement, PhaseTiming, RunResult

#: What the size readings of a floor count, per backend (see rawkv.backends).
SIZE_METHODS = {
    "lmdb": "LMDB B+tree pages in use (branch, leaf, overflow) × page size",
    "leveldb": "LevelDB directory: tables and write-ahead log",
    "sqlite": "SQLite pages in use × page size",
}

PROCESSES_ONLY = (
    "a raw key-value floor runs its workers as processes only; run it without --threads/--gevent"
)


@dataclass(frozen=True)
class FloorHooks:
    """What the runner lends the floor's loop."""

    report: Callable[[int, int, int, str], None]  # count, workers, repetition, stage
    record: Callable[[int, int, int, PhaseTiming], None]  # count, workers, repetition, timing
    fail: Callable[[int, int, Sequence[str], str], None]  # count, workers, phases, reason
    run_stage: Callable[[list[Any], float], Any]  # tasks, timeout -> StageOutcome
    #: Whether the run's concurrency mode has worker processes (its record says).
    worker_processes: bool


def not_applicable(phases: Sequence[str]) -> dict[str, str]:
    """The selected phases a raw store has no number for, and why (footnotes)."""
    return {phase: not_measured_reason(phase) for phase in phases if phase not in MEASURED}


def describe(section: RawKVSection) -> dict[str, Any]:
    """What the result file records about a floor (``databases.NAME``)."""
    spec = section.spec()
    package = BACKENDS[spec.backend][0]
    try:
        version = importlib.metadata.version(package) if package != "sqlite3" else None
    except importlib.metadata.PackageNotFoundError:
        version = None
    if spec.backend == "sqlite":
        import sqlite3

        version = sqlite3.sqlite_version
    return {
        "kind": "rawkv",
        "backend": spec.backend,
        "path": spec.path,
        "sync": spec.sync,
        "library_version": version,
        "size": {"method": SIZE_METHODS[spec.backend]},
    }


def measure_floor(
    config: LoadedConfig,
    name: str,
    phases: Sequence[str],
    options: Any,
    hooks: FloorHooks,
) -> None:
    """Measure floor *name* for every count and concurrency level of *options*."""
    section: RawKVSection = config.databases[name]
    spec = section.spec()
    measured = [phase for phase in phases if phase in MEASURED]
    writes, reads = plan_stages(phases)
    for count in options.object_counts:
        for workers in options.concurrencies:
            problem = _problem(spec.backend, hooks.worker_processes, workers)
            if problem:
                hooks.fail(count, workers, measured, problem)
                continue
            for repetition in range(1, options.repetitions + 1):
                hooks.report(count, workers, repetition, "populate")
                remove_records(spec)
                for stage, steps in (("write", writes), ("read", reads)):
                    if not steps:
                        continue
                    hooks.report(count, workers, repetition, stage)
                    tasks: list[Any] = [
                        RawStageTask(
                            source=config.source,
                            spec=spec,
                            worker=worker,
                            object_count=count,
                            object_size_bytes=options.object_size_bytes,
                            steps=tuple(steps),
                            barrier_timeout_seconds=options.timeout_seconds,
                            measure_size=worker == 0,
                        )
                        for worker in range(workers)
                    ]
                    outcome = hooks.run_stage(tasks, options.timeout_seconds)
                    if outcome.error is not None:
                        lost = measured if stage == "write" else _reads(measured)
                        hooks.fail(count, workers, lost, f"{stage} stage failed: {outcome.error}")
                        break
                    for timing in outcome.timings:
                        hooks.record(count, workers, repetition, timing)
                else:
                    continue
                break  # a failed stage ends the cell
            hooks.report(count, workers, options.repetitions, "done")


def _reads(measured: Sequence[str]) -> list[str]:
    return [phase for phase in measured if phase in READ_PHASES]


def _problem(backend: str, worker_processes: bool, workers: int) -> str | None:
    if not worker_processes:
        return PROCESSES_ONLY
    if backend == "leveldb" and workers > 1:
        return "LevelDB can be opened by only one process at a time; measure it with -c 1"
    return None


def measure_column(
    config: LoadedConfig,
    name: str,
    result: RunResult,
    options: Any,
    report: Callable[[int, int, int, str], None],
    fail: Callable[[int, int, Sequence[str], str], None],
    run_stage: Callable[[list[Any], float], Any],
    worker_processes: bool,
) -> None:
    """Floor *name*'s whole column in *result*: its description, footnoted phases, timings.

    Floors are measured after the ZODB databases, -r repetitions each (no
    warm-up, no rounds: a raw store's stages take milliseconds).
    """
    result.metadata.setdefault("databases", {})[name] = describe(config.databases[name])
    skipped = not_applicable(result.phases)
    if skipped:
        result.metadata.setdefault("not_applicable", {})[name] = skipped

    def record(count: int, workers: int, repetition: int, timing: PhaseTiming) -> None:
        result.measurements.append(Measurement(name, workers, count, repetition, timing))

    hooks = FloorHooks(report, record, fail, run_stage, worker_processes)
    measure_floor(config, name, result.phases, options, hooks)
