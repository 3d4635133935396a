"""Stage tasks and timings as plain data (dicts, lists, str, numbers) and back.

Workers on other hosts receive their task and send their timings through
execnet, which carries only Python's builtin types; these are the two ends
of that conversion, so that no class of ours crosses the wire.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from zodbshootout.concurrency.worker import StageTask
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


def _lists(value: Any) -> Any:
    """Tuples become lists, all the way down (execnet carries both; JSON only lists)."""
    if isinstance(value, dict):
        return {key: _lists(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_lists(item) for item in value]
    return value
