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
commit).  A store writes over the revision its connection sees: the one it
read or wrote, or else the one the workers' table of serials names
(:mod:`.serials`), never read again: the replay issues the recorded calls
and no others.  The objects' records resolve their conflicts (see
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
from zodbshootout.replay.serials import IN_TABLE, TOKEN_BIT, Slots, first_entries, open_table

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
    #: Per recorded oid index: the oid here.
    oids: list[int]
    #: The workers' table of serials (:func:`.serials.write_table`), and this
    #: worker's first commit slot in it (one per tpc_finish it replays).
    serials_path: str
    first_slot: int
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

    __slots__ = ("instance", "known", "views")

    def __init__(self, instance: Any, first_view: bytes) -> None:
        self.instance = instance
        #: Per oid index: the revision this connection sees, as far as it knows:
        #: the one it last read or wrote, or IN_TABLE when a poll said the
        #: object changed (the table finds it: :mod:`.serials`).
        self.known: dict[int, bytes] = {}
        #: Per oid index (8 bytes each), for the oids it doesn't know (no poll
        #: named them since): the table's newest entries as of its first view;
        #: all IN_TABLE once a poll said "everything may have changed".
        self.views: Any = first_view


def commit_slots(transactions: list[Entry]) -> int:
    """How many commit slots (:mod:`.serials`) a worker's *transactions* use."""
    return sum(1 for entry in transactions for call in entry[3] if call[0] == FINISH)


def replay(
    task: ReplayTask, mvcc: Any, barrier: Barrier, clock: Callable[[], float] = time.perf_counter
) -> dict[str, Any]:
    """Replay *task*'s transactions on *mvcc* (an IMVCCStorage); the worker's report."""
    records = Records()
    sizes = {c[2] for e in task.transactions for c in e[3] if c[0] in (STORE, CREATE)}
    data = {size: records.of_size(size) for size in sizes}  # made before the clock starts
    oids = [p64(oid) for oid in task.oids]
    table = open_table(task.serials_path)
    first_view = first_entries(table, len(oids))
    connections = [_Connection(mvcc.new_instance(), first_view) for _ in range(task.slots)]
    for connection in connections:
        # Untimed, before any worker writes: each instance's first view, so that
        # its first replayed poll names what changed since (RelStorage's very
        # first poll says "anything may have").
        connection.instance.poll_invalidations()
    issued = p.call_counts(entry[3] for entry in task.transactions)
    run = _Run(oids, Slots(table, len(oids), task.first_slot), data, issued)
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
        table.close()
    report = recorder.as_data()
    report.update(
        worker=task.worker, seconds=finished - start, started_at=started_at, server_lost=None,
        unstarted=0, increments=0, warmup_increments=0, uncertain_increments=0, inserted=0,
        counters=None, series={}, series_notes=[], series_seconds=None, issued=issued,
        waits=run.slots.waits,
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
        slots: Slots,
        data: dict[int, bytes],
        issued: dict[str, int],
    ) -> None:
        self.oids = oids
        self.slots = slots
        self.data = data
        self.recorder: Recorder | None = None  # made when the clock starts
        self.issued = issued
        #: Conflicts the storage resolved in the transaction's vote.
        self.resolved = 0
        self.index_of = {oid: index for index, oid in enumerate(oids)}

    # One branch per kind of call, inline: the timed loop makes no call of
    # its own between the storage's (a dispatch table would add one per call).
    def transaction(  # noqa: C901
        self, connection: _Connection, calls: list[p.Call]
    ) -> tuple[int, BaseException, bool] | None:
        """Issue *calls*; None, or (where, error, aborted) when one raised unlike its record."""
        instance, known, oids, data = connection.instance, connection.known, self.oids, self.data
        slots = self.slots
        txn: Any = None
        stored: list[int] = []
        for call in calls:
            code, oid, size, raised = call
            try:
                if code == LOAD:
                    known[oid] = instance.load(oids[oid])[1]
                elif code == STORE:
                    serial = known.get(oid) or connection.views[oid << 3 : (oid << 3) + 8]
                    if serial[0] & TOKEN_BIT:
                        serial = slots.serial(oid, instance)
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
                    held = slots.mark(stored)
                    try:
                        tid = instance.tpc_finish(txn)
                    except Exception:
                        slots.failed(stored, held)
                        raise
                    slots.publish(tid)
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
                    serial = self.seen(connection, oid)
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

    def seen(self, connection: _Connection, oid: int) -> bytes:
        """The revision of *oid* that *connection* sees (a store's, inline, is the same)."""
        serial = connection.known.get(oid) or connection.views[oid << 3 : (oid << 3) + 8]
        if serial[0] & TOKEN_BIT:
            serial = self.slots.serial(oid, connection.instance)
        return serial

    def invalidated(self, connection: _Connection, changed: Any) -> None:
        """A poll said which objects changed (None: maybe all): the revisions this
        connection sees are in the table (:mod:`.serials`)."""
        if changed is None:
            connection.known.clear()
            connection.views = IN_TABLE * len(self.oids)
            return
        index_of, known = self.index_of, connection.known
        for each in changed:
            index = index_of.get(each)
            if index is not None:
                known[index] = IN_TABLE

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
