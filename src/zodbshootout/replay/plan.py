"""Traces read into what a replay issues: per recorded connection, its transactions' calls.

A trace (:mod:`zodbshootout.recording`) records calls per process and
connection.  A *stream* here is one connection's life in one process, from
its ``new_instance`` to its ``release`` (a number the recorder reuses after
a release starts a new stream); its *transactions* are its calls grouped by
the recorded transaction number, each starting at its poll.  A transaction
keeps its start (nanoseconds from the traces' first call, on the monotonic
clock every trace of one machine shares) and its calls as tuples
``(code, oid, size, raised)``: the oid as an index into :attr:`ReplayPlan.sizes`
(a replay maps it to an object of its own dataset), the size of a store (of a
poll: how many objects it said changed, -1 for "maybe all"), and whether the
recorded call raised.

What can't be replayed as recorded is replayed as near as it can and said
(:attr:`ReplayPlan.notes`): ``loadBefore`` and ``loadSerial`` name revisions
of the recorded database, so they are replayed as loads of the current
revision; a blob's file is not recorded, so ``storeBlob`` is replayed as a
store of its record; a historical connection reads the current state.  A
transaction whose two-phase commit is out of order (a trace whose older file
was rotated away starts in the middle of one) is skipped and counted; one
whose commit never ended (a process killed, a file still being written)
ends with an abort.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from zodbshootout.errors import UsageError
from zodbshootout.recording.format import FLAG_ERROR, FLAG_FIRST, FLAG_NONE, Op, Record
from zodbshootout.recording.reader import Trace

# The calls a replay issues (the first item of a call's tuple).
LOAD = 1
PREFETCH = 2  # the oid item is a tuple of oids
STORE = 3  # size: the record's bytes
CHECK = 4
NEW_OID = 5
BEGIN = 6
VOTE = 7
FINISH = 8
ABORT = 9
POLL = 10
#: A store whose recorded serial was 0: the object is created.
CREATE = 11
#: Ordered replays (:mod:`.order`): wait for this worker's turn; hand the turn to
#: worker *oid*.  Never recorded, never counted.
TURN = 12
PASS = 13

#: Each call's name in the counts (:func:`call_counts`).
CALL_NAMES = {
    LOAD: "loads", PREFETCH: "prefetches", STORE: "stores", CHECK: "checks",
    NEW_OID: "new_oids", BEGIN: "begins", VOTE: "votes", FINISH: "commits",
    ABORT: "aborts", POLL: "polls", CREATE: "stores",
}  # fmt: skip

#: Transaction kinds, the rows of the output: read-only, and writes by the bytes they store.
READ_ONLY = "read-only"
WRITE_SMALL = "write <4KiB"
WRITE_MEDIUM = "write <64KiB"
WRITE_LARGE = "write >=64KiB"
KINDS = (READ_ONLY, WRITE_SMALL, WRITE_MEDIUM, WRITE_LARGE)

#: The largest record a replay writes.  A ZODB record this big is a mistake in
#: an application (large data belongs in blobs); a bigger one in a trace is
#: taken for damage, refused before anything is written.
MAX_RECORD_BYTES = 256 << 20

_SAME = {
    Op.LOAD: LOAD,
    Op.STORE: STORE,
    Op.PREFETCH: PREFETCH,
    Op.CHECK_CURRENT: CHECK,
    Op.NEW_OID: NEW_OID,
    Op.TPC_BEGIN: BEGIN,
}
_SAME.update({Op.TPC_VOTE: VOTE, Op.TPC_FINISH: FINISH, Op.TPC_ABORT: ABORT, Op.POLL: POLL})
#: Calls replayed as another, with what the note says.
_NEAR = {
    Op.LOAD_BEFORE: (LOAD, "loadBefore calls replayed as loads of the current revision"),
    Op.LOAD_SERIAL: (LOAD, "loadSerial calls replayed as loads of the current revision"),
    Op.STORE_BLOB: (STORE, "storeBlob calls replayed as stores of their record (no blob file)"),
}
_COMMIT = (STORE, CREATE, CHECK, VOTE, FINISH, ABORT)

Call = tuple[int, Any, int, bool]

#: What part of its transaction a worker's entry is: all of it, the first
#: piece of two (timed, not yet recorded), the last piece.
WHOLE, HEAD, REST = 0, 1, 2


@dataclass
class Transaction:
    """One recorded transaction: when it started and the calls it made."""

    start_ns: int
    calls: list[Call] = field(default_factory=list)
    stored_bytes: int = 0
    #: Where its commit sits among the others': the recorded tpc_finish's time, else
    #: a vote's that raised, else its tpc_abort's (None: no commit recorded).
    commit_ns: int | None = None
    #: The time of its last recorded call.
    end_ns: int = 0

    @property
    def commit_position_ns(self) -> int:
        """Its commit's place in the recorded order (see commit_ns)."""
        return self.end_ns if self.commit_ns is None else self.commit_ns

    @property
    def kind(self) -> str:
        if not any(call[0] == BEGIN for call in self.calls):
            return READ_ONLY
        if self.stored_bytes < 4096:
            return WRITE_SMALL
        return WRITE_MEDIUM if self.stored_bytes < 65536 else WRITE_LARGE


@dataclass
class Stream:
    """One recorded connection: its name (``pid:connection#life``) and transactions."""

    name: str
    transactions: list[Transaction] = field(default_factory=list)


@dataclass
class ReplayPlan:
    """What the traces ask of a replay (see the module doc)."""

    streams: list[Stream]
    #: Per oid index: the bytes of the object the dataset holds before the
    #: replay, or None where the recording found none (created in the trace, or
    #: only ever looked for in vain): that oid is reserved, not written.
    sizes: list[int | None]
    #: The recorded calls, by name of :data:`CALL_NAMES` (what a faithful replay issues).
    recorded: dict[str, int]
    #: Nanoseconds from the first recorded transaction's start to the last one's.
    span_ns: int
    #: What was replayed differently or left out, each with its count.
    notes: dict[str, int] = field(default_factory=dict)
    #: Bytes after the last whole record of the files (cut short): not read.
    partial_tail_bytes: int = 0

    @property
    def transactions(self) -> int:
        return sum(len(stream.transactions) for stream in self.streams)


class _Oids:
    """Recorded oids -> dense indexes, with what the dataset must hold for each."""

    def __init__(self) -> None:
        self.index: dict[int, int] = {}
        self.sizes: list[int | None] = []
        self.created: list[bool] = []
        #: The stream that first used each oid, or -1 once several streams did.
        self.user: list[int] = []

    def of(self, oid: int, stream: int) -> int:
        found = self.index.get(oid)
        if found is None:
            found = self.index[oid] = len(self.sizes)
            self.sizes.append(None)
            self.created.append(False)
            self.user.append(stream)
        elif self.user[found] != stream:
            self.user[found] = -1
        return found

    def seen(self, index: int, size: int, where: str) -> None:
        """A record of *size* bytes was read or written at *index* (the first one counts)."""
        if size > MAX_RECORD_BYTES:
            raise UsageError(
                f"{where}: absurd record size {size} bytes (a replay writes at most "
                f"{MAX_RECORD_BYTES >> 20} MiB per record)"
            )
        if self.sizes[index] is None and not self.created[index]:
            self.sizes[index] = size

    def dataset_sizes(self) -> list[int | None]:
        """What the dataset holds: objects created in the trace that only their creator's
        stream uses are reserved, to be created by the replay as recorded."""
        return [
            None if made and user >= 0 else size
            for size, made, user in zip(self.sizes, self.created, self.user, strict=True)
        ]

    def shared_creation(self, index: int) -> bool:
        """Created in the trace and used by other streams: in the dataset from the start."""
        return self.created[index] and self.user[index] < 0


class _Builder:
    """Streams built from the records of one process's files, in order."""

    def __init__(self, oids: _Oids, notes: dict[str, int]) -> None:
        self.oids = oids
        self.notes = notes
        self.open: dict[tuple[int, int], tuple[Stream, list[int]]] = {}
        self.lives: dict[tuple[int, int], int] = {}
        self.done: list[Stream] = []
        self.prefetch: list[int] | None = None
        self.number = 0  # streams started

    def note(self, text: str, count: int = 1) -> None:
        self.notes[text] = self.notes.get(text, 0) + count

    def start(self, pid: int, connection: int) -> tuple[Stream, list[int]]:
        key = (pid, connection)
        self.finish(key)
        life = self.lives[key] = self.lives.get(key, 0) + 1
        self.number += 1
        # The stream's transaction number and its own number (for the oids' users).
        entry = self.open[key] = (Stream(f"{pid}:{connection}#{life}"), [-1, self.number])
        return entry

    def finish(self, key: tuple[int, int]) -> None:
        entry = self.open.pop(key, None)
        if entry is not None and entry[0].transactions:
            self.done.append(entry[0])

    def add(self, pid: int, time_ns: int, record: Record, where: str) -> None:
        op = record.op
        if op in (Op.NEW_INSTANCE, Op.BEFORE_INSTANCE):
            self.start(pid, record.connection)
            if op is Op.BEFORE_INSTANCE:
                self.note("historical connections replayed as current ones")
            return
        if op is Op.RELEASE:
            self.finish((pid, record.connection))
            return
        if op in (Op.CLASS, Op.SYNC):
            return
        stream, number = self.open.get((pid, record.connection)) or self.start(
            pid, record.connection
        )
        if op is Op.POLL or record.transaction != number[0] or not stream.transactions:
            number[0] = record.transaction
            stream.transactions.append(Transaction(time_ns))
        transaction = stream.transactions[-1]
        self._call(transaction, record, where, number[1])
        transaction.end_ns = time_ns
        ends = op is Op.TPC_FINISH or (op is Op.TPC_VOTE and record.flags & FLAG_ERROR)
        if ends or (op is Op.TPC_ABORT and transaction.commit_ns is None):
            transaction.commit_ns = time_ns

    def _call(self, transaction: Transaction, record: Record, where: str, stream: int) -> None:
        op, raised = record.op, bool(record.flags & FLAG_ERROR)
        if op is Op.PREFETCH:
            if record.flags & FLAG_FIRST or self.prefetch is None:
                self.prefetch = []
                transaction.calls.append((PREFETCH, self.prefetch, 0, raised))
            self.prefetch.append(self.oids.of(record.oid, stream))
            return
        self.prefetch = None
        code = _SAME.get(op)
        if code is None:
            code, text = _NEAR[op]
            self.note(text)
        oid = 0
        size = 0
        if code in (LOAD, STORE, CHECK):
            oid = self.oids.of(record.oid, stream)
            missing = code == LOAD and (raised or record.flags & FLAG_NONE)
            if not missing:
                self.oids.seen(oid, record.size, where)
        if code == STORE:
            size = record.size
            transaction.stored_bytes += size
            if record.tid == 0:
                self.oids.created[oid] = True
                code = CREATE
        elif code == POLL:  # how many objects it said changed (-1: "maybe all")
            size = -1 if record.flags & FLAG_NONE else record.size
        transaction.calls.append((code, oid, size, raised))


def read_plan(traces: Iterable[Trace]) -> ReplayPlan:
    """The plan of *traces* (of one application's database); a UsageError for what can't be."""
    oids = _Oids()
    notes: dict[str, int] = {}
    builder = _Builder(oids, notes)
    tail = 0
    by_process = sorted(traces, key=lambda t: (t.header.pid, t.header.sequence))
    for trace in by_process:
        base = trace.header.base_monotonic_ns
        pid = trace.header.pid
        for record in trace.records():
            builder.add(pid, base + record.time_ns, record, trace.path)
        tail += trace.partial_tail_bytes
        builder.prefetch = None
    for key in list(builder.open):
        builder.finish(key)
    streams = [_checked(_created(stream, oids), builder) for stream in builder.done]
    streams = [stream for stream in streams if stream.transactions]
    if not streams:
        raise UsageError("the traces hold no transaction to replay")
    first = min(stream.transactions[0].start_ns for stream in streams)
    last = max(stream.transactions[-1].start_ns for stream in streams)
    for stream in streams:
        for transaction in stream.transactions:
            transaction.start_ns -= first
            transaction.end_ns -= first
            if transaction.commit_ns is not None:
                transaction.commit_ns -= first
    streams.sort(key=lambda stream: stream.transactions[0].start_ns)
    plan = ReplayPlan(streams, oids.dataset_sizes(), {}, last - first, notes, tail)
    plan.recorded = call_counts(t.calls for s in streams for t in s.transactions)
    return plan


def _created(stream: Stream, oids: _Oids) -> Stream:
    """*stream* with its creations of objects other streams use made stores: those
    objects are in the dataset from the start (a replay interleaves the streams
    in its own way; another one may use the object before this one creates it)."""
    for transaction in stream.transactions:
        calls = transaction.calls
        for at, (code, oid, size, raised) in enumerate(calls):
            if code == CREATE and oids.shared_creation(oid):
                calls[at] = (STORE, oid, size, raised)
    return stream


def _checked(stream: Stream, builder: _Builder) -> Stream:
    """*stream* without transactions whose commit is out of order; unended commits aborted."""
    kept = []
    for transaction in stream.transactions:
        state = _commit_state(transaction.calls)
        if state == "broken":
            builder.note("transactions skipped: their two-phase commit is out of order")
            builder.note("calls skipped with them", len(transaction.calls))
            continue
        if state == "open":
            transaction.calls.append((ABORT, 0, 0, False))
            builder.note("transactions whose commit the trace never ended: aborted")
        kept.append(transaction)
    stream.transactions = kept
    return stream


def _commit_state(calls: list[Call]) -> str:
    """'ok', 'open' (begun, never ended) or 'broken' (a commit call out of its place)."""
    begun = ended = False
    for code, _oid, _size, _raised in calls:
        if code == BEGIN:
            if begun:
                return "broken"
            begun = True
        elif code in _COMMIT:
            if not begun or ended:
                return "broken"
            ended = code in (FINISH, ABORT)
    return "open" if begun and not ended else "ok"


def call_counts(calls_of: Iterable[list[Call]]) -> dict[str, int]:
    """How many of each call (:data:`CALL_NAMES`) the transactions make; commits: only
    the tpc_finish calls that did not raise, loads: every load asked."""
    counts = dict.fromkeys(sorted(set(CALL_NAMES.values())), 0)
    for calls in calls_of:
        for code, _oid, _size, raised in calls:
            name = CALL_NAMES.get(code)
            if name is None or (code == FINISH and raised):
                continue  # a turn of an ordered replay, or a commit that failed
            counts[name] += 1
    return counts


def assign(streams: list[Stream], workers: int) -> list[list[int]]:
    """The streams each of *workers* replays: the busiest first, each to the least busy.

    With as many workers as streams, stream i is worker i's alone.
    """
    if workers >= len(streams):
        return [[i] for i in range(len(streams))] + [[] for _ in range(workers - len(streams))]
    load = [0] * workers
    shares: list[list[int]] = [[] for _ in range(workers)]
    busy = sorted(
        range(len(streams)), key=lambda i: -sum(len(t.calls) for t in streams[i].transactions)
    )
    for index in busy:
        worker = load.index(min(load))
        shares[worker].append(index)
        load[worker] += sum(len(t.calls) for t in streams[index].transactions)
    return [sorted(share) for share in shares]


def worker_transactions(
    plan: ReplayPlan, streams: list[int]
) -> Iterator[tuple[int, int, str, list[Call], int]]:
    """The transactions of *streams* in recorded order: (start ns, slot, kind, calls, 0).

    *slot* is the stream's place in *streams* (the worker's connection for it);
    the 0 says each is whole (see :mod:`.order` for transactions in pieces).
    """
    entries = [
        (transaction.start_ns, slot, transaction.kind, transaction.calls, WHOLE)
        for slot, index in enumerate(streams)
        for transaction in plan.streams[index].transactions
    ]
    entries.sort(key=lambda entry: (entry[0], entry[1]))
    return iter(entries)
