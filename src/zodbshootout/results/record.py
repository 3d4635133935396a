"""The raw record of a run: every worker's timing of every phase, and every failure.

Statistics and renderers are computed from a :class:`RunResult`; nothing here
prints or reads a clock.  The records are plain data so that they cross
process boundaries and serialise as JSON unchanged.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

#: Orders of :meth:`RunResult.cells`, outermost axis first.
TABLE_ORDER = ("concurrency", "object_count", "phase", "database")
DATABASE_ORDER = ("concurrency", "database", "object_count", "phase")


@dataclass(frozen=True)
class PhaseTiming:
    """One worker's timed sample of one phase, with its load counts.

    ``seconds`` is the sample's timed work: open → commit → close of the
    phase's transaction, or for a phase that repeats inside its sample (hot,
    steamin, open; see zodbshootout.run.calibration) the sum of its ``loops``
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
    #: Sets (writes) the shared cache's servers took over this phase, likewise.
    shared_cache_sets: int | None = None
    #: How many times the phase's work repeated inside the sample.
    loops: int = 1
    #: Statements sent to the SQL database during the phase (RelStorage
    #: only, see zodbshootout.storages.relstorage.round_trips); None where not counted.
    statements: int | None = None
    #: Operations of each kind in the sample, when a phase ran several kinds
    #: (see zodbshootout.phases.recorder); None for the classic phases.
    operations: dict[str, int] | None = None
    #: Each operation's latencies: an HdrHistogram of whole microseconds in its
    #: standard string encoding; None when the phase recorded none.
    latency: dict[str, str] | None = None
    #: With --work, in the warm-up (the counting pass): what the timed region
    #: asked of the storage, by name (see zodbshootout.results.work); a count
    #: None where the storage can't be counted; the field None elsewhere.
    work: dict[str, int | None] | None = None


def timings_to_plain(timings: list[PhaseTiming]) -> list[dict[str, Any]]:
    """*timings* as dicts of builtin values (what a worker sends its runner)."""
    return [dataclasses.asdict(timing) for timing in timings]


def timings_from_plain(data: list[dict[str, Any]]) -> list[PhaseTiming]:
    """The timings :func:`timings_to_plain` sent."""
    return [PhaseTiming(**timing) for timing in data]


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
    #: A mix run's records, one per database measured (see zodbshootout.mix.runner);
    #: empty for a run of the classic phases.
    mix: list[dict[str, Any]] = field(default_factory=list)
    #: A maintain run's records, one per database, size and operation (see
    #: zodbshootout.maintenance.maintain); empty for any other run.
    maintenance: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def one_pass(
        cls,
        databases: list[str],
        object_counts: list[int],
        concurrency: int = 1,
        phases: tuple[str, ...] = (),
    ) -> RunResult:
        """The result of a mode that measures each database once (mix, replay, fill, maintain)."""
        return cls(
            databases=databases,
            object_counts=object_counts,
            concurrencies=[concurrency],
            phases=list(phases),
            repetitions=1,
        )

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

    def cell_keys(self, order: tuple[str, ...] = TABLE_ORDER) -> list[CellKey]:
        """Every cell the run planned, nested in *order* (outermost first).

        TABLE_ORDER is the table's (a block per concurrency, a row per count
        and phase, a column per database); DATABASE_ORDER groups a
        database's cells together (pyperf, history, compare).
        """
        axes: dict[str, list[Any]] = {
            "concurrency": self.concurrencies,
            "object_count": self.object_counts,
            "phase": self.phases,
            "database": self.databases,
        }
        return [
            CellKey(**dict(zip(order, values, strict=True)))
            for values in itertools.product(*(axes[axis] for axis in order))
        ]

    def cells(
        self, order: tuple[str, ...] = TABLE_ORDER
    ) -> Iterator[tuple[CellKey, dict[int, list[PhaseTiming]]]]:
        """Each planned cell with its timings by repetition (warm-up left out; {} if none).

        One pass over the measurements indexes them all, instead of one pass
        per cell (see :meth:`timings_for`).
        """
        index: dict[CellKey, dict[int, list[PhaseTiming]]] = {}
        for m in self.measurements:
            if not m.warmup:
                key = CellKey(m.database, m.concurrency, m.object_count, m.phase)
                index.setdefault(key, {}).setdefault(m.repetition, []).append(m.timing)
        for key in self.cell_keys(order):
            yield key, index.get(key, {})

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
        """The cell's phases neither measured (warm-up aside) nor failed yet, in run order."""
        where = (database, object_count, concurrency)
        done = {
            m.phase
            for m in self.measurements
            if not m.warmup and (m.database, m.object_count, m.concurrency) == where
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
    def nothing_could_run(self) -> bool:
        """True when every database was refused or could not be set up (exit 2)."""
        unusable = set(self.refused) | set(self.setup_failed)
        return bool(self.databases) and unusable >= set(self.databases)

    @property
    def complete(self) -> bool:
        """True when every cell was measured."""
        return not self.failures and not self.interrupted
