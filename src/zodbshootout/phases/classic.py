"""The classic phases and the registry of every phase and benchmark.

Each phase is a :class:`~zodbshootout.phases.record.Phase` record: what it
runs, which caches it starts without, how it is prepared and checked.
:data:`REGISTRY` holds the classic phases and the extra benchmarks alike.

A worker runs a *stage* — the write stage (add, update) or the read stage
(warm, cold, prefetch, hot, steamin, open) — as a list of :class:`Step`.
Each step has an untimed ``prepare`` (empty caches, build payloads), a timed
``run`` that holds ZODB work only (open a connection, touch N objects,
commit, close), and an untimed ``verify``.

hot and steamin measure the caches they name, not the database: their
sample is the reads on a connection opened beforehand, repeated ``loops``
times (see zodbshootout.run.calibration).  Opening a connection, which makes
RelStorage poll its database, is a phase of its own: open.

A user may select a subset of phases.  The stages still do what the selected
phases depend on, untimed: data must be written before it is read, and a hot
or steamin read needs an earlier read in the same process to fill the caches
it is about to use.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import transaction

from zodbshootout.phases import benchmarks, caches
from zodbshootout.phases.record import (
    PICKLE,
    READ,
    STORAGE,
    WRITE,
    Phase,
    WorkerScope,
)
from zodbshootout.workload import blobs, indexes
from zodbshootout.workload.objects import (
    ADDED,
    UPDATED,
    BenchmarkObject,
    check_payloads,
    make_payloads,
)
from zodbshootout.workload.root import connection_in_transaction, container_of

__all__ = ["ALL_PHASES", "PHASES", "READ_PHASES", "REGISTRY", "WRITE_PHASES", "Phase", "Step"]
__all__ += ["WorkerScope", "counts_conflicts", "phases_failed_with", "plan_stages"]
__all__ += ["prepare", "verify"]


@dataclass(frozen=True)
class Step:
    """One phase as a stage runs it; untimed steps only set up a later one."""

    phase: str
    timed: bool = True


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


def _prepare_add(scope: WorkerScope) -> Writes:
    if scope.blobs:
        blobs.require_blob_support(scope.db)
    _first_commit(scope)
    return _writes(scope, ADDED)


def _first_commit(scope: WorkerScope) -> None:
    """Untimed: commit the worker's (empty) container once, on the connection add will use.

    A connection's first commit pays for what every later one reuses:
    RelStorage compiles and prepares its statements, creates its temporary
    table and resolves its per-connection shortcuts then, all inside the
    first ``tpc_vote``.  An application pays that once per pooled connection,
    not once per transaction; left in, it cost add 20-30 % on RelStorage.
    The pool hands the same connection to add (it reuses the last one closed).
    """
    with connection_in_transaction(scope.db) as conn:
        container_of(conn, scope.worker)._p_changed = True


def _prepare_update(scope: WorkerScope) -> Writes:
    return _writes(scope, UPDATED)


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


def _check_added(scope: WorkerScope, _outcome: Any) -> None:
    if scope.index_entries:
        _check_index_entries(scope, ADDED)


def _check_updated(scope: WorkerScope, _outcome: Any) -> None:
    if scope.index_entries:
        _check_index_entries(scope, UPDATED)


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


def _read_objects(conn: Any, scope: WorkerScope, prefetch: bool = False) -> list[bytes]:
    container = container_of(conn, scope.worker)
    if prefetch:
        conn.prefetch(container.values())
    if scope.blobs:
        return [blobs.read_blob(container[index]) for index in range(scope.object_count)]
    return [container[index].payload for index in range(scope.object_count)]


def _read(scope: WorkerScope, prefetch: bool) -> list[bytes]:
    tm = transaction.TransactionManager()
    conn = scope.db.open(transaction_manager=tm)
    read = _read_objects(conn, scope, prefetch)
    tm.commit()
    conn.close()
    return read


@contextlib.contextmanager
def _read_transaction(scope: WorkerScope) -> Iterator[Any]:
    """A connection for the looped reads, opened and closed outside their timing."""
    tm = transaction.TransactionManager()
    conn = scope.db.open(transaction_manager=tm)
    try:
        yield conn
    finally:
        tm.abort()
        conn.close()


def _steamin_loops(
    scope: WorkerScope, _prepared: Any, loops: int, clock: Callable[[], float]
) -> tuple[float, list[bytes]]:
    """Read the N objects *loops* times from the pickle cache."""
    with _read_transaction(scope) as conn:
        start = clock()
        for _ in range(loops):
            read = _read_objects(conn, scope)
        return clock() - start, read


def _pin_root(scope: WorkerScope) -> Any:
    """Untimed, before hot: the root object, held so that it stays in the pickle cache.

    ``Connection.root()`` is ``get(z64)``: for a root that left the pickle
    cache, ZODB loads its state from the storage only to learn its class,
    then loads it again to unghostify it, and only the second load counts as
    one of the connection's.  Each hot loop thus made one storage-cache hit
    more than it had loads (1,004 / 1,003).  The step holds what this returns
    until it ends, so the root's ghost outlives ``cacheMinimize`` in the
    pooled connection the loops use (the pool hands out the last one closed).
    """
    conn = scope.db.open(transaction_manager=transaction.TransactionManager())
    try:
        return conn.root()
    finally:
        conn.close()


def _hot_loops(
    scope: WorkerScope, _prepared: Any, loops: int, clock: Callable[[], float]
) -> tuple[float, list[bytes]]:
    """Read the N objects *loops* times, each time with an empty pickle cache.

    Emptying it happens between two timed reads, never inside one.
    *_prepared* holds the root (see :func:`_pin_root`).
    """
    seconds = 0.0
    with _read_transaction(scope) as conn:
        for _ in range(loops):
            conn.cacheMinimize()
            start = clock()
            read = _read_objects(conn, scope)
            seconds += clock() - start
    return seconds, read


def _open_loops(
    scope: WorkerScope, _prepared: Any, loops: int, clock: Callable[[], float]
) -> tuple[float, None]:
    """Open a connection *loops* times (RelStorage polls its database each time)."""
    tm = transaction.TransactionManager()
    seconds = 0.0
    for _ in range(loops):
        start = clock()
        conn = scope.db.open(transaction_manager=tm)
        seconds += clock() - start
        conn.close()
    return seconds, None


def _once(run_loops: Any) -> Callable[[WorkerScope, Any], Any]:
    """A looped phase's single timed run, for callers that time it themselves."""

    def run(scope: WorkerScope, prepared: Any) -> Any:
        return run_loops(scope, prepared, 1, lambda: 0.0)[1]

    return run


def _read_plain(scope: WorkerScope, _prepared: Any) -> list[bytes]:
    return _read(scope, prefetch=False)


def _read_prefetched(scope: WorkerScope, _prepared: Any) -> list[bytes]:
    return _read(scope, prefetch=True)


def _check_update(scope: WorkerScope, read: list[bytes]) -> None:
    """A read must return what update wrote."""
    check_payloads(scope.worker, read, UPDATED, scope.object_size_bytes, scope.object_count)


_CLASSIC = (
    Phase("add", WRITE, _add, prepare=_prepare_add, verify=_check_added),
    Phase("update", WRITE, _update, prepare=_prepare_update, verify=_check_updated),
    Phase(
        "warm",
        READ,
        _read_plain,
        verify=_check_update,
        raw_store_note=(
            "a raw store has no cache that outlives a process except the operating "
            "system's page cache, which every read phase shares: warm would repeat cold"
        ),
    ),
    Phase("cold", READ, _read_plain, clears=(PICKLE, STORAGE), verify=_check_update),
    Phase(
        "prefetch",
        READ,
        _read_prefetched,
        clears=(PICKLE, STORAGE),
        verify=_check_update,
        raw_store_note=(
            "a raw store answers each read in the same process, with no round trip "
            "that prefetching could save"
        ),
    ),
    Phase(
        "hot",
        READ,
        _once(_hot_loops),
        clears=(PICKLE,),
        prepare=_pin_root,
        verify=_check_update,
        fills_caches_first=True,
        run_loops=_hot_loops,
    ),
    Phase(
        "steamin",
        READ,
        _once(_steamin_loops),
        verify=_check_update,
        fills_caches_first=True,
        run_loops=_steamin_loops,
        raw_store_note=(
            "nothing above a raw store keeps decoded objects, as ZODB's pickle cache "
            "does: hot is its fastest read"
        ),
    ),
    Phase(
        "open",
        READ,
        _once(_open_loops),
        run_loops=_open_loops,
        one_operation=True,
        raw_store_note=(
            "a raw store has no connection to open per transaction: each worker opens "
            "its store once, before the barrier"
        ),
    ),
)

#: Every phase and benchmark by name, in the order a stage runs them.
REGISTRY: dict[str, Phase] = {p.name: p for p in _CLASSIC + benchmarks.PHASES}

WRITE_PHASES = tuple(p.name for p in _CLASSIC if p.stage == WRITE)
READ_PHASES = tuple(p.name for p in _CLASSIC if p.stage == READ)
PHASES = WRITE_PHASES + READ_PHASES
#: Everything selectable by name: the classic phases, then the extra
#: benchmarks (see zodbshootout.phases.benchmarks), which run only when named.
ALL_PHASES = tuple(REGISTRY)


def plan_stages(selected: Sequence[str]) -> tuple[list[Step], list[Step]]:
    """The write and read stages that measure *selected* phases (in canonical order).

    The write stage always adds and updates, because reads check the update's
    values; a read stage is planned only when a read phase or an extra
    benchmark is selected.  The extra benchmarks run last in the read stage,
    where they find the update's data written, run in processes that wrote
    nothing, and can't change what a classic phase measures.
    """
    chosen = set(selected)
    writes = [Step(name, name in chosen) for name in WRITE_PHASES]
    reads: list[Step] = []
    for phase in REGISTRY.values():
        if phase.stage != READ or phase.name not in chosen:
            continue
        if phase.fills_caches_first and not reads:
            # Fill the storage and pickle caches the way a cold read would.
            reads.append(Step("cold", timed=False))
        reads.append(Step(phase.name))
    return writes, reads


def phases_failed_with(stage: str, selected: Sequence[str]) -> list[str]:
    """The selected phases a failure in *stage* leaves unmeasured (a write failure: all)."""
    lost = (WRITE, READ) if stage == WRITE else (READ,)
    return [name for name in selected if name in REGISTRY and REGISTRY[name].stage in lost]


def counts_conflicts(name: str) -> bool:
    """Whether phase *name* reports conflicts (False for names no longer known)."""
    phase = REGISTRY.get(name)
    return phase is not None and phase.counts_conflicts


def prepare(name: str, scope: WorkerScope) -> Any:
    """Untimed work before the barrier: empty caches, build what will be written."""
    phase = REGISTRY[name]
    if PICKLE in phase.clears:
        caches.clear_pickle_cache(scope.db)
    if STORAGE in phase.clears:
        caches.clear_storage_caches(scope.db)
    return phase.prepare(scope) if phase.prepare is not None else None


def verify(name: str, scope: WorkerScope, outcome: Any) -> None:
    """Untimed check after the phase (a DataMismatch when the outcome is wrong)."""
    phase = REGISTRY[name]
    if phase.verify is not None:
        phase.verify(scope, outcome)
