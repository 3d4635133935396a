"""What index entries cost: the same add and update without and with ``--index-entries K``.

A run with K index entries writes, per object, its container entry and K
index entries in the same transaction.  Its rate alone says what a catalog
of K indexes costs only next to the same phase without them, so the cost is
taken from two runs compared (``zodbshootout compare``), one without index
entries and one with: per cell of add and update measured in both,

- records/s: the phase's objects per second, without and with the entries;
- keys/s: records/s × keys per record (1 without, 1 + K with), the way
  centidb's benchmarks count a record's key and its index entries;
- µs per entry: the time the entries add to one object in one worker,
  ``c / rate`` being a worker's seconds per object at concurrency c, over
  the K entries.  Negative when the indexed run happened to be faster (noise).
"""

from __future__ import annotations

from dataclasses import dataclass

from zodbshootout.results.record import DATABASE_ORDER, CellKey, RunResult
from zodbshootout.results.stats import cell_stats

#: The phases that write index entries.
INDEXED_PHASES = ("add", "update")


@dataclass(frozen=True)
class IndexCost:
    """One cell of add or update: its rates without and with K index entries."""

    key: CellKey
    entries: int  # K, per object
    plain_rate: float  # objects per second, without index entries
    indexed_rate: float  # with K

    @property
    def plain_keys_per_second(self) -> float:
        return self.plain_rate

    @property
    def indexed_keys_per_second(self) -> float:
        return self.indexed_rate * (1 + self.entries)

    @property
    def microseconds_per_entry(self) -> float | None:
        if self.plain_rate <= 0 or self.indexed_rate <= 0:
            return None
        workers = self.key.concurrency
        extra = workers / self.indexed_rate - workers / self.plain_rate
        return extra / self.entries * 1_000_000


def index_entries_of(result: RunResult) -> int:
    """The run's --index-entries (0 when not used or not recorded)."""
    return int(result.metadata.get("index_entries") or 0)


def index_costs(base: RunResult, changed: RunResult, aggregate: str = "mean") -> list[IndexCost]:
    """The cost per cell when exactly one of the runs wrote index entries, else nothing."""
    base_entries, changed_entries = index_entries_of(base), index_entries_of(changed)
    if (base_entries == 0) == (changed_entries == 0):
        return []
    plain, indexed = (base, changed) if base_entries == 0 else (changed, base)
    entries = max(base_entries, changed_entries)
    costs = []
    for key in plain.cell_keys(DATABASE_ORDER):
        if key.phase not in INDEXED_PHASES:
            continue
        plain_stats, indexed_stats = cell_stats(plain, key), cell_stats(indexed, key)
        if plain_stats is None or indexed_stats is None:
            continue
        costs.append(
            IndexCost(
                key, entries, plain_stats.aggregate(aggregate), indexed_stats.aggregate(aggregate)
            )
        )
    return costs
