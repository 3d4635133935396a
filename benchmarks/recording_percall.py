"""What does the recorder add to one storage call?  Nanoseconds per recorded load, in-process.

Not a test: a measurement to run by hand.  A connection's storage instance
is called in a tight loop, as it is and wrapped by
``zodbshootout.recording.record``, in interleaved rounds (plain, recorded,
recorded, plain, ...), each round ``--calls`` loads of one oid.  A recorded
round ends with its trace written (``flush()``), so the writer's share is
in.  Two storages:

- ``null``: an ``IMVCCStorage`` whose instances answer a load with a constant
  (one Python call): what is left is the recorder's own cost;
- ``mapping``: ZODB's ``MappingStorage`` behind ZODB's ``MVCCAdapter``, as
  ``ZODB.DB`` uses it.

It prints, per storage, the plain and recorded ns per call (min and median
over the rounds, wall clock and process CPU time) and what recording adds;
then, for the null storage, the application thread's share alone (the
calls, no flush) and the writer's share (the flush) per record.  The load
average is printed before and after: the figures mean little on a busy
machine.

Usage (from a checkout, in the venv that has zodbshootout installed)::

    python benchmarks/recording_percall.py
    python benchmarks/recording_percall.py --rounds 40 --calls 20000
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from typing import Any

import zope.interface
from ZODB.interfaces import IMVCCStorage

DATA = b"x" * 100
TID = b"\0\0\0\0\0\0\0\1"
OID = b"\0" * 8


class NullInstance:
    """A connection's storage instance that answers every load at once."""

    def load(self, oid: bytes, *args: Any) -> tuple[bytes, bytes]:
        return DATA, TID

    def poll_invalidations(self) -> list[bytes]:
        return []

    def release(self) -> None:
        pass


@zope.interface.implementer(IMVCCStorage)
class NullStorage:
    """The smallest IMVCCStorage the recorder wraps: instances that answer at once."""

    def new_instance(self) -> NullInstance:
        return NullInstance()

    def close(self) -> None:
        pass


def instances(kind: str, prefix: str) -> tuple[Any, Any, Any, Any]:
    """(plain instance, recorded instance, the recording storage, something to close)."""
    from zodbshootout.recording import record

    if kind == "null":
        plain = NullStorage().new_instance()
        recorded_storage = record(NullStorage(), prefix)
        recorded = recorded_storage.new_instance()
        return plain, recorded, recorded_storage, [recorded_storage]
    import ZODB
    from ZODB.MappingStorage import MappingStorage

    plain_db = ZODB.DB(MappingStorage())
    recorded_storage = record(MappingStorage(), prefix)
    recorded_db = ZODB.DB(recorded_storage)
    plain = plain_db._mvcc_storage.new_instance()
    recorded = recorded_db._mvcc_storage.new_instance()
    for instance in (plain, recorded):
        instance.poll_invalidations()
    return plain, recorded, recorded_storage, [plain_db, recorded_db]


def timed(load: Any, calls: int, flush: Any) -> tuple[float, float, float]:
    """(wall ns, CPU ns, flush wall ns) per call of *calls* loads, the flush included."""
    oid = OID
    wall = time.perf_counter_ns()
    cpu = time.process_time_ns()
    for _ in range(calls):
        load(oid)
    calls_done = time.perf_counter_ns()
    if flush is not None:
        flush()
    end = time.perf_counter_ns()
    cpu = time.process_time_ns() - cpu
    return (end - wall) / calls, cpu / calls, (end - calls_done) / calls


def measure(kind: str, args: argparse.Namespace, directory: str) -> list[str]:
    plain, recorded, storage, closing = instances(kind, os.path.join(directory, kind))
    flush = storage.recording.flush
    rows: dict[str, list[tuple[float, float, float]]] = {"plain": [], "recorded": []}
    for _ in range(2):  # warm up
        timed(plain.load, args.calls, None)
        timed(recorded.load, args.calls, flush)
    for number in range(args.rounds):
        order = ("plain", "recorded") if number % 2 == 0 else ("recorded", "plain")
        for name in order:
            if name == "plain":
                rows[name].append(timed(plain.load, args.calls, None))
            else:
                rows[name].append(timed(recorded.load, args.calls, flush))
    stopped = storage.recording.stopped_because
    for thing in closing:
        thing.close()
    if stopped:
        raise SystemExit(f"the recording stopped: {stopped}")

    def figures(name: str, column: int) -> tuple[float, float]:
        values = [row[column] for row in rows[name]]
        return min(values), statistics.median(values)

    lines = []
    for column, clock in ((0, "wall"), (1, "CPU")):
        plain_min, plain_median = figures("plain", column)
        rec_min, rec_median = figures("recorded", column)
        lines.append(
            f"{kind} {clock}: plain {plain_min:.0f} ns/call (median {plain_median:.0f}), "
            f"recorded {rec_min:.0f} (median {rec_median:.0f}): recording adds "
            f"{rec_min - plain_min:.0f} ns (min-min), {rec_median - plain_median:.0f} ns "
            "(median-median)"
        )
    flush_min, flush_median = figures("recorded", 2)
    lines.append(
        f"{kind}: of which the writer (flush) {flush_min:.0f} ns per record "
        f"(median {flush_median:.0f}), the calling thread the rest"
    )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kinds", default="null,mapping")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--calls", type=int, default=20_000)
    args = parser.parse_args()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    with tempfile.TemporaryDirectory(prefix="recording_percall") as directory:
        for kind in args.kinds.split(","):
            for line in measure(kind, args, directory):
                print(line, flush=True)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
