"""A repetition of a ``<rawkv>`` floor's cell: a write and a read stage.

The runner repeats a floor's cells in the same rounds as a ZODB database's
(see zodbshootout.run.runner and .rounds: warm-up, -r, --precision,
--max-time).  A repetition removes the tool's records (untimed, like
populate), then c fresh worker processes run the write stage and c other
fresh processes the read stage, between the same barriers, and their timings
are recorded.  The runner hands in how it records, reports and fails
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
from zodbshootout.results.record import PhaseTiming

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
    """What the runner lends one repetition of a floor's cell (bound to that cell)."""

    report: Callable[[str], None]  # the step starting: "populate", "write", "read"
    record: Callable[[list[PhaseTiming]], None]  # a finished stage's timings
    fail: Callable[[Sequence[str], str], None]  # the phases lost, why
    run_stage: Callable[[list[Any], float], Any]  # tasks, timeout -> StageOutcome


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


def set_up(
    name: str, section: RawKVSection, phases: Sequence[str], metadata: dict[str, Any]
) -> None:
    """Record what the result file says of floor *name*: its description, footnoted phases."""
    metadata.setdefault("databases", {})[name] = describe(section)
    skipped = not_applicable(phases)
    if skipped:
        metadata.setdefault("not_applicable", {})[name] = skipped


def measured_phases(phases: Sequence[str]) -> list[str]:
    """The selected phases a floor has a number for (the others are footnotes)."""
    return [phase for phase in phases if phase in MEASURED]


def problem(section: RawKVSection, worker_processes: bool, workers: int) -> str | None:
    """Why the floor can't be measured at *workers* in the run's mode, or None."""
    if not worker_processes:
        return PROCESSES_ONLY
    if section.backend == "leveldb" and workers > 1:
        return "LevelDB can be opened by only one process at a time; measure it with -c 1"
    return None


def repeat(
    config: LoadedConfig,
    name: str,
    phases: Sequence[str],
    count: int,
    workers: int,
    options: Any,
    hooks: FloorHooks,
) -> list[PhaseTiming] | None:
    """One repetition of floor *name*'s cell; None if a stage failed (it ends the cell).

    The runner calls it in its rounds, as it repeats a ZODB database's cell
    (see zodbshootout.run.rounds), so -r, --precision and --max-time apply alike.
    """
    spec = config.databases[name].spec()
    measured = measured_phases(phases)
    hooks.report("populate")
    remove_records(spec)
    timings: list[PhaseTiming] = []
    for stage, steps in zip(("write", "read"), plan_stages(phases), strict=True):
        if not steps:
            continue
        hooks.report(stage)
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
            hooks.fail(lost, f"{stage} stage failed: {outcome.error}")
            return None
        hooks.record(outcome.timings)
        timings.extend(outcome.timings)
    return timings


def _reads(measured: Sequence[str]) -> list[str]:
    return [phase for phase in measured if phase in READ_PHASES]
