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
from typing import Any

from zodbshootout.concurrency.session import Session
from zodbshootout.phases.classic import Step
from zodbshootout.run.rounds import Loops

__all__ = ["Column"]


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
