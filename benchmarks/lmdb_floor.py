"""How close is the ``<rawkv>`` LMDB floor's read rate to a plain LMDB read loop?

Not a test: a measurement to run by hand and paste into a report (issue 19
asks the floor's reads to come within 10 % of a plain loop).  For each
object count it alternates, in rounds, between

- the floor: one worker's read stage of ``zodbshootout.rawkv.stage`` on an
  LMDB store (``cold`` on a fresh handle, then ``hot``), in this process,
  after a write stage (``add``, ``update``), exactly as a ``<rawkv>`` column
  runs it: a first read stage calibrates the loops (as the runner's warm-up
  does), the second loops ``hot`` that many times in its sample; its rate is
  N × loops ÷ seconds;
- a plain loop with the ``lmdb`` package only: one read transaction getting
  the same N keys, repeated until at least 50 ms have passed, the rate being
  N × repetitions ÷ seconds (the calibration ZODB's hot phase gets).

It prints, per N, the median floor rate, the median plain rate (objects/s)
and their ratio (the median and range over the rounds), with the load
average around the run: 1.00 means the floor measures the store; below 1,
the floor's sample costs something the plain loop doesn't pay.

Usage (from a checkout, in the venv that has zodbshootout and lmdb)::

    python benchmarks/lmdb_floor.py                  # N=1000 and 10000, 7 rounds
    python benchmarks/lmdb_floor.py -n 100000 --rounds 5
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import threading
import time

import lmdb

from zodbshootout.config.loader import ConfigSource
from zodbshootout.rawkv.backends import record_key
from zodbshootout.rawkv.section import StoreSpec
from zodbshootout.rawkv.stage import RawStageTask, execute_stage, plan_stages
from zodbshootout.run.calibration import loops_for

OBJECT_SIZE_BYTES = 128
MAP_SIZE_BYTES = 1 << 30
MIN_SAMPLE_SECONDS = 0.05


def floor_hot_rate(path: str, count: int) -> float:
    """The floor's hot rate (objects/s): its own write and read stages, one worker."""
    spec = StoreSpec("floor", "lmdb", path, False, MAP_SIZE_BYTES)
    writes, reads = plan_stages(["add", "update", "cold", "hot"])
    barrier = threading.Barrier(1)

    def stage(steps: list, loops: tuple = ()) -> list:
        task = RawStageTask(
            ConfigSource("", "", os.path.dirname(path)),
            spec,
            0,
            count,
            OBJECT_SIZE_BYTES,
            tuple(steps),
            60.0,
            loops=loops,
        )
        return execute_stage(task, barrier)

    stage(writes)
    warmup = next(t for t in stage(reads) if t.phase == "hot")
    loops = (("hot", loops_for(warmup.seconds)),)
    hot = next(t for t in stage(reads, loops) if t.phase == "hot")
    return hot.objects * hot.loops / hot.seconds


def plain_hot_rate(path: str, count: int) -> float:
    """A plain LMDB loop's rate (objects/s) reading the floor's records, ≥ 50 ms per sample."""
    keys = [record_key(0, index) for index in range(count)]
    env = lmdb.open(path, map_size=MAP_SIZE_BYTES, sync=False, metasync=False)
    try:
        with env.begin() as txn:  # the floor's cold read: load the pages first
            assert all(txn.get(key) is not None for key in keys)
        loops = 0
        start = time.perf_counter()
        while True:
            with env.begin(buffers=False) as txn:
                get = txn.get
                values = [get(key) for key in keys]
            loops += 1
            elapsed = time.perf_counter() - start
            if elapsed >= MIN_SAMPLE_SECONDS:
                break
        assert len(values) == count
        return count * loops / elapsed
    finally:
        env.close()


def measure(count: int, rounds: int) -> tuple[list[float], list[float]]:
    floors, plains = [], []
    for _ in range(rounds):
        with tempfile.TemporaryDirectory(prefix="lmdb-floor-") as directory:
            path = os.path.join(directory, "store")
            floors.append(floor_hot_rate(path, count))
            plains.append(plain_hot_rate(path, count))
    return floors, plains


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("-n", action="append", type=int, help="object counts (repeatable)")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    counts = args.n or [1000, 10000]
    load_before = os.getloadavg()[0]
    print(f"{'N':>7}  {'floor obj/s':>12}  {'plain obj/s':>12}  ratio (median [min, max])")
    for count in counts:
        floors, plains = measure(count, args.rounds)
        ratios = [f / p for f, p in zip(floors, plains, strict=True)]
        print(
            f"{count:>7}  {statistics.median(floors):>12,.0f}  {statistics.median(plains):>12,.0f}"
            f"  {statistics.median(ratios):.2f} [{min(ratios):.2f}, {max(ratios):.2f}]"
        )
    print(f"load average: {load_before:.2f} before, {os.getloadavg()[0]:.2f} after")


if __name__ == "__main__":
    main()
