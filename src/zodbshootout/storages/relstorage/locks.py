"""PostgreSQL's shared lock table against RelStorage's one advisory lock per object.

RelStorage on PostgreSQL takes an advisory lock (``pg_advisory_xact_lock``)
on every object a commit changes, held until the commit ends; c workers
committing N objects each hold about c × N at once.  They live in the
server's shared lock table, sized for ``max_locks_per_transaction`` ×
(``max_connections`` + ``max_prepared_transactions``) locks (64 × 100 =
6,400 by default) plus some spare shared memory; beyond it a commit fails
with "out of shared memory".  Raising ``max_locks_per_transaction`` (a
restart) is the fix, so the tool says so before measuring and in the
footnote of a cell that failed that way.
"""

from __future__ import annotations

import math
from typing import Any

#: The settings read from the server, in ``info["lock_table"]``.
SETTINGS = ("max_locks_per_transaction", "max_connections", "max_prepared_transactions")
#: Locks a commit takes besides its objects' (the container, the root, RelStorage's own).
EXTRA_LOCKS_PER_COMMIT = 16
#: The error text of a full lock table.
OUT_OF_SHARED_MEMORY = "out of shared memory"


def read_lock_table(cursor: Any) -> dict[str, int]:
    """The server's settings that size its lock table (``SHOW``, nothing changed)."""
    found = {}
    for name in SETTINGS:
        cursor.execute(f"SHOW {name}")
        found[name] = int(cursor.fetchone()[0])
    return found


def capacity(settings: dict[str, int]) -> int:
    """Locks the shared lock table is sized for (the server may fit a few more)."""
    slots = settings["max_connections"] + settings["max_prepared_transactions"]
    return settings["max_locks_per_transaction"] * slots


def needed(object_count: int, concurrency: int) -> int:
    """Advisory locks c workers hold at once, each committing *object_count* objects."""
    return concurrency * (object_count + EXTRA_LOCKS_PER_COMMIT)


def setting_for(settings: dict[str, int], object_count: int, concurrency: int) -> int:
    """The max_locks_per_transaction that fits the run, rounded up to a multiple of 64."""
    slots = settings["max_connections"] + settings["max_prepared_transactions"]
    wanted = math.ceil(needed(object_count, concurrency) / max(1, slots))
    return max(settings["max_locks_per_transaction"], 64 * math.ceil(wanted / 64))


def advice(settings: dict[str, int], object_count: int, concurrency: int) -> str:
    """What to change, in words: the setting, its value and how to set it."""
    value = setting_for(settings, object_count, concurrency)
    return (
        f"RelStorage locks each object it commits, so {concurrency} worker(s) × "
        f"{object_count} objects hold about {needed(object_count, concurrency):,} locks, "
        f"and PostgreSQL's lock table holds about {capacity(settings):,} "
        f"(max_locks_per_transaction {settings['max_locks_per_transaction']} × "
        f"(max_connections {settings['max_connections']} + max_prepared_transactions "
        f"{settings['max_prepared_transactions']})): set max_locks_per_transaction = {value} "
        f"(ALTER SYSTEM SET max_locks_per_transaction = {value}; then restart PostgreSQL)"
    )


def plan_note(
    name: str, settings: dict[str, int], object_counts: list[int], concurrencies: list[int]
) -> str | None:
    """Before measuring: a note when the largest level needs more locks than the table holds."""
    count, workers = max(object_counts), max(concurrencies)
    if needed(count, workers) <= capacity(settings):
        return None
    return (
        f"{name}: cells with many objects and workers may fail with "
        f"'{OUT_OF_SHARED_MEMORY}': {advice(settings, count, workers)}"
    )


def failure_hint(
    error: str, info: dict[str, Any], object_count: int, concurrency: int
) -> str | None:
    """For a cell that failed with a full lock table: one short line of what to change
    (a footnote keeps 200 characters); else None."""
    settings = info.get("lock_table")
    if not settings or OUT_OF_SHARED_MEMORY not in error:
        return None
    value = setting_for(settings, object_count, concurrency)
    return (
        f"PostgreSQL's lock table is full ({OUT_OF_SHARED_MEMORY}; about "
        f"{needed(object_count, concurrency):,} object locks for "
        f"{capacity(settings):,} slots): set max_locks_per_transaction = {value} and restart it"
    )
