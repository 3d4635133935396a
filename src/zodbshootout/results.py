"""The raw record of a run: every worker's timing of every phase, and every failure.

Statistics and renderers are computed from a :class:`RunResult`; nothing here
prints or reads a clock.  The records are plain data so that they cross
process boundaries and serialise as JSON unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class PhaseTiming:
    """One worker's timed sample of one phase, with its load counts.

    ``seconds`` is the sample's timed work: open → commit → close of the
    phase's transaction, or for a phase that repeats inside its sample (hot,
    steamin, open; see zodbshootout.calibration) the sum of its ``loops``
    timed repetitions, so the duration of one is ``seconds / loops``.
    ``objects`` is what one repetition handles: N objects (or operations),
    one connection for open.
    The counts are this worker's deltas over the phase (see caches.Counters;
    for thread workers, thread_counting says how they are split — with one
    shared DB only worker 0 records ``cache_hits``, for all workers).
    """

    phase: str
    worker: int
    seconds: float
    objects: int
    loads: int
    storage_loads: int | None
    cache_hits: int | None
    #: Commits this worker had to abort and retry (conflict benchmarks only).
    conflicts: int = 0
    #: With --leaks: growth of the gc-tracked objects over the phase, by type
    #: name, plus "*total*"; None when not measured (see diagnostics).
    object_growth: dict[str, int] | None = None
    #: Bytes the storage grew by over this phase, read untimed by worker 0
    #: after every worker committed (write phases; see storagesize); None
    #: for the other workers and when the size can't be read.
    storage_growth_bytes: int | None = None
    #: Get hits and misses of the shared cache (memcached) over this phase,
    #: as its servers count them (all clients at once), read by worker 0;
    #: None for the other workers and without a shared cache.
    shared_cache_hits: int | None = None
    shared_cache_misses: int | None = None
    #: How many times the phase's work repeated inside the sample.
    loops: int = 1
    #: Statements sent to the SQL database during the phase (RelStorage
    #: only, see zodbshootout.round_trips); None where not counted.
    statements: int | None = None


@dataclass(frozen=True)
class Measurement:
    """A PhaseTiming placed in the run: which database, count, concurrency, repetition."""

    database: str
    concurrency: int
    object_count: int
    repetition: int
    timing: PhaseTiming
    #: The untimed warm-up repetition (repetition 0): kept, never in the statistics.
    warmup: bool = False

    @property
    def phase(self) -> str:
        return self.timing.phase


@dataclass(frozen=True)
class Failure:
    """Cells that could not be measured, and why (one line, no secrets)."""

    database: str
    concurrency: int
    object_count: int
    phases: tuple[str, ...]
    reason: str


@dataclass(frozen=True)
class CellKey:
    """One cell of the table."""

    database: str
    concurrency: int
    object_count: int
    phase: str


@dataclass
class RunResult:
    """Everything a run measured, in the order it was measured."""

    databases: list[str]
    object_counts: list[int]
    concurrencies: list[int]
    phases: list[str]
    repetitions: int
    measurements: list[Measurement] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    interrupted: bool = False
    #: Databases refused because they hold data the tool did not write.
    refused: list[str] = field(default_factory=list)
    #: Databases of which nothing was measured (unreachable, refused, ...).
    setup_failed: list[str] = field(default_factory=list)
    #: The signal that interrupted the run ("SIGINT", "SIGTERM"), if one did.
    signal: str | None = None

    def failure_for(self, key: CellKey) -> Failure | None:
        for failure in self.failures:
            if (
                failure.database == key.database
                and failure.concurrency == key.concurrency
                and failure.object_count == key.object_count
                and key.phase in failure.phases
            ):
                return failure
        return None

    def timings_for(self, key: CellKey) -> dict[int, list[PhaseTiming]]:
        """The cell's timings grouped by repetition, warm-up left out."""
        by_repetition: dict[int, list[PhaseTiming]] = {}
        for m in self.measurements:
            if (
                not m.warmup
                and m.database == key.database
                and m.concurrency == key.concurrency
                and m.object_count == key.object_count
                and m.phase == key.phase
            ):
                by_repetition.setdefault(m.repetition, []).append(m.timing)
        return by_repetition

    def unsettled_phases(self, database: str, object_count: int, concurrency: int) -> list[str]:
        """The cell's phases neither measured nor failed yet, in run order."""
        where = (database, object_count, concurrency)
        done = {
            m.phase
            for m in self.measurements
            if (m.database, m.object_count, m.concurrency) == where
        }
        failed = {
            p
            for f in self.failures
            if (f.database, f.object_count, f.concurrency) == where
            for p in f.phases
        }
        return [p for p in self.phases if p not in done | failed]

    def fail_unsettled(self, database: str, reason: str) -> None:
        """Fail every cell of *database* not yet measured or failed, for *reason*.

        A database of which nothing was measured is also set_up_failed (the
        CLI exits 2 when that is true of every database: nothing could run).
        """
        for count in self.object_counts:
            for concurrency in self.concurrencies:
                left = self.unsettled_phases(database, count, concurrency)
                if left:
                    self.failures.append(Failure(database, concurrency, count, tuple(left), reason))
        if not any(m.database == database for m in self.measurements):
            self.setup_failed.append(database)

    @property
    def complete(self) -> bool:
        """True when every cell was measured."""
        return not self.failures and not self.interrupted
