"""What the runner's loop asks of a ``<rawkv>`` floor: its session, stages, tasks, losses.

The runner repeats a floor's cells in the same loop and rounds as a ZODB
database's (see zodbshootout.run.column: warm-up, -r, --precision,
--max-time).  A repetition removes the tool's records (untimed, like
populate), then c fresh worker processes run the write stage and c other
fresh processes the read stage, between the same barriers, and their
timings are recorded.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from zodbshootout.config.loader import LoadedConfig
from zodbshootout.phases.classic import Step
from zodbshootout.rawkv.section import BACKENDS, RawKVSection, StoreSpec
from zodbshootout.rawkv.stage import (
    MEASURED,
    READ_PHASES,
    RawStageTask,
    not_measured_reason,
    plan_stages,
    remove_records,
)

PROCESSES_ONLY = (
    "a raw key-value floor runs its workers as processes only; run it without --threads/--gevent"
)


class FloorSession:
    """One repetition of a floor's cell, as the runner's loop drives every column's.

    Populate removes the tool's records (untimed, in this process); each
    stage runs in fresh worker processes (*run_stage*, the runner's).
    """

    def __init__(self, spec: StoreSpec, run_stage: Callable[..., Any]) -> None:
        self.spec = spec
        self._run_stage = run_stage

    def populate(self, fill: Callable[[Any], Any]) -> None:
        """A raw store starts each repetition without the tool's records (*fill* is ZODB's)."""
        remove_records(self.spec)

    def run_stage(
        self, tasks: Sequence[Any], timeout_seconds: float, on_progress: Any = None
    ) -> Any:
        return self._run_stage(tasks, timeout_seconds, on_progress)

    def close(self) -> None:
        """Nothing stays open between stages: each worker opens and closes its handle."""


def not_applicable(phases: Sequence[str]) -> dict[str, str]:
    """The selected phases a raw store has no number for, and why (footnotes)."""
    return {phase: not_measured_reason(phase) for phase in phases if phase not in MEASURED}


def describe(section: RawKVSection) -> dict[str, Any]:
    """What the result file records about a floor (``databases.NAME``)."""
    spec = section.spec()
    backend = BACKENDS[spec.backend]
    return {
        "kind": "rawkv",
        "backend": spec.backend,
        "path": spec.path,
        "sync": spec.sync,
        "library_version": backend.library_version(),
        "size": {"method": backend.size_method},
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
    backend = BACKENDS[section.backend]
    if backend.one_process and workers > 1:
        return f"{backend.label} can be opened by only one process at a time; measure it with -c 1"
    return None


def stages(phases: Sequence[str]) -> dict[str, list[Step]]:
    """The write and the read stage's steps for the selected phases (see rawkv.stage)."""
    return dict(zip(("write", "read"), plan_stages(phases), strict=True))


def stage_tasks(
    config: LoadedConfig,
    name: str,
    count: int,
    workers: int,
    steps: list[Step],
    options: Any,
    loops: tuple[tuple[str, int], ...] = (),
) -> list[Any]:
    """One task per worker for a stage of floor *name* (worker 0 reads the store's size);
    *loops*: (phase, loops) of the looped phases, as the runner calibrated them."""
    spec = config.databases[name].spec()
    return [
        RawStageTask(
            source=config.source,
            spec=spec,
            worker=worker,
            object_count=count,
            object_size_bytes=options.object_size_bytes,
            steps=tuple(steps),
            barrier_timeout_seconds=options.timeout_seconds,
            measure_size=worker == 0,
            loops=loops,
        )
        for worker in range(workers)
    ]


def phases_lost(stage: str, phases: Sequence[str]) -> list[str]:
    """The measured phases a failure of *stage* leaves without a number (a write's: all)."""
    measured = measured_phases(phases)
    return measured if stage == "write" else _reads(measured)


def _reads(measured: Sequence[str]) -> list[str]:
    return [phase for phase in measured if phase in READ_PHASES]
