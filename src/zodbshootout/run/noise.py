"""How busy the machine was while a database was measured.

Other programs that run at the same time take CPU time from the workers and
the servers, and no statistic can tell that from the storage's own speed.
The runner records the 1-minute load average before and after each
database; when it reached the number of cores, the CLI warns
(:mod:`zodbshootout.results.noise` reads the records back).  (The
machine's fixed facts, CPU model and frequency governor, are recorded with
the run's metadata.)
"""

from __future__ import annotations

import os
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
