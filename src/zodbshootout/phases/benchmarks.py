"""Benchmarks beyond the seven classic phases: storage API calls, polling, conflicts.

Each one is selected by name like a phase and shown as its own row; none
runs by default.  They run at the end of the read stage, in the order of
:data:`PHASES`, with the same prepare (untimed) → barrier → run (timed)
→ barrier → verify (untimed) steps as the classic phases.  Every benchmark
does *N* units of work per worker, so the table's ``c × N ÷ seconds`` is
units per second: OIDs, stored objects, commits, or objects read or updated.

``new_oid``
    Allocate N new OIDs from the storage.
``store``
    The raw storage API, without a connection: one two-phase commit that
    stores N pickled objects under new OIDs (OIDs and pickles are made before
    the barrier).
``tpc``
    N empty two-phase commits (tpc_begin, tpc_vote, tpc_finish) on the storage.
``commit``
    N empty transaction commits through a connection: what is left is the
    cost of beginning a transaction, i.e. polling for invalidations.
``readcurrent``
    Read the worker's N objects (already in the pickle cache), call
    ``Connection.readCurrent`` on each, change one object of the worker's own
    and commit, so that the storage checks all N serials.
``conflicts``
    Every worker updates the *same* N objects of one shared map in one
    transaction; a worker whose commit conflicts aborts and tries again.
    The time includes the retries; the conflicts are counted.
``readcurrent_conflicts``
    Even-numbered workers update the N objects of a shared map while
    odd-numbered ones ``readCurrent`` them and commit a change of their own;
    both retry on conflicts, which are counted.

The shared objects live under the tool's own root key and are recreated
(untimed, by the runner) before every repetition: see :func:`setup`.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any

import transaction
import zodbpickle.pickle
from persistent import Persistent
from persistent.mapping import PersistentMapping
from ZODB.Connection import TransactionMetaData
from ZODB.POSException import ConflictError
from ZODB.utils import z64

from zodbshootout.errors import CellError, DataMismatch
from zodbshootout.phases.record import READ, Phase, WorkerScope
from zodbshootout.workload.objects import UPDATED, BenchmarkObject, check_payloads, make_payloads
from zodbshootout.workload.root import ROOT_KEY, connection_in_transaction, container_of

#: Key of the benchmarks' shared objects below root[ROOT_KEY].
AREA_KEY = "benchmarks"

#: Payload generations, distinct from the classic phases' ADDED and UPDATED.
STORED = 2
CONTENDED = 3

#: A worker that conflicts this many times in one phase gives up (a CellError):
#: something keeps it from ever committing, and waiting longer measures nothing.
MAX_CONFLICTS = 1000


class SharedObject(Persistent):
    """An object all workers update; ``writes`` counts each worker's commits."""

    def __init__(self) -> None:
        self.payload = b""
        self.writes: dict[int, int] = {}


class Marker(Persistent):
    """A worker's own object, changed so that a readCurrent transaction commits."""

    def __init__(self) -> None:
        self.commits = 0


@dataclass(frozen=True)
class Contended:
    """What a conflict-counting run returns besides its timing."""

    conflicts: int
    role: str  # "writer" or "reader"
    value: Any = None


def conflicts_of(outcome: Any) -> int:
    """Conflicts (aborted and retried commits) a run reported; 0 for the others."""
    return outcome.conflicts if isinstance(outcome, Contended) else 0


def setup(
    db: Any, selected: list[str] | tuple[str, ...], concurrency: int, object_count: int
) -> None:
    """Create the shared objects the *selected* benchmarks need (parent, untimed).

    Called after populate in every repetition, so every repetition starts
    from the same state.  Does nothing when no selected benchmark needs them.
    """
    wanted = {p.name for p in PHASES if p.uses_shared_area and p.name in selected}
    with connection_in_transaction(db) as conn:
        top = conn.root()[ROOT_KEY]
        if not wanted:
            if AREA_KEY in top:
                del top[AREA_KEY]
            return
        area = top[AREA_KEY] = PersistentMapping()
        area["markers"] = PersistentMapping((w, Marker()) for w in range(concurrency))
        for phase in PHASES:
            if phase.counts_conflicts and phase.name in wanted:
                area[phase.name] = PersistentMapping(
                    (index, SharedObject()) for index in range(object_count)
                )


def _area(conn: Any) -> Any:
    return conn.root()[ROOT_KEY][AREA_KEY]


def raw_record(payload: bytes) -> bytes:
    """The data record ZODB would store for a BenchmarkObject holding *payload*.

    A record is two pickles, the class and then the state, in ZODB's pickle
    protocol; a real record (not random bytes) keeps packing and garbage
    collection, which read the references of every record, working.
    """
    buffer = io.BytesIO()
    pickler = zodbpickle.pickle.Pickler(buffer, 3)
    pickler.dump(BenchmarkObject)
    pickler.dump({"payload": payload})
    return buffer.getvalue()


@dataclass
class RawWork:
    """A storage for the raw API benchmarks, and for ``store`` what to store.

    records: (oid, data record, payload) per object.
    """

    storage: Any
    records: list[tuple[bytes, bytes, bytes]]
    own_instance: bool


def _raw_work(scope: WorkerScope, records: list[tuple[bytes, bytes, bytes]]) -> RawWork:
    """The storage a worker calls directly.

    An MVCC storage (RelStorage) gives each worker an instance of its own,
    as it does each connection, because one instance must not be used by
    two threads at once; other storages are used as the DB uses them.
    """
    storage = scope.db.storage
    if hasattr(storage, "new_instance"):
        return RawWork(storage.new_instance(), records, own_instance=True)
    return RawWork(storage, records, own_instance=False)


def _prepare_raw(scope: WorkerScope) -> RawWork:
    return _raw_work(scope, [])


def _prepare_store(scope: WorkerScope) -> RawWork:
    work = _raw_work(scope, [])
    payloads = make_payloads(scope.worker, scope.object_count, STORED, scope.object_size_bytes)
    work.records = [(work.storage.new_oid(), raw_record(p), p) for p in payloads]
    return work


def _prepare_readcurrent(scope: WorkerScope) -> None:
    # Fill the pickle cache, so that the timed run measures readCurrent
    # and the commit's checks rather than loads.
    _read_own(scope, read_current=False)


def _prepare_contended(scope: WorkerScope) -> list[bytes]:
    return make_payloads(scope.worker, scope.object_count, CONTENDED, scope.object_size_bytes)


def _new_oid(scope: WorkerScope, work: RawWork) -> RawWork:
    new_oid = work.storage.new_oid
    work.records = [(new_oid(), b"", b"") for _ in range(scope.object_count)]
    return work


def _store(scope: WorkerScope, work: RawWork) -> RawWork:
    _two_phase_commit(work.storage, work.records)
    return work


def _tpc(scope: WorkerScope, work: RawWork) -> RawWork:
    # Inline, not _two_phase_commit: this loop is the timed region, one empty
    # transaction per object, and holds the storage's calls only.
    storage = work.storage
    for _ in range(scope.object_count):
        txn = TransactionMetaData()
        storage.tpc_begin(txn)
        try:
            storage.tpc_vote(txn)
        except BaseException:
            storage.tpc_abort(txn)
            raise
        storage.tpc_finish(txn)
    return work


def _two_phase_commit(storage: Any, records: Any) -> None:
    """One transaction straight on *storage*: its records stored, voted, finished."""
    txn = TransactionMetaData()
    storage.tpc_begin(txn)
    try:
        for oid, data, _payload in records:
            storage.store(oid, z64, data, "", txn)
        storage.tpc_vote(txn)
    except BaseException:
        storage.tpc_abort(txn)
        raise
    storage.tpc_finish(txn)


def _commit(scope: WorkerScope, _prepared: Any) -> None:
    tm = transaction.TransactionManager(explicit=True)
    conn = scope.db.open(transaction_manager=tm)
    for _ in range(scope.object_count):
        tm.begin()
        tm.commit()
    conn.close()


def _read_own(scope: WorkerScope, read_current: bool) -> list[bytes]:
    tm = transaction.TransactionManager()
    conn = scope.db.open(transaction_manager=tm)
    try:
        container = container_of(conn, scope.worker)
        read = []
        for index in range(scope.object_count):
            obj = container[index]
            if scope.blobs:
                # readCurrent needs the object's state, not the blob's file.
                obj._p_activate()
            else:
                read.append(obj.payload)
            if read_current:
                conn.readCurrent(obj)
        if read_current:
            _area(conn)["markers"][scope.worker].commits += 1
        tm.commit()
    except BaseException:
        tm.abort()
        raise
    finally:
        conn.close()
    return read


def _readcurrent(scope: WorkerScope, _prepared: Any) -> list[bytes]:
    return _read_own(scope, read_current=True)


def _retrying(scope: WorkerScope, work: Any) -> int:
    """Run *work(conn)* and commit until a commit succeeds; return the conflicts."""
    tm = transaction.TransactionManager()
    conn = scope.db.open(transaction_manager=tm)
    conflicts = 0
    try:
        while True:
            try:
                work(conn)
                tm.commit()
                return conflicts
            except ConflictError:
                tm.abort()
                conflicts += 1
                if conflicts >= MAX_CONFLICTS:
                    raise CellError(
                        f"worker {scope.worker} conflicted {conflicts} times in a row and gave up"
                    ) from None
    except BaseException:
        tm.abort()
        raise
    finally:
        conn.close()


def _update_shared(scope: WorkerScope, phase: str, payloads: list[bytes]) -> int:
    worker = scope.worker

    def work(conn: Any) -> None:
        shared = _area(conn)[phase]
        for index, payload in enumerate(payloads):
            obj = shared[index]
            obj.payload = payload
            # A new dict, so the object knows it changed.
            obj.writes = {**obj.writes, worker: obj.writes.get(worker, 0) + 1}

    return _retrying(scope, work)


def _conflicts(scope: WorkerScope, payloads: list[bytes]) -> Contended:
    return Contended(_update_shared(scope, "conflicts", payloads), "writer")


def _readcurrent_conflicts(scope: WorkerScope, payloads: list[bytes]) -> Contended:
    if scope.worker % 2 == 0:
        conflicts = _update_shared(scope, "readcurrent_conflicts", payloads)
        return Contended(conflicts, "writer")

    def work(conn: Any) -> None:
        area = _area(conn)
        shared = area["readcurrent_conflicts"]
        for index in range(scope.object_count):
            obj = shared[index]
            obj.payload  # noqa: B018 - readCurrent needs the object's state loaded
            conn.readCurrent(obj)
        area["markers"][scope.worker].commits += 1

    return Contended(_retrying(scope, work), "reader")


def _release(work: RawWork) -> None:
    if work.own_instance:
        work.storage.release()


def _verify_new_oid(scope: WorkerScope, work: RawWork) -> None:
    _release(work)
    if len({oid for oid, _data, _payload in work.records}) != scope.object_count:
        raise DataMismatch(f"worker {scope.worker} was given the same OID twice")


def _verify_store(scope: WorkerScope, work: RawWork) -> None:
    _release(work)
    _verify_stored(scope, work.records)


def _verify_tpc(_scope: WorkerScope, work: RawWork) -> None:
    _release(work)


def _verify_readcurrent(scope: WorkerScope, read: list[bytes]) -> None:
    if not scope.blobs:
        check_payloads(scope.worker, read, UPDATED, scope.object_size_bytes, scope.object_count)


def _verify_contended(phase: str) -> Any:
    def verify(scope: WorkerScope, outcome: Contended) -> None:
        if outcome.role == "writer":
            _verify_shared(scope, phase)

    return verify


#: The extra benchmarks, in the order a read stage runs them.
PHASES = (
    Phase("new_oid", READ, _new_oid, prepare=_prepare_raw, verify=_verify_new_oid, extra=True),
    Phase("store", READ, _store, prepare=_prepare_store, verify=_verify_store, extra=True),
    Phase("tpc", READ, _tpc, prepare=_prepare_raw, verify=_verify_tpc, extra=True),
    Phase("commit", READ, _commit, extra=True),
    Phase(
        "readcurrent",
        READ,
        _readcurrent,
        prepare=_prepare_readcurrent,
        verify=_verify_readcurrent,
        extra=True,
        uses_shared_area=True,
    ),
    *(
        Phase(
            name,
            READ,
            run,
            prepare=_prepare_contended,
            verify=_verify_contended(name),
            counts_conflicts=True,
            extra=True,
            uses_shared_area=True,
        )
        for name, run in (
            ("conflicts", _conflicts),
            ("readcurrent_conflicts", _readcurrent_conflicts),
        )
    ),
)

#: Their names, in that order.
BENCHMARKS = tuple(phase.name for phase in PHASES)


def _verify_stored(scope: WorkerScope, records: list[tuple[bytes, bytes, bytes]]) -> None:
    with connection_in_transaction(scope.db, commit=False) as conn:
        for oid, _data, payload in records:
            if conn.get(oid).payload != payload:
                raise DataMismatch(
                    f"worker {scope.worker}: object {oid.hex()} does not hold what was stored"
                )


def _verify_shared(scope: WorkerScope, phase: str) -> None:
    """Each shared object must count exactly one commit of this worker: none lost."""
    with connection_in_transaction(scope.db, commit=False) as conn:
        shared = _area(conn)[phase]
        for index in range(scope.object_count):
            writes = shared[index].writes.get(scope.worker, 0)
            if writes != 1:
                raise DataMismatch(
                    f"worker {scope.worker}: shared object {index} counts {writes} "
                    "commits of this worker, expected 1"
                )
