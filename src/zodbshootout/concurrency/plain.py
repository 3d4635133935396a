"""Stage tasks and timings as plain data (dicts, lists, str, numbers) and back.

Workers on other hosts receive their task and send their timings through
execnet, which carries only Python's builtin types; these are the two ends
of that conversion, so that no class of ours crosses the wire.

Besides the classic :class:`StageTask`, a worker may run a task that runs
itself (:class:`PlainTask`, e.g. a mix worker): it encodes itself, its
class travels as its module and name (as pickle names a class in the
processes mode), and its results are plain data already.
"""

from __future__ import annotations

import dataclasses
import importlib
from typing import Any, ClassVar, Protocol

from zodbshootout.concurrency.worker import Barrier, StageTask
from zodbshootout.config.loader import ConfigSource
from zodbshootout.faults import Fault
from zodbshootout.phases.classic import Step
from zodbshootout.probes.diagnostics import LogSetup
from zodbshootout.results.record import PhaseTiming


def task_to_plain(task: StageTask) -> dict[str, Any]:
    """*task* as nested dicts and lists of builtin values."""
    return _lists(dataclasses.asdict(task))


def task_from_plain(data: dict[str, Any]) -> StageTask:
    """The StageTask that :func:`task_to_plain` turned into *data*."""
    fields = dict(data)
    fields["source"] = ConfigSource(**fields["source"])
    fields["server_addresses"] = tuple((host, port) for host, port in fields["server_addresses"])
    fields["steps"] = tuple(Step(**step) for step in fields["steps"])
    fields["loops"] = tuple((phase, loops) for phase, loops in fields["loops"])
    if fields["log"] is not None:
        fields["log"] = LogSetup(**fields["log"])
    if fields["fault"] is not None:
        fields["fault"] = Fault(**fields["fault"])
    return StageTask(**fields)


def timings_to_plain(timings: list[PhaseTiming]) -> list[dict[str, Any]]:
    return [dataclasses.asdict(timing) for timing in timings]


def timings_from_plain(data: list[dict[str, Any]]) -> list[PhaseTiming]:
    return [PhaseTiming(**timing) for timing in data]


class PlainTask(Protocol):
    """A task that runs itself on a host and crosses to it as plain data."""

    @property
    def worker(self) -> int:
        """The worker's number, from 0."""
        ...

    @property
    def source(self) -> ConfigSource:
        """The configuration it opens (its secrets are kept out of the worker's log)."""
        ...

    #: The barrier waits (counted from 0) that start a timed phase, with its name:
    #: the coordinator measures their release skew (see concurrency.hosts).
    timed_waits: ClassVar[tuple[tuple[int, str], ...]]

    def to_plain(self) -> dict[str, Any]:
        """The task's fields as builtin values."""
        ...

    @classmethod
    def from_plain(cls, data: dict[str, Any], progress: Any) -> PlainTask:
        """The task :meth:`to_plain` made *data* of; *progress* has ``put_nowait(message)``."""
        ...

    def execute(self, barrier: Barrier) -> list[Any]:
        """Run the task between the barrier's waits; its results as plain data."""
        ...


#: Only the package's own classes may be named in a task (see task_class).
_OWN_PACKAGE = "zodbshootout."


def plain_task_to_plain(task: PlainTask) -> dict[str, Any]:
    """*task* with its class's name, for :func:`plain_task_from_plain` on the host."""
    cls = type(task)
    return {"class": f"{cls.__module__}:{cls.__qualname__}", "fields": _lists(task.to_plain())}


def plain_task_from_plain(data: dict[str, Any], progress: Any) -> PlainTask:
    """The task :func:`plain_task_to_plain` encoded, its class imported by name."""
    module, _, name = data["class"].partition(":")
    if not module.startswith(_OWN_PACKAGE):
        raise ValueError(f"{data['class']!r} is not a task class of zodbshootout")
    cls = getattr(importlib.import_module(module), name)
    task: PlainTask = cls.from_plain(data["fields"], progress)
    return task


def results_from_plain(task: StageTask | PlainTask, data: list[Any]) -> list[Any]:
    """What a worker of *task* sent back: PhaseTimings for a StageTask, else as it came."""
    return timings_from_plain(data) if isinstance(task, StageTask) else list(data)


def timed_waits(task: StageTask | PlainTask) -> list[tuple[int, str]]:
    """The barrier waits of *task* that start a timed phase, with the phase's name."""
    if isinstance(task, StageTask):
        # Each step waits twice; the first wait starts its clock.
        return [(2 * index, step.phase) for index, step in enumerate(task.steps) if step.timed]
    return list(task.timed_waits)


def _lists(value: Any) -> Any:
    """Tuples become lists, all the way down (execnet carries both; JSON only lists)."""
    if isinstance(value, dict):
        return {key: _lists(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_lists(item) for item in value]
    return value
