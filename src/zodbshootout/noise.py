"""How busy the machine was while a database was measured.

Other programs that run at the same time take CPU time from the workers and
the servers, and no statistic can tell that from the storage's own speed.
The runner records the 1-minute load average before and after each
database; when it reached the number of cores, the CLI warns.  (The
machine's fixed facts, CPU model and frequency governor, are recorded with
the run's metadata.)
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any


def load_average() -> float | None:
    """The 1-minute load average, or None where the system doesn't tell."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def record_before(metadata: dict[str, Any], database: str) -> dict[str, float | None]:
    """Record the load average before *database*'s first repetition; return its record.

    The caller sets ``"after"`` in the record after each repetition.
    """
    record: dict[str, float | None] = metadata.setdefault("load_average", {}).setdefault(
        database, {}
    )
    record.setdefault("before", load_average())
    return record


def cores() -> int:
    return os.cpu_count() or 1


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
    cores_seen = (metadata.get("environment") or {}).get("cpu_count") or cores()
    warning = busy_warning([busiest(recorded)], int(cores_seen))
    return [warning] if warning else []
