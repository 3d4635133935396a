"""Work per transaction: the exact counts of ``--work``'s counting pass, per cell.

A ``--work`` run counts, in its untimed warm-up repetition, what each
worker's timed region asked of its storage (see zodbshootout.probes.work);
each warm-up measurement carries them as ``work``, a mapping of the names
in :data:`WORK_COUNTS` to a count (None: not counted for that storage).
Here they become a cell's totals and means: per transaction (a worker's
phase is one transaction; a looped phase's repetition is one) and per
object read or written.  Pure functions: nothing here reads a clock.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from zodbshootout.results.record import CellKey, PhaseTiming, RunResult

#: Each count's name (as saved and as ``--fail-if-more-work`` takes it) and meaning.
WORK_COUNTS: dict[str, str] = {
    "loads": "object states the connections loaded from their storage (load, loadBefore)",
    "server_loads": "of those, the ones fetched from the server, database or file "
    "rather than a client cache (ZEO: the loadBefore requests the server counts)",
    "prefetch_calls": "Connection.prefetch calls",
    "prefetched_objects": "objects those calls asked for",
    "stores": "object states the connections handed to their storage",
    "round_trips": "requests the client waited on a server for: ZEO requests expecting "
    "a reply (a prefetch batch counts once), RelStorage's SQL statements (BEGIN and "
    "COMMIT included); 0 without a server (FileStorage)",
    "bytes_read": "bytes of the object states loaded",
    "bytes_written": "bytes of the object states stored",
    "polls": "polls for invalidations (one per transaction a connection begins)",
    "invalidations": "objects those polls invalidated",
}

#: The counts the table shows for every phase, even where they are 0.
ALWAYS_SHOWN = ("loads", "round_trips")


@dataclass(frozen=True)
class CellWork:
    """One cell's counts: totals over its workers, and per transaction and object.

    A count some worker could not take (None) has no total and no mean.
    """

    totals: dict[str, int | None]
    transactions: int
    objects: int

    def per_transaction(self, name: str) -> float | None:
        total = self.totals.get(name)
        return None if total is None or not self.transactions else total / self.transactions

    def per_object(self, name: str) -> float | None:
        total = self.totals.get(name)
        return None if total is None or not self.objects else total / self.objects


def cell_work(timings: Iterable[PhaseTiming]) -> CellWork | None:
    """The work of one cell from its counted timings (None: nothing counted)."""
    counted = [t for t in timings if t.work is not None]
    if not counted:
        return None
    totals: dict[str, int | None] = {}
    for name in WORK_COUNTS:
        values = [(t.work or {}).get(name) for t in counted]
        totals[name] = None if any(v is None for v in values) else sum(v or 0 for v in values)
    return CellWork(
        totals,
        transactions=sum(t.loops for t in counted),
        objects=sum(t.loops * t.objects for t in counted),
    )


def counted_cells(result: RunResult) -> dict[CellKey, CellWork]:
    """Every cell whose counting pass recorded work (warm-up measurements)."""
    by_cell: dict[CellKey, list[PhaseTiming]] = {}
    for m in result.measurements:
        if m.warmup and m.timing.work is not None:
            key = CellKey(m.database, m.concurrency, m.object_count, m.phase)
            by_cell.setdefault(key, []).append(m.timing)
    return {key: work for key, ts in by_cell.items() if (work := cell_work(ts)) is not None}


def has_work(result: RunResult) -> bool:
    return any(m.timing.work is not None for m in result.measurements)


@dataclass(frozen=True)
class MoreWork:
    """A cell whose work per transaction grew from the base run to the changed one."""

    key: CellKey
    name: str
    base: float
    changed: float


def more_work(base: RunResult, changed: RunResult, name: str) -> list[MoreWork]:
    """The cells counted in both runs where *name* per transaction grew.

    Counts are exact, so any growth is real, whatever the machine's load.
    """
    before, after = counted_cells(base), counted_cells(changed)
    grown = []
    for key, work in after.items():
        old = before.get(key)
        if old is None:
            continue
        was, now = old.per_transaction(name), work.per_transaction(name)
        if was is not None and now is not None and now > was:
            grown.append(MoreWork(key, name, was, now))
    return grown


@dataclass(frozen=True)
class NPlusOne:
    """A read that waited on its server once per object it read, where prefetch batched."""

    key: CellKey
    round_trips: float  # per transaction, of the read
    prefetched_round_trips: float  # per transaction, of the prefetch phase


#: The read that the prefetch phase repeats with Connection.prefetch.
BATCHABLE_PHASES = ("cold",)


def n_plus_one(result: RunResult) -> list[NPlusOne]:
    """Reads whose round trips grew with the objects read while prefetch batched them.

    The pattern ("N+1 queries"): a transaction that reads N objects fetches
    them one by one, a round trip each, so its round trips grow with N; the
    run's own prefetch phase shows that the storage can batch them into far
    fewer.  Seen only where both the read and prefetch were counted.
    """
    cells = counted_cells(result)
    found = []
    for key, read in cells.items():
        if key.phase not in BATCHABLE_PHASES:
            continue
        batched = cells.get(CellKey(key.database, key.concurrency, key.object_count, "prefetch"))
        trips = read.per_transaction("round_trips")
        fetched = read.per_object("server_loads")
        prefetched = None if batched is None else batched.per_transaction("round_trips")
        if trips is None or fetched is None or prefetched is None:
            continue
        # Every object read from the server, a round trip each; prefetch: under half.
        if fetched >= 1 and trips >= key.object_count and prefetched < trips / 2:
            found.append(NPlusOne(key, trips, prefetched))
    return found


#: The cache states a mix run's counting pass counts each transaction in (mix.counting).
MIX_STATES = ("cold", "hot")


def mix_work(work: Mapping[str, Any] | None) -> dict[str, dict[str, CellWork]]:
    """A mix record's counting pass (``MixRecord.work``): per operation and cache state,
    its totals and means per transaction; empty without one.

    ``work["operations"][op]`` holds ``transactions`` (those that committed in
    every state) and, per state, a count per name of :data:`WORK_COUNTS`.
    """
    if not work:
        return {}
    found: dict[str, dict[str, CellWork]] = {}
    for operation, entry in (work.get("operations") or {}).items():
        transactions = int(entry.get("transactions") or 0)
        found[operation] = {
            state: CellWork(
                {name: (entry.get(state) or {}).get(name) for name in WORK_COUNTS},
                transactions,
                0,
            )
            for state in MIX_STATES
        }
    return found
