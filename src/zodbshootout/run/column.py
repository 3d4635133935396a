"""What the runner asks of a column at one level: a ZODB database or a ``<rawkv>`` floor.

Every column's repetition is the same loop (:meth:`Runner._stages
<zodbshootout.run.runner.Runner>`): open a session, populate it (untimed),
then run each stage's tasks between the workers' barriers and record their
timings, in the rounds of zodbshootout.run.rounds.  What differs between a
database and a floor is asked of its :class:`Column`: how its session
opens, which tasks a stage has, which phases it measures and a failed stage
loses.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from zodbshootout import concurrency, storages
from zodbshootout.concurrency.processes import run_stage_in_processes
from zodbshootout.concurrency.session import Session, SessionSpec, stage_tasks
from zodbshootout.config.loader import LoadedConfig
from zodbshootout.options.run import RunOptions
from zodbshootout.phases.classic import Step, phases_failed_with
from zodbshootout.phases.setup import repetition_filler
from zodbshootout.rawkv import floor
from zodbshootout.run.rounds import Loops

__all__ = ["Column", "database_column", "floor_column"]


def _nothing() -> None:
    pass


@dataclass(frozen=True)
class Column:
    """One column at one object count and concurrency level."""

    name: str
    workers: int
    #: The phases it has numbers for (an error outside a stage loses them all).
    measured: tuple[str, ...]
    #: Stage name ("write", "read") -> its steps; a stage without steps is skipped.
    stages: dict[str, list[Step]]
    #: Opens one repetition's session (closed after the repetition).
    open_session: Callable[[], Session]
    #: What ``session.populate`` is given: fills the database (untimed).
    fill: Callable[[Any], None]
    #: ``tasks(steps, repetition, loops)``: one task per worker for a stage.
    tasks: Callable[[list[Step], int, Loops], list[Any]]
    #: ``lost(stage)``: the phases a failure of *stage* leaves unmeasured.
    lost: Callable[[str], list[str]]
    #: Untimed, in the runner's process, before and after populate.
    before_repetition: Callable[[], None] = _nothing


def database_column(
    spec: SessionSpec,
    options: RunOptions,
    count: int,
    phases: tuple[str, ...],
    stages: dict[str, list[Step]],
    factory: Any,
    name: str | None = None,
) -> Column:
    """A ZODB database's column: sessions of the run's mode, the classic stages' tasks.

    *name*: the column's name in the result (an --rtt row's, ``zeo_fs@2ms``),
    when it is not the database's.
    """
    return Column(
        name or spec.database,
        spec.concurrency,
        measured=phases,
        stages=stages,
        open_session=partial(concurrency.open_session, spec),
        fill=repetition_filler(
            spec.concurrency, count, phases, options.btrees, options.index_entries
        ),
        tasks=lambda steps, repetition, loops: stage_tasks(
            spec, options, count, repetition, steps, loops
        ),
        lost=lambda stage: phases_failed_with(stage, phases),
        # E.g. SQLite's stale planner statistics.
        before_repetition=partial(storages.before_repetition, factory),
    )


def floor_column(
    config: LoadedConfig,
    name: str,
    count: int,
    workers: int,
    phases: list[str],
    options: RunOptions,
) -> Column:
    """A ``<rawkv>`` floor's column: its own session and tasks, in worker processes."""
    section = config.databases[name]
    return Column(
        name,
        workers,
        measured=tuple(floor.measured_phases(phases)),
        stages=floor.stages(phases),
        open_session=lambda: floor.FloorSession(section.spec(), run_stage_in_processes),
        fill=lambda db: None,
        tasks=lambda steps, _repetition, loops: floor.stage_tasks(
            config, name, count, workers, steps, options, loops
        ),
        lost=lambda stage: floor.phases_lost(stage, phases),
    )
