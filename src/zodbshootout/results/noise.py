"""Whether the machine was busy while a saved run was measured: the load averages it recorded.

:mod:`zodbshootout.run.noise` records them; this reads them back, for the
warning a run, ``show`` and ``report`` give.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any


def busiest(loads: Mapping[str, Mapping[str, Any]]) -> float | None:
    """The highest load average recorded for any database (see Runner), or None."""
    values = [
        value
        for sample in loads.values()
        for value in sample.values()
        if isinstance(value, (int, float))
    ]
    return max(values) if values else None


def busy_warning(loads: Iterable[float | None], core_count: int) -> str | None:
    """The warning for stderr when a load average reached *core_count*, else None."""
    known = [load for load in loads if load is not None]
    if not known or max(known) < core_count:
        return None
    return (
        f"machine was busy: load average {max(known):.1f} on {core_count} "
        f"core{'s' if core_count != 1 else ''}; close other programs and run again "
        "for numbers that only measure the databases"
    )


def format_busy_warning(metadata: Mapping[str, Any]) -> list[str]:
    """The busy-machine warning for a run's metadata (load averages, cores), or []."""
    recorded = metadata.get("load_average") or {}
    warning = busy_warning([busiest(recorded)], _cores(metadata))
    return [warning] if warning else []


def busy_load(metadata: Mapping[str, Any]) -> str | None:
    """``load 10.6 on 2 cores`` when a saved run was measured on a busy machine, else None.

    For ``history`` and ``compare``: a run measured under load reads slower
    for reasons that are not the storage's.
    """
    load = busiest(metadata.get("load_average") or {})
    core_count = _cores(metadata)
    if load is None or load < core_count:
        return None
    return f"load {load:.1f} on {core_count} core{'s' if core_count != 1 else ''}"


def _cores(metadata: Mapping[str, Any]) -> int:
    """The cores of the machine the run was measured on (this one's if unrecorded)."""
    return int((metadata.get("environment") or {}).get("cpu_count") or os.cpu_count() or 1)
