"""Before every repetition: the workers' containers, their indexes, the benchmarks' objects.

Runs untimed, in the process where the session's workers will find the
data (a gevent session's child for MappingStorage).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from zodbshootout.phases import benchmarks
from zodbshootout.workload import indexes
from zodbshootout.workload.containers import container_factory
from zodbshootout.workload.root import ROOT_KEY, connection_in_transaction, populate

__all__ = ["fill_for_repetition", "repetition_filler"]


def repetition_filler(
    concurrency: int,
    count: int,
    phases: tuple[str, ...],
    btrees: str | None,
    index_entries: int = 0,
) -> Callable[[Any], None]:
    """:func:`fill_for_repetition` for one cell, as a picklable ``fill(db)``."""
    return functools.partial(
        fill_for_repetition,
        concurrency=concurrency,
        count=count,
        phases=phases,
        container_factory=container_factory(btrees),
        index_entries=index_entries,
    )


def fill_for_repetition(
    db: Any,
    concurrency: int,
    count: int,
    phases: tuple[str, ...],
    container_factory: Any,
    index_entries: int = 0,
) -> None:
    """Reset the workers' containers, their indexes and the benchmarks' shared objects.

    Runs before every repetition, in the process where the session's
    workers will find the data (a gevent session's child for MappingStorage);
    picklable by name.
    """
    populate(db, concurrency, container_factory)
    benchmarks.setup(db, list(phases), concurrency, count)
    with connection_in_transaction(db) as conn:
        indexes.setup(conn.root()[ROOT_KEY], concurrency, index_entries)
