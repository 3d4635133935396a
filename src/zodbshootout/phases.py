"""The seven phases: what each one does, which caches it starts without.

A worker runs a *stage* — the write stage (add, update) or the read stage
(warm, cold, prefetch, hot, steamin) — as a list of :class:`Step`.  Each step
has an untimed ``prepare`` (empty caches, build payloads), a timed ``run``
that holds ZODB work only (open a connection, touch N objects, commit,
close), and an untimed ``verify``.

A user may select a subset of phases.  The stages still do what the selected
phases depend on, untimed: data must be written before it is read, and a hot
or steamin read needs an earlier read in the same process to fill the caches
it is about to use.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import transaction

from zodbshootout import benchmarks, blobs, caches, indexes
from zodbshootout.objects import ADDED, UPDATED, BenchmarkObject, check_payloads, make_payloads
from zodbshootout.storage import container_of

WRITE_PHASES = ("add", "update")
READ_PHASES = ("warm", "cold", "prefetch", "hot", "steamin")
PHASES = WRITE_PHASES + READ_PHASES
#: Everything selectable by name: the classic phases, then the extra
#: benchmarks (see zodbshootout.benchmarks), which run only when named.
ALL_PHASES = PHASES + benchmarks.BENCHMARKS

#: What each phase's preparation empties before the barrier.
CLEARS = {
    "add": (),
    "update": (),
    "warm": (),
    "cold": ("pickle", "storage"),
    "prefetch": ("pickle", "storage"),
    "hot": ("pickle",),
    "steamin": (),
}


@dataclass(frozen=True)
class Step:
    """One phase as a stage runs it; untimed steps only set up a later one."""

    phase: str
    timed: bool = True


@dataclass
class WorkerScope:
    """What one worker's phases act on; built once per stage, outside timing."""

    db: Any
    worker: int
    object_count: int
    object_size_bytes: int
    blobs: bool = False  # --blobs: the objects are ZODB blobs (see zodbshootout.blobs)
    index_entries: int = 0  # --index-entries: index entries kept per object (see indexes)


def plan_stages(selected: Sequence[str]) -> tuple[list[Step], list[Step]]:
    """The write and read stages that measure *selected* phases (in canonical order).

    The write stage always adds and updates, because reads check the update's
    values; a read stage is planned only when a read phase or an extra
    benchmark is selected.
    """
    chosen = set(selected)
    writes = [Step(phase, phase in chosen) for phase in WRITE_PHASES]
    reads: list[Step] = []
    for phase in READ_PHASES:
        if phase not in chosen:
            continue
        if phase in ("hot", "steamin") and not reads:
            # Fill the storage and pickle caches the way a cold read would.
            reads.append(Step("cold", timed=False))
        reads.append(Step(phase))
    reads.extend(_benchmark_steps(chosen))
    return writes, reads


def _benchmark_steps(chosen: set[str]) -> list[Step]:
    """The extra benchmarks run last in the read stage, after the classic reads.

    There they find the update's data written (readcurrent reads it), run in
    processes that wrote nothing, and can't change what a classic phase measures.
    """
    return [Step(phase) for phase in benchmarks.BENCHMARKS if phase in chosen]


def prepare(phase: str, scope: WorkerScope) -> Any:
    """Untimed work before the barrier: empty caches, build what will be written."""
    if phase in benchmarks.RUNS:
        return benchmarks.prepare(phase, scope)
    clears = CLEARS[phase]
    if "pickle" in clears:
        caches.clear_pickle_cache(scope.db)
    if "storage" in clears:
        caches.clear_storage_caches(scope.db)
    if phase == "add":
        if scope.blobs:
            blobs.require_blob_support(scope.db)
        return _writes(scope, ADDED)
    if phase == "update":
        return _writes(scope, UPDATED)
    return None


@dataclass(frozen=True)
class Writes:
    """What a write phase writes, all made before the barrier."""

    payloads: list[bytes]
    index_keys: list[indexes.ObjectKeys]  # per object; empty without --index-entries
    old_index_keys: list[indexes.ObjectKeys]  # update: the keys add wrote


def _writes(scope: WorkerScope, generation: int) -> Writes:
    payloads = make_payloads(scope.worker, scope.object_count, generation, scope.object_size_bytes)
    if not scope.index_entries:
        return Writes(payloads, [], [])

    def keys(of: int) -> list[indexes.ObjectKeys]:
        return indexes.derived_keys(scope.worker, scope.object_count, of, scope.index_entries)

    return Writes(payloads, keys(generation), keys(ADDED) if generation != ADDED else [])


def _add(scope: WorkerScope, writes: Writes) -> None:
    tm = transaction.TransactionManager()
    conn = scope.db.open(transaction_manager=tm)
    container = container_of(conn, scope.worker)
    make = blobs.new_blob if scope.blobs else BenchmarkObject
    for index, payload in enumerate(writes.payloads):
        container[index] = make(payload)
    if writes.index_keys:
        indexes.add_entries(conn, scope.worker, writes.index_keys)
    tm.commit()
    conn.close()


def _update(scope: WorkerScope, writes: Writes) -> None:
    tm = transaction.TransactionManager()
    conn = scope.db.open(transaction_manager=tm)
    container = container_of(conn, scope.worker)
    if scope.blobs:
        for index, payload in enumerate(writes.payloads):
            blobs.rewrite_blob(container[index], payload)
    else:
        for index, payload in enumerate(writes.payloads):
            container[index].payload = payload
    if writes.index_keys:
        indexes.move_entries(conn, scope.worker, writes.old_index_keys, writes.index_keys)
    tm.commit()
    conn.close()


def _read(scope: WorkerScope, prefetch: bool) -> list[bytes]:
    tm = transaction.TransactionManager()
    conn = scope.db.open(transaction_manager=tm)
    container = container_of(conn, scope.worker)
    if prefetch:
        conn.prefetch(container.values())
    if scope.blobs:
        read = [blobs.read_blob(container[index]) for index in range(scope.object_count)]
    else:
        read = [container[index].payload for index in range(scope.object_count)]
    tm.commit()
    conn.close()
    return read


def _read_plain(scope: WorkerScope, _prepared: Any) -> list[bytes]:
    return _read(scope, prefetch=False)


def _read_prefetched(scope: WorkerScope, _prepared: Any) -> list[bytes]:
    return _read(scope, prefetch=True)


#: The timed part of each phase: ZODB work only.
RUNS: dict[str, Callable[[WorkerScope, Any], Any]] = {
    "add": _add,
    "update": _update,
    "warm": _read_plain,
    "cold": _read_plain,
    "prefetch": _read_prefetched,
    "hot": _read_plain,
    "steamin": _read_plain,
    **benchmarks.RUNS,
}


def verify(phase: str, scope: WorkerScope, outcome: Any) -> None:
    """Untimed check after the phase: a read must return what update wrote."""
    if phase in benchmarks.RUNS:
        benchmarks.verify(phase, scope, outcome)
    if phase in READ_PHASES:
        check_payloads(scope.worker, outcome, UPDATED, scope.object_size_bytes, scope.object_count)
    if phase in WRITE_PHASES and scope.index_entries:
        _check_index_entries(scope, UPDATED if phase == "update" else ADDED)


def _check_index_entries(scope: WorkerScope, generation: int) -> None:
    """Untimed: the worker's indexes hold exactly the entries of *generation*."""
    keys = indexes.derived_keys(scope.worker, scope.object_count, generation, scope.index_entries)
    tm = transaction.TransactionManager()
    conn = scope.db.open(transaction_manager=tm)
    try:
        indexes.check_entries(conn, scope.worker, keys)
    finally:
        tm.abort()
        conn.close()
