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

import threading
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
    HEAD,
    LOAD,
    NEW_OID,
    PASS,
    POLL,
    PREFETCH,
    REST,
    STORE,
    TURN,
    VOTE,
)

#: The longest a worker waits for its storage to learn of another worker's commit before
#: its own turn goes on (a ZEO client whose server is gone never does).
CATCH_UP_SECONDS = 10.0

#: A transaction (or a piece of one) as a task holds it: [start ns, slot, kind, calls,
#: part] (part: plan.WHOLE, HEAD or REST; see :mod:`.order`).
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
    #: An ordered replay with several workers: each worker's semaphore, its turn
    #: to issue a boundary event (see :mod:`.order`); None: no turns to take.
    turns: tuple[Any, ...] | None = None
    #: With turns: the tid of the last commit a worker made, 8 bytes (a RawArray).
    last_commit: Any = None

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

    __slots__ = ("held", "instance", "known", "skip", "trust_dataset")

    def __init__(self, instance: Any) -> None:
        self.instance = instance
        #: Per oid index: the serial this connection last read or wrote, None
        #: where a poll said it changed since.
        self.known: dict[int, bytes | None] = {}
        #: An oid it never read has the dataset's serial, until a poll said
        #: "everything changed" (then it is read before it is written).
        self.trust_dataset = True
        #: A transaction in two pieces: its first one's intended start, start and end.
        self.held: tuple[float | None, float, float] = (None, 0.0, 0.0)
        #: Its first piece broke: the second one's calls are not issued.
        self.skip = False


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
    run.ordered(task, barrier, clock, mvcc)
    recorder = run.recorder = Recorder(
        p.KINDS, 0.0, task.interval_seconds, task.speed is not None
    )  # its histograms made before the clock starts
    # Flat out, no turns to take, no transaction in pieces: the shortest loop.
    flat_out = task.speed is None and not run.turns and not any(e[4] for e in task.transactions)
    try:
        barrier.wait(task.barrier_timeout_seconds)
        started_at = time.time()
        start = clock()
        recorder.begin(start)
        if flat_out:
            _flat_out(run, task.transactions, connections, clock)
        else:
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


def _flat_out(
    run: _Run, transactions: list[Entry], connections: list[_Connection], clock: Callable[[], float]
) -> None:
    """The timed loop as fast as possible, each transaction whole, no turns: :func:`_loop`
    with nothing but the clock and the record around each transaction."""
    transact = run.transaction
    assert run.recorder is not None
    record = run.recorder.record_closed
    pending = {kind: entry.pending_latency for kind, entry in run.recorder.operations.items()}
    for _offset, slot, kind, calls, _part in transactions:
        began = clock()
        broken = transact(connections[slot], calls)
        done = clock()
        record(pending[kind], began, done)
        if broken is not None or run.resolved:
            run.counted(kind, calls, broken)


def _loop(
    run: _Run,
    task: ReplayTask,
    connections: list[_Connection],
    start: float,
    clock: Callable[[], float],
) -> None:
    """The timed loop: each transaction (at its intended start, under --speed), recorded.

    The time a worker waited for its turn (an ordered replay) is not the
    transaction's: its start moves by as much (its latency under --speed, from
    the intended start, keeps it).  A transaction in two pieces is recorded
    after its second, timed as if they had run back to back.
    """
    transact = run.transaction
    assert run.recorder is not None
    record = run.recorder.record
    speed = task.speed
    ordered = bool(run.turns)
    intended = None
    for offset, slot, kind, calls, part in task.transactions:
        connection = connections[slot]
        if speed is not None and part != REST:
            intended = start + offset / 1e9 / speed
            now = clock()
            if intended > now:
                time.sleep(intended - now)
        began = clock()
        # A transaction whole (part 0) and one worker: a truth test each, nothing more.
        broken = (run.skipped if part and connection.skip else transact)(connection, calls)
        done = clock()
        if ordered and run.waited:
            began += run.waited
            run.waited = 0.0
        if part:
            if part == HEAD:
                connection.held = (intended, began, done)
                connection.skip = broken is not None
                if broken is not None:
                    run.counted(kind, calls, broken)
                continue
            held = connection.held
            intended, began = held[0], began - (held[2] - held[1])
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
        #: An ordered replay's turns (see ordered); seconds waited for them since the
        #: loop last looked.
        self.turns: tuple[Any, ...] = ()
        self.mine: Any = None
        self.last_commit: Any = None
        #: The tid of the last commit this worker made, until it hands the turn on.
        self.made: bytes | None = None
        self.last_tid: Callable[[], bytes] | None = None
        self.waited = 0.0
        self.barrier: Any = None
        self.clock: Callable[[], float] = time.perf_counter

    def ordered(
        self, task: ReplayTask, barrier: Barrier, clock: Callable[[], float], mvcc: Any
    ) -> None:
        """Take turns with the other workers (an ordered replay's semaphores), if any."""
        self.barrier, self.clock = barrier, clock
        if task.turns is None:
            return
        self.turns, self.mine = task.turns, task.turns[task.worker]
        self.last_commit = task.last_commit
        from ZODB.mvccadapter import MVCCAdapter  # lazy: ZODB's adapter, as ZODB.DB uses it

        inner = getattr(mvcc, "mvcc_storage", mvcc)  # under a recording wrapper: its storage
        if isinstance(inner, MVCCAdapter):
            # A plain storage's instances see the commits its client was told of (ZEO:
            # by a message that may still be on its way); RelStorage's ask the database.
            self.last_tid = inner._storage.lastTransaction

    def turn(self) -> None:
        """Wait for this worker's turn (a broken barrier: another worker failed, it stops),
        then until its storage knows of the last commit another worker made."""
        clock = self.clock
        began = clock()
        while not self.mine.acquire(timeout=0.25):
            if getattr(self.barrier, "broken", False):
                raise threading.BrokenBarrierError
        if self.last_tid is not None:
            tid = self.last_commit.raw
            late = began + CATCH_UP_SECONDS
            while self.last_tid() < tid and clock() < late:
                time.sleep(0.0001)
        self.waited += clock() - began

    def hand_on(self, worker: int) -> None:
        """Hand the turn to *worker*, with the tid of the last commit made here since."""
        if self.made is not None and self.last_commit is not None:
            self.last_commit.raw = self.made
            self.made = None
        self.turns[worker].release()

    def keep_order(self, calls: list[p.Call]) -> None:
        """The turns among *calls*, whose other calls are not issued: the order goes on."""
        for code, oid, _size, _raised in calls:
            if code == TURN:
                self.turn()
            elif code == PASS:
                self.hand_on(oid)

    def skipped(
        self, connection: _Connection, calls: list[p.Call]
    ) -> tuple[int, BaseException, bool] | None:
        """The second piece of a transaction whose first one broke: only its turns (it
        did not break again: None)."""
        connection.skip = False
        self.keep_order(calls)
        for key, count in p.call_counts([calls]).items():
            self.issued[key] -= count
        return None

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
                    tid = self.made = instance.tpc_finish(txn)
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
                elif code == TURN:
                    self.turn()
                elif code == PASS:
                    self.hand_on(oid)
            except Exception as error:
                if code == TURN:
                    raise  # the replay stops: another worker failed
                if raised:
                    continue  # as recorded
                return self._ended(instance, txn, calls, call, error)
        return None

    def _ended(
        self, instance: Any, txn: Any, calls: list[p.Call], call: p.Call, error: Exception
    ) -> tuple[int, BaseException, bool]:
        """Where a transaction ended by *error* (at *call*), aborted if it was committing;
        the turns after it taken and handed on all the same."""
        at = next(index for index, each in enumerate(calls) if each is call)
        if txn is not None:
            try:
                instance.tpc_abort(txn)
            except Exception:
                pass  # the error that ended it is what is counted
        self.keep_order(calls[at + 1 :])
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
