"""One replay worker: its share of the recorded connections, replayed at the storage level.

The worker opens the database's storage (not a ``ZODB.DB``: no pickle
cache, no root object of its own), makes one connection-level instance per
recorded connection it replays (``new_instance``, as each ZODB connection
has), waits for the others (a barrier), and replays its transactions in
recorded order: as fast as it can, or each at its intended start (the
recorded start ÷ ``--speed`` after the replay's start; the latency then
counts from there, as ``mix --rate``'s does).  A transaction's calls run back
to back, timed together (the application's own time between them is not
replayed); its latency goes into its kind's histogram (the recorder of
``mix``).

A call that raises where the recorded one raised too is as recorded, and
the transaction goes on.  One that raises where the recorded one did not is
counted by class (a ``ConflictError`` as a conflict, anything else as a
failure), and its transaction ends there (with ``tpc_abort`` inside a
commit).  The objects' records resolve their conflicts (see
:mod:`.objects`), so that a commit the recording made commits here too; the
resolutions are counted, as conflicts of class ``resolved``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ZODB.Connection import TransactionMetaData
from ZODB.POSException import ConflictError
from ZODB.utils import p64, z64

from zodbshootout.concurrency.task import Barrier, DatabaseTask, WorkerContext
from zodbshootout.database.open import open_storage
from zodbshootout.mix.recorder import Recorder
from zodbshootout.replay import plan as p
from zodbshootout.replay.objects import Records
from zodbshootout.replay.plan import (
    ABORT,
    BEGIN,
    CHECK,
    CREATE,
    FINISH,
    LOAD,
    NEW_OID,
    POLL,
    PREFETCH,
    STORE,
    VOTE,
)

#: A transaction as a task holds it: [start ns, slot, kind, calls].
Entry = list[Any]


@dataclass(frozen=True)
class ReplayTask(DatabaseTask):
    """One worker's replay (concurrency.task's protocol); plain data in and out."""

    worker: int
    workers: int
    #: The recorded connections it replays (each its own storage instance).
    slots: int
    transactions: list[Entry]
    #: Per recorded oid index: the oid here, and the serial the dataset wrote (0: none).
    oids: list[int]
    serials: list[int]
    speed: float | None
    interval_seconds: float
    barrier_timeout_seconds: float

    def timed_waits(self) -> list[tuple[int, str]]:
        return [(0, "replay")]

    @classmethod
    def from_plain(cls, data: dict[str, Any]) -> ReplayTask:
        return cls(**cls.decoded(data))

    def execute(self, barrier: Barrier, context: WorkerContext) -> list[Any]:
        """Replay this worker's share in this process (or on a thread's shared DB)."""
        if context.database is not None:
            mvcc, close = context.database.db._mvcc_storage, context.database.close
        else:
            mvcc = open_storage(
                self.source, self.database, list(self.server_addresses), f"replay-{self.worker}"
            )
            close = mvcc.close
        try:
            return [replay(self, mvcc, barrier)]
        finally:
            close()

    def decode(self, results: list[Any]) -> list[Any]:
        return list(results)


class _Connection:
    """A recorded connection's instance and the serials it knows."""

    __slots__ = ("instance", "known", "stored", "trust_dataset", "txn")

    def __init__(self, instance: Any) -> None:
        self.instance = instance
        #: Per oid index: the serial this connection last read or wrote, None
        #: where a poll said it changed since.
        self.known: dict[int, bytes | None] = {}
        #: An oid it never read has the dataset's serial, until a poll said
        #: "everything changed" (then it is read before it is written).
        self.trust_dataset = True


def replay(
    task: ReplayTask, mvcc: Any, barrier: Barrier, clock: Callable[[], float] = time.perf_counter
) -> dict[str, Any]:
    """Replay *task*'s transactions on *mvcc* (an IMVCCStorage); the worker's report."""
    records = Records()
    sizes = {c[2] for e in task.transactions for c in e[3] if c[0] in (STORE, CREATE)}
    data = {size: records.of_size(size) for size in sizes}  # made before the clock starts
    oids = [p64(oid) for oid in task.oids]
    initial = [p64(serial) if serial else z64 for serial in task.serials]
    connections = [_Connection(mvcc.new_instance()) for _ in range(task.slots)]
    for connection in connections:
        # Untimed, before any worker writes: each instance's first view, so that
        # its first replayed poll names what changed since (RelStorage's very
        # first poll says "anything may have", which would cost a read of every
        # object the connection writes without having read it).
        connection.instance.poll_invalidations()
    issued = p.call_counts(entry[3] for entry in task.transactions)
    run = _Run(oids, initial, data, issued)
    try:
        barrier.wait(task.barrier_timeout_seconds)
        started_at = time.time()
        start = clock()
        recorder = run.recorder = Recorder(
            p.KINDS, start, task.interval_seconds, task.speed is not None
        )
        _loop(run, task, connections, start, clock)
        finished = clock()
        recorder.close_intervals(finished)  # those it saw end: the runner lines them up
    finally:
        for connection in connections:
            connection.instance.release()
    report = recorder.as_data()
    report.update(
        worker=task.worker, seconds=finished - start, started_at=started_at, server_lost=None,
        unstarted=0, increments=0, warmup_increments=0, uncertain_increments=0, inserted=0,
        counters=None, series={}, series_notes=[], series_seconds=None, issued=issued,
        reloads=run.reloads,
    )  # fmt: skip
    return report


def _loop(
    run: _Run,
    task: ReplayTask,
    connections: list[_Connection],
    start: float,
    clock: Callable[[], float],
) -> None:
    """The timed loop: each transaction (at its intended start, under --speed), recorded."""
    transact = run.transaction
    assert run.recorder is not None
    record = run.recorder.record
    speed = task.speed
    intended = None
    for offset, slot, kind, calls in task.transactions:
        if speed is not None:
            intended = start + offset / 1e9 / speed
            now = clock()
            if intended > now:
                time.sleep(intended - now)
        began = clock()
        broken = transact(connections[slot], calls)
        done = clock()
        record(kind, began if intended is None else min(intended, began), began, done)
        if broken is not None or run.resolved:
            run.counted(kind, calls, broken)


class _Run:
    """The calls of one transaction, issued on a recorded connection's instance."""

    def __init__(
        self,
        oids: list[bytes],
        initial: list[bytes],
        data: dict[int, bytes],
        issued: dict[str, int],
    ) -> None:
        self.oids = oids
        self.initial = initial
        self.data = data
        self.recorder: Recorder | None = None  # made when the clock starts
        self.issued = issued
        #: Conflicts the storage resolved in the transaction's vote.
        self.resolved = 0
        #: Loads the recording did not make: an object another worker changed since
        #: this connection read it, read again before it is written (see serial).
        self.reloads = 0
        self.index_of = {oid: index for index, oid in enumerate(oids)}

    # One branch per kind of call, inline: the timed loop makes no call of
    # its own between the storage's (a dispatch table would add one per call).
    def transaction(  # noqa: C901
        self, connection: _Connection, calls: list[p.Call]
    ) -> tuple[int, BaseException, bool] | None:
        """Issue *calls*; None, or (where, error, aborted) when one raised unlike its record."""
        instance, known, oids, data = connection.instance, connection.known, self.oids, self.data
        txn: Any = None
        stored: list[int] = []
        for call in calls:
            code, oid, size, raised = call
            try:
                if code == LOAD:
                    known[oid] = instance.load(oids[oid])[1]
                elif code == STORE:
                    serial = known.get(oid) or self.serial(connection, oid)
                    instance.store(oids[oid], serial, data[size], "", txn)
                    stored.append(oid)
                elif code == CREATE:
                    instance.store(oids[oid], z64, data[size], "", txn)
                    stored.append(oid)
                elif code == POLL:
                    changed = instance.poll_invalidations()
                    if changed or changed is None:
                        self.invalidated(connection, changed)
                elif code == BEGIN:
                    txn = TransactionMetaData()
                    instance.tpc_begin(txn)
                elif code == VOTE:
                    resolved = instance.tpc_vote(txn)
                    if resolved:
                        self.resolved += len(resolved)
                elif code == FINISH:
                    tid = instance.tpc_finish(txn)
                    for each in stored:
                        known[each] = tid
                    txn = None
                elif code == ABORT:
                    instance.tpc_abort(txn)
                    txn = None
                elif code == PREFETCH:
                    instance.prefetch([oids[each] for each in oid])
                elif code == NEW_OID:
                    instance.new_oid()
                elif code == CHECK:
                    serial = known.get(oid) or self.serial(connection, oid)
                    instance.checkCurrentSerialInTransaction(oids[oid], serial, txn)
            except Exception as error:
                if raised:
                    continue  # as recorded
                return self._ended(instance, txn, calls, call, error)
        return None

    @staticmethod
    def _ended(
        instance: Any, txn: Any, calls: list[p.Call], call: p.Call, error: Exception
    ) -> tuple[int, BaseException, bool]:
        """Where a transaction ended by *error* (at *call*), aborted if it was committing."""
        at = next(index for index, each in enumerate(calls) if each is call)
        if txn is not None:
            try:
                instance.tpc_abort(txn)
            except Exception:
                pass  # the error that ended it is what is counted
        return at, error, txn is not None

    def invalidated(self, connection: _Connection, changed: Any) -> None:
        """A poll said which objects changed (None: maybe all): their serials are stale."""
        if changed is None:
            connection.known.clear()
            connection.trust_dataset = False
            return
        index_of, known = self.index_of, connection.known
        for each in changed:
            if each in index_of:
                known[index_of[each]] = None

    def serial(self, connection: _Connection, oid: int) -> bytes:
        """The serial to write *oid* over, where this connection doesn't know it.

        The dataset's, if no other worker can have changed it since; else read
        again (a ZODB connection reads an invalidated object before it changes
        it; the recording's order of connections had no such change between).
        """
        if oid not in connection.known and connection.trust_dataset:
            return self.initial[oid]
        self.reloads += 1
        serial: bytes = connection.instance.load(self.oids[oid])[1]
        connection.known[oid] = serial
        return serial

    def counted(
        self, kind: str, calls: list[p.Call], broken: tuple[int, BaseException, bool] | None
    ) -> None:
        """After a transaction (untimed): the conflicts resolved in it, and where it broke."""
        assert self.recorder is not None
        if self.resolved:
            self.recorder.operations[kind].conflicts["resolved"] += self.resolved
            self.resolved = 0
        if broken is not None:
            self.broke(kind, calls, *broken)

    def broke(
        self, kind: str, calls: list[p.Call], at: int, error: BaseException, aborted: bool
    ) -> None:
        """A transaction ended at call *at* by *error*: counted, and its calls not issued."""
        assert self.recorder is not None
        entry = self.recorder.operations[kind]
        name = type(error).__name__
        if isinstance(error, ConflictError):
            entry.conflicts[name] += 1
        else:
            entry.failures[name] += 1
        for key, count in p.call_counts([calls[at + 1 :]]).items():
            self.issued[key] -= count
        if calls[at][0] == p.FINISH:
            self.issued["commits"] -= 1
        if aborted:
            self.issued["aborts"] += 1
