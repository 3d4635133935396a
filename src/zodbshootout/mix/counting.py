"""``mix --work``: each operation's work per transaction, counted in an untimed pass after the run.

What a transaction asks of its storage (loads, those that reached the
server, round trips, stores, bytes, polls: zodbshootout.probes.work's
counts, the classic ``--work``'s) explains its latency.  Counting some of
it costs a Python call per load or statement, which the measured
transactions must not pay; so it is counted after the measured duration, in
a worker process of its own (the measuring workers install nothing), on a
database it opens with the counters on.

For each operation of the workload, :data:`TRANSACTIONS` transactions are
drawn as the run draws them (the same key chooser) and each is run twice,
between a pair of barrier waits each, the counters read just inside them:

- **cold**: first, untimed, the storage's client caches are emptied
  (phases.caches, the classic cold phase's), the tree above the
  transaction's objects (its nodes and buckets) is walked into the pickle
  cache without loading them, and every dataset object in the pickle cache
  is made a ghost: the transaction's own objects come from the server, the
  index from memory, as in a steady state where the objects are too many to
  cache.  A read of K objects loads K.
- **hot**: the same transaction again, at once: everything it reads is in
  the pickle cache.  A read loads nothing.

The writes commit (both times), so the database gains their changes; the
pass reports them (``increments``) for the check after the run.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from zodbshootout import storages
from zodbshootout.concurrency.task import Barrier, DatabaseTask, WorkerContext
from zodbshootout.config.loader import ConfigSource
from zodbshootout.database.open import open_database
from zodbshootout.mix import operations
from zodbshootout.mix.operations import MixObject, Prepared, dataset_of
from zodbshootout.mix.worker import MixPlan, MixTask, Transactions
from zodbshootout.mix.workloads import INSERT, SCAN
from zodbshootout.phases import caches
from zodbshootout.probes import work

#: Transactions of each operation the pass counts (each twice: cold, then hot).
TRANSACTIONS = 10

#: The cache states each transaction is counted in, in the order they run.
STATES = ("cold", "hot")

Counts = dict[str, int | None]


@dataclass(frozen=True)
class MixWorkTask(DatabaseTask):
    """The counting pass's task (concurrency.task's protocol): one worker, plain data back."""

    plan: MixPlan
    barrier_timeout_seconds: float
    transactions: int = TRANSACTIONS
    worker: int = 0  # the one worker of its stage

    def timed_waits(self) -> list[tuple[int, str]]:
        return []  # nothing timed

    @classmethod
    def from_plain(cls, data: dict[str, Any]) -> MixWorkTask:
        # The plan decodes as a measuring worker's does.
        shared = ("source", "database", "server_addresses", "plan", "barrier_timeout_seconds")
        task = MixTask.from_plain({**{key: data[key] for key in shared}, "worker": 0, "workers": 1})
        return cls(
            task.source,
            task.database,
            task.server_addresses,
            task.plan,
            data["barrier_timeout_seconds"],
            data["transactions"],
        )

    def execute(self, barrier: Barrier, context: WorkerContext) -> list[Any]:
        """Open a counted database of this process's own, count, close; one report."""
        if context.database is not None:  # RunOptions-style refusal upstream: --threads
            raise RuntimeError("mix --work counts in a worker process of its own")
        storages.count_requests(True)  # before the storage opens: its requests are counted
        work.install()
        db = open_database(
            self.source, self.database, list(self.server_addresses), client_label="mix-work"
        )
        try:
            caches.install_request_counters(db)
            return [count_work(self, db, barrier)]
        finally:
            db.close()

    def decode(self, results: list[Any]) -> list[Any]:
        return list(results)


def counting_pass(
    session: Any,
    where: tuple[ConfigSource, str, tuple[tuple[str, int], ...]],
    plan: MixPlan,
    timeout: float,
) -> dict[str, Any]:
    """--work: run the untimed pass as one worker of *session*; what it adds to the record.

    *where*: the source, database and addresses the workers open.  A pass
    that fails leaves the measurement as it is, with the reason.
    """
    source, name, addresses = where
    task = MixWorkTask(source, name, addresses, plan, timeout)
    outcome = session.run_stage([task], timeout)
    if outcome.error is not None:
        return {"work": None, "work_error": outcome.error}
    (counted,) = outcome.timings
    return {
        "work": {"transactions": task.transactions, "operations": counted["operations"]},
        "work_increments": counted["increments"],
    }


def _first_free_key(db: Any) -> int:
    """The key above every key of the dataset (its inserts go there); untimed.

    ``maxKey`` walks down the tree's right edge; ``len`` would load every bucket.
    """
    conn = db.open()
    try:
        try:
            return int(dataset_of(conn).maxKey()) + 1
        except ValueError:  # an empty tree
            return 0
    finally:
        conn.close()


def count_work(task: MixWorkTask, db: Any, barrier: Barrier) -> dict[str, Any]:
    """Every operation's counts, cold and hot, summed over its transactions (plain data)."""
    plan = dataclasses.replace(task.plan, insert_base=_first_free_key(db))
    worker = MixTask(task.source, task.database, (), 0, 1, plan, task.barrier_timeout_seconds)
    runner = Transactions(worker, db)
    counted: dict[str, dict[str, Any]] = {}
    for operation in plan.workload.operations:
        totals: dict[str, Counts] = {state: dict.fromkeys(work.COUNTED, 0) for state in STATES}
        committed = 0
        for _ in range(task.transactions):
            prepared = operations.prepare(operation, runner.keys, plan.shape, runner.next_insert)
            _evict_around(runner, prepared)
            ok = True
            for state in STATES:
                if state != STATES[0] and operation == INSERT:
                    # Another new key: an insert again at the same key would be an update.
                    prepared = operations.prepare(
                        operation, runner.keys, plan.shape, runner.next_insert
                    )
                counts, done = _counted(runner, prepared, db, barrier, task)
                ok = ok and done
                _add(totals[state], counts)
            committed += ok
        counted[operation] = {"transactions": committed, **totals}
    return {"operations": counted, "increments": runner.increments}


def _evict_around(runner: Transactions, prepared: Prepared) -> None:
    """Untimed: every client cache emptied, then the tree above the transaction's objects
    walked into memory without them, and every dataset object a ghost.

    The caches are emptied first because a storage may answer that with
    "drop every object" at the next poll (RelStorage does); the walk's poll
    takes that, and only then loads the tree's nodes and buckets (a
    ``tree.get`` returns an object without loading it).
    """
    caches.clear_storage_caches(runner.db)
    tm = runner.tm
    conn = runner.db.open(transaction_manager=tm)
    try:
        tm.begin()
        tree = dataset_of(conn)
        if prepared.operation == SCAN:
            for seen, _key in enumerate(tree.keys(min=prepared.keys[0]), 1):
                if seen >= runner.plan.shape.scan_length:
                    break
        else:
            for key in (*prepared.keys, *prepared.others):
                tree.get(key)
        for _oid, obj in list(conn._cache.items()):
            if isinstance(obj, MixObject) and obj._p_changed is False:
                obj._p_invalidate()  # a ghost again: its next access loads it
        tm.abort()
    finally:
        conn.close()


def _counted(
    runner: Transactions, prepared: Prepared, db: Any, barrier: Barrier, task: MixWorkTask
) -> tuple[Counts, bool]:
    """One run of *prepared* between two barrier waits; its counts, whether it committed."""
    read: Callable[[], Counts] = lambda: work.snapshot(db, caches.counters(db))  # noqa: E731
    barrier.wait(task.barrier_timeout_seconds)
    before = read()
    done = runner.run(prepared)
    after = read()
    barrier.wait(task.barrier_timeout_seconds)
    counts: Counts = {}
    for name, value in after.items():
        was = before.get(name)
        counts[name] = None if value is None or was is None else value - was
    return counts, done


def _add(total: Counts, counts: Counts) -> None:
    for name, value in counts.items():
        now = total.get(name)
        total[name] = None if value is None or now is None else now + value
