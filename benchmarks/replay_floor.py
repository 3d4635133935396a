"""What the replay's harness costs: ``zodbshootout replay`` flat out against a bare loop.

Not a test: a measurement to run by hand and paste into a report.  It records
a small application in this process (``record()`` around a FileStorage: each
transaction reads ten objects, every other one changes two and adds one),
reads the trace into a replay plan, and then, in interleaved rounds (replay,
bare, bare, replay, ...), runs on a fresh copy of the dataset each time:

- the replay's worker loop (:func:`zodbshootout.replay.worker.replay`, one
  worker, flat out: a clock reading around each transaction and its latency
  recorded in the mix recorder);
- a bare loop that issues the same storage calls on the same kind of
  instance, with nothing else.

It prints, per storage (MappingStorage, whose calls cost least, so the
harness shows most; FileStorage; RelStorage on SQLite, as etc/local.conf
has it), the replay's rate over the bare loop's,
the median over rounds with its quartiles, timed twice: by the wall clock,
and by this thread's CPU time, which a busy machine's other work does not
inflate (both storages run in this process, so their work is in it too).
The issue's target is at least 0.97.

Usage::

    python benchmarks/replay_floor.py [--rounds 21] [--transactions 3000] [--storage mapping]
"""

from __future__ import annotations

import argparse
import glob
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

import transaction
import ZODB
from persistent.mapping import PersistentMapping
from ZODB.Connection import TransactionMetaData
from ZODB.FileStorage import FileStorage
from ZODB.MappingStorage import MappingStorage
from ZODB.utils import p64, z64

from zodbshootout.config.loader import ConfigSource
from zodbshootout.recording import open_trace, record
from zodbshootout.replay import plan as p
from zodbshootout.replay.dataset import build_dataset
from zodbshootout.replay.objects import Records
from zodbshootout.replay.order import ordered_entries
from zodbshootout.replay.plan import (
    ABORT,
    BEGIN,
    CREATE,
    FINISH,
    LOAD,
    NEW_OID,
    POLL,
    STORE,
    VOTE,
)
from zodbshootout.replay.worker import ReplayTask, replay


def record_application(directory: str, transactions: int) -> p.ReplayPlan:
    """The plan of a small application's trace, recorded here."""
    storage = record(FileStorage(os.path.join(directory, "app.fs")), f"{directory}/app")
    db = ZODB.DB(storage)
    with db.transaction() as conn:
        conn.root()["items"] = PersistentMapping({i: PersistentMapping() for i in range(500)})
    for number in range(transactions):
        conn = db.open()
        conn.cacheMinimize()  # every read a storage load (the recorder's worst case)
        items = conn.root()["items"]
        keys = [(number * 7 + k * 53) % 500 for k in range(10)]
        for key in keys:
            len(items[key])
        if number % 2:
            items[keys[0]]["n"] = number
            items[keys[1]]["n"] = number
            items[keys[2]]["child"] = PersistentMapping()
            transaction.commit()
        else:
            transaction.abort()
        conn.close()
    db.close()
    return p.read_plan([open_trace(path) for path in glob.glob(f"{directory}/app.*.zodbtrace")])


def bare(  # noqa: C901 (one branch per call, inline, as the replay has)
    entries: list[Any],
    instances: list[Any],
    oids: list[bytes],
    initial: list[bytes],
    data: dict[int, bytes],
) -> None:
    """The same storage calls, issued with nothing around them."""
    known: list[dict[int, bytes]] = [{} for _ in instances]
    txn: Any = None
    stored: list[int] = []
    for _start, slot, _kind, calls, _part in entries:
        instance, seen = instances[slot], known[slot]
        for code, oid, size, raised in calls:
            try:
                if code == LOAD:
                    seen[oid] = instance.load(oids[oid])[1]
                elif code == STORE:
                    instance.store(oids[oid], seen.get(oid) or initial[oid], data[size], "", txn)
                    stored.append(oid)
                elif code == CREATE:
                    instance.store(oids[oid], z64, data[size], "", txn)
                    stored.append(oid)
                elif code == POLL:
                    instance.poll_invalidations()
                elif code == BEGIN:
                    txn = TransactionMetaData()
                    stored = []
                    instance.tpc_begin(txn)
                elif code == VOTE:
                    instance.tpc_vote(txn)
                elif code == FINISH:
                    tid = instance.tpc_finish(txn)
                    for each in stored:
                        seen[each] = tid
                elif code == ABORT:
                    instance.tpc_abort(txn)
                elif code == NEW_OID:
                    instance.new_oid()
            except Exception:
                if not raised:  # a call that raised when recorded may raise again
                    raise


def sqlite_storage(directory: str) -> Any:
    """RelStorage on SQLite in *directory* (etc/local.conf's, in this process)."""
    import ZODB.config

    return ZODB.config.storageFromString(
        "%import relstorage\n<relstorage>\n<sqlite3>\ndriver sqlite3\n"
        f"data-dir {directory}\n</sqlite3>\n</relstorage>\n"
    )


#: The loads each replay added (objects changed under a connection): the bare loop makes none.
RELOADS: list[int] = []


class _Marks:
    """A barrier of one that notes this thread's CPU time when the replay passes it."""

    cpu = 0.0

    def wait(self, timeout: float | None = None) -> int:
        self.cpu = time.thread_time()
        return 0

    def abort(self) -> None:
        pass


def one_round(plan: p.ReplayPlan, make: Callable[[], Any], harnessed: bool) -> tuple[float, float]:
    """(wall, CPU) seconds for the whole plan, replayed (*harnessed*) or by the bare loop,
    on a new storage.

    The replay's wall seconds are its own (its clock, from its barrier to its
    last transaction's end); its CPU seconds run from its barrier to its
    return, so they also hold the encoding of its histograms after the clock
    stopped: the CPU ratio is a little lower than the harness's cost.  (Its
    clock can't be a CPU clock: reading one is a system call, which would
    cost each transaction more than the harness does.)
    """
    db = ZODB.DB(make())
    built = build_dataset(db, plan.sizes)
    share = list(range(len(plan.streams)))
    # One worker, as the default (ordered) replay gives it its share: no turns to take.
    ((entries,), _unexplained) = ordered_entries(plan, [share])
    mvcc = db._mvcc_storage
    try:
        if harnessed:
            unused = ConfigSource("", "", "")  # the task's storage is given, not opened
            task = ReplayTask(
                unused, "bench", (), 0, 1, len(share), entries, built["oids"], built["serials"],
                None, 1.0, 60.0,
            )  # fmt: skip
            marks = _Marks()
            report = replay(task, mvcc, marks)
            cpu = time.thread_time() - marks.cpu
            RELOADS.append(report["reloads"])
            return float(report["seconds"]), cpu
        instances = [mvcc.new_instance() for _ in share]
        oids = [p64(oid) for oid in built["oids"]]
        initial = [p64(serial) if serial else z64 for serial in built["serials"]]
        records = Records()
        sizes: set[int] = {c[2] for e in entries for c in e[3] if c[0] in (STORE, CREATE)}
        data = {size: records.of_size(size) for size in sizes}
        cpu = time.thread_time()
        start = time.perf_counter()
        bare(entries, instances, oids, initial, data)
        seconds = time.perf_counter() - start
        cpu = time.thread_time() - cpu
        for instance in instances:
            instance.release()
        return seconds, cpu
    finally:
        db.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--transactions", type=int, default=3000)
    parser.add_argument(
        "--storage", action="append", choices=("mapping", "filestorage", "sqlite"),
        help="only this storage (repeatable; default: all three)",
    )  # fmt: skip
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        plan = record_application(directory, args.transactions)
        print(f"plan: {plan.transactions} transactions, {plan.recorded}")
        counter = iter(range(1_000_000))
        storages = {
            "mapping": MappingStorage,
            "filestorage": lambda: FileStorage(os.path.join(directory, f"r{next(counter)}.fs")),
            "sqlite": lambda: sqlite_storage(os.path.join(directory, f"s{next(counter)}")),
        }
        for name, make in storages.items():
            if args.storage and name not in args.storage:
                continue
            ratios: dict[str, list[float]] = {"wall": [], "cpu": []}
            for number in range(args.rounds):
                order = (True, False) if number % 2 == 0 else (False, True)
                seconds = {h: one_round(plan, make, h) for h in order}
                ratios["wall"].append(seconds[False][0] / seconds[True][0])
                ratios["cpu"].append(seconds[False][1] / seconds[True][1])
            for clock_name, found in ratios.items():
                quartiles = statistics.quantiles(found, n=4)
                print(
                    f"{name}, {clock_name} time: replay rate / bare loop rate "
                    f"{statistics.median(found):.3f} (median of {args.rounds} rounds, "
                    f"quartiles {quartiles[0]:.3f}-{quartiles[2]:.3f})"
                )
        print(f"loads the replays added: {sorted(set(RELOADS))}")
        print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
