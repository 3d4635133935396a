"""Counting probes: loads and cache hits, statements to the database, the shared cache's hits.

Loads and hits are read from the storage's and ZODB's own counters before
the first barrier and after the second (see zodbshootout.phases.caches).
Statements are read beside the phase's clock, so that only those inside the
timed region count; with ``--counters`` off the storage counts none and the
reading is None.  The shared cache (memcached) counts every client: worker
0 reads it for all.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from zodbshootout import storages
from zodbshootout.probes.base import Clock, Probe, Step

__all__ = ["LoadCounts", "MeteredClock", "SharedCacheCounts", "Statements"]


class CountedDatabase(Protocol):
    """A worker's database and its load counts (concurrency.worker.WorkerDatabase)."""

    def start_counting(self) -> None: ...
    def stop_counting(self) -> Any: ...


class LoadCounts(Probe):
    """``loads``, ``storage_loads`` and ``cache_hits`` of the worker over the step."""

    def __init__(self, database: CountedDatabase) -> None:
        self.database = database

    def before(self, step: Step) -> None:
        self.database.start_counting()

    def after(self, step: Step) -> dict[str, Any]:
        counted = self.database.stop_counting()
        return {
            "loads": counted.loads,
            "storage_loads": counted.storage_loads,
            "cache_hits": counted.cache_hits,
        }


class Statements(Probe):
    """``statements``: those this thread sent to the SQL database inside the timed region."""

    def __init__(self, db: Any) -> None:
        kind = storages.kind_of(db.storage)
        self._count: Callable[[], int | None] = lambda: kind.statements(
            db.storage, this_thread=True
        )
        self._metered: MeteredClock | None = None

    def clock(self, clock: Clock) -> Clock:
        self._metered = MeteredClock(clock, self._count)
        return self._metered

    def after(self, step: Step) -> dict[str, Any]:
        return {"statements": None if self._metered is None else self._metered.statements_timed}


class MeteredClock:
    """A clock that also counts the database statements sent while it is running.

    A phase calls its clock in pairs, start then stop (a looped phase once
    per timed repetition), so the statements between the two calls of each
    pair are the ones inside the timed region: untimed work in between (a
    looped read's open and close) is not counted.
    """

    def __init__(self, clock: Clock, statements: Callable[[], int | None]) -> None:
        self._clock = clock
        self._statements = statements
        self._started_at: int | None = None
        self._calls = 0
        self.statements_timed: int | None = None

    def __call__(self, /) -> float:
        starting = self._calls % 2 == 0
        self._calls += 1
        if starting:
            # Counted before the clock starts and after it stops: the counting
            # itself stays out of the timed region.
            self._started_at = self._statements()
            return self._clock()
        now_seconds = self._clock()
        now = self._statements()
        if now is not None and self._started_at is not None:
            self.statements_timed = (self.statements_timed or 0) + now - self._started_at
        return now_seconds


class SharedCacheCounts(Probe):
    """``shared_cache_hits``, ``_misses`` and ``_sets``: the shared cache's server-wide counts.

    Worker 0's probe only: the servers count every worker at once.
    """

    def __init__(self, db: Any) -> None:
        self.storage = db.storage
        self._before: tuple[int, int, int] | None = None

    def _counts(self) -> tuple[int, int, int] | None:
        return storages.kind_of(self.storage).shared_cache_counts(self.storage)

    def before(self, step: Step) -> None:
        self._before = self._counts() if step.timed else None

    def after(self, step: Step) -> dict[str, Any]:
        after = self._counts() if self._before is not None else None
        if self._before is None or after is None:
            return {
                "shared_cache_hits": None,
                "shared_cache_misses": None,
                "shared_cache_sets": None,
            }
        return {
            "shared_cache_hits": after[0] - self._before[0],
            "shared_cache_misses": after[1] - self._before[1],
            "shared_cache_sets": after[2] - self._before[2],
        }
