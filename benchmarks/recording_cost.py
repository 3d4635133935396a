"""What does recording cost an application?  The same loop with and without the recorder.

Not a test: a measurement to run by hand and to paste into a report.  Per
storage kind, each round is a fresh process that opens the storage twice,
as it is and wrapped by ``zodbshootout.recording.record``, and runs a small
application loop on each in turn, in slices of ``--slice`` seconds
(plain, recorded, recorded, plain, ...: both see the machine's load alike)
until each had ``--seconds``; a recorded slice's time includes writing its
trace out.  The two databases swap places (opened first or second, dataset
written first or second) every other round: two plain ones differ by about
5 % by their place alone.  Each transaction opens a connection, reads ``--reads`` objects
of a dataset, each a storage load (the objects read are turned into ghosts
again afterwards: the recorder's worst case, since reads that the pickle
cache serves reach no storage), and every other transaction changes one of
them and commits.

It prints, per kind, the recorded loop's rate ÷ the plain loop's: the median
and quartiles over every pair of adjacent slices (robust to a slice that the
machine's other work slowed down), and each round's ratio of totals; 1.00
means recording costs nothing.  Then the same for the worker process's CPU
time per transaction (both its threads: the loop's and the recorder's),
which waiting for a core does not inflate.  Then the recorded calls per second, the
trace's bytes per recorded call on disk, and the load average around the
measurement.

Usage (from a checkout, in the venv that has zodbshootout installed)::

    python benchmarks/recording_cost.py                     # zeo and sqlite, 6 rounds
    python benchmarks/recording_cost.py --kinds sqlite --rounds 3 --seconds 2
    python benchmarks/recording_cost.py --keep traces       # keep the traces recorded

Kinds: zeo (a ZEO server process, ``python -m ZEO.runzeo``, serving a
FileStorage), sqlite (RelStorage), filestorage.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

SECTIONS = {
    "filestorage": "<filestorage>\n  path {data}/Data.fs\n</filestorage>",
    "zeo": "<zeoclient>\n  server 127.0.0.1:{port}\n</zeoclient>",
    "sqlite": "<relstorage>\n  <sqlite3>\n    driver sqlite3\n    data-dir {data}/sqlite\n"
    "  </sqlite3>\n</relstorage>",
}


# --- the worker: one process, one round -------------------------------------------------


def open_database(path: str, objects: int, key: str) -> Any:
    """The database of *path*, with a dataset of *objects* under the root's *key*.

    Each variant has its own dataset: were they to share one, each commit of
    one would invalidate what the other is about to read (its next slice
    reads the same keys), and the second to read would pay server round trips
    the first did not.
    """
    import ZODB.config
    from persistent.mapping import PersistentMapping

    with open(path) as config:
        db = ZODB.config.databaseFromFile(config)
    with db.transaction() as conn:
        if key not in conn.root():
            conn.root()[key] = PersistentMapping(
                {i: PersistentMapping({"v": 0}) for i in range(objects)}
            )
    db.dataset_key = key
    return db


def run(db: Any, seconds: float, args: argparse.Namespace, rng: Any) -> tuple[int, float, float]:
    """The loop on *db* for *seconds*: (transactions, seconds taken, the process's CPU
    seconds), the trace's flush in."""
    import transaction

    done = 0
    cpu = time.process_time()
    start = time.perf_counter()
    deadline = start + seconds
    while time.perf_counter() < deadline:
        conn = db.open()
        app = conn.root()[db.dataset_key]
        keys = rng.sample(range(args.objects), args.reads)
        for key in keys:
            app[key]["v"]  # one storage load each
        if done % 2:
            app[keys[0]]["v"] += 1
            transaction.commit()
        else:
            transaction.abort()
        for key in keys:
            app[key]._p_deactivate()  # the next read of it is a load again
        conn.close()
        done += 1
    recording = getattr(db.storage, "recording", None)
    if recording is not None:
        recording.flush()
    return done, time.perf_counter() - start, time.process_time() - cpu


def worker(args: argparse.Namespace) -> None:
    """Both databases (plain, recorded) open; slices of the loop on each in turn.

    Slices alternate (plain, recorded, recorded, plain, ...) so that both
    see the machine's changing load alike; a recorded slice ends with the
    trace written out (its flush timed with it), so that no writing of
    its calls falls into a plain slice.
    """
    import random

    # Two plain databases side by side differ by about 5 % by their place alone
    # (opened first or second, dataset made first or second): the driver swaps
    # the places every other round, so that the place weighs on both alike.
    places = ("first", "second")
    paths = dict(zip(("plain", "recorded"), args.worker, strict=True))
    order = ("recorded", "plain") if args.recorded_first else ("plain", "recorded")
    opened = {
        name: open_database(paths[name], args.objects, place)
        for name, place in zip(order, places, strict=True)
    }
    plain, recorded = opened["plain"], opened["recorded"]
    # The same keys in the same order for both: the same loads, cache misses, conflicts.
    seed = os.getpid()
    rngs = {"plain": random.Random(seed), "recorded": random.Random(seed)}

    for name, db in (("plain", plain), ("recorded", recorded)):
        run(db, args.warmup, args, rngs[name])
    pairs = []  # (plain, recorded) transactions per second of two adjacent slices
    cpu_pairs = []  # (plain, recorded) CPU seconds per transaction of the same slices
    for number in range(max(1, round(args.seconds / args.slice))):
        order = ("plain", "recorded") if number % 2 == 0 else ("recorded", "plain")
        rates, cpus = {}, {}
        for name in order:
            db = plain if name == "plain" else recorded
            done, seconds, cpu = run(db, args.slice, args, rngs[name])
            rates[name] = done / seconds
            cpus[name] = cpu / max(done, 1)
        pairs.append((rates["plain"], rates["recorded"]))
        cpu_pairs.append((cpus["plain"], cpus["recorded"]))
    for db in (plain, recorded):
        db.close()
    print(json.dumps({"pairs": pairs, "cpu_pairs": cpu_pairs}))


# --- the driver ----------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_zeo(directory: str) -> tuple[subprocess.Popen, int]:
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "ZEO.runzeo", "-a", f"127.0.0.1:{port}", "-f",
         os.path.join(directory, "zeo.fs")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return server, port
        except OSError:
            time.sleep(0.1)
    server.kill()
    raise SystemExit("the ZEO server did not start")


def write_config(directory: str, kind: str, port: int | None, trace: str | None) -> str:
    section = SECTIONS[kind].format(data=directory, port=port)
    if trace:
        indented = "\n".join("    " + line for line in section.splitlines())
        section = f"<recording>\n    path {trace}\n{indented}\n</recording>"
    text = f"%import zodbshootout\n%import relstorage\n<zodb>\n{section}\n</zodb>\n"
    path = os.path.join(directory, f"{kind}-{'recorded' if trace else 'plain'}.conf")
    with open(path, "w") as f:
        f.write(text)
    return path


def measure(
    plain: str, recorded: str, args: argparse.Namespace, recorded_first: bool
) -> dict[str, list[list[float]]]:
    """One round in a fresh process: (plain, recorded) transactions per second of each
    pair of adjacent slices ("pairs"), and CPU seconds per transaction ("cpu_pairs");
    *recorded_first*: the recorded database takes the first place (see worker)."""
    done = subprocess.run(
        [sys.executable, __file__, "--worker", plain, recorded, "--seconds", str(args.seconds),
         "--slice", str(args.slice), "--warmup", str(args.warmup),
         "--objects", str(args.objects), "--reads", str(args.reads),
         *(["--recorded-first"] if recorded_first else [])],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode:
        raise SystemExit(f"the worker failed:\n{done.stderr}")
    return json.loads(done.stdout.splitlines()[-1])


def trace_figures(prefix: str) -> tuple[int, int]:
    """(records, bytes on disk) of the traces under *prefix*."""
    from zodbshootout.recording import open_trace

    records = size = 0
    for path in glob.glob(f"{prefix}.*.zodbtrace"):
        records += open_trace(path).record_count
        size += os.path.getsize(path)
    return records, size


def measure_kind(kind: str, args: argparse.Namespace, directory: str, call_ns: float) -> list[str]:
    server, port = start_zeo(directory) if kind == "zeo" else (None, None)
    try:
        plain = write_config(directory, kind, port, None)
        prefix = os.path.join(directory, "traces", kind)
        os.makedirs(os.path.dirname(prefix), exist_ok=True)
        recorded = write_config(directory, kind, port, prefix)
        ratios, rounds, recorded_seconds, loads, cpu_ratios = [], [], 0.0, [], []
        for number in range(args.rounds):
            measured = measure(plain, recorded, args, recorded_first=number % 2 == 1)
            pairs = measured["pairs"]
            ratios += [recorded_rate / plain_rate for plain_rate, recorded_rate in pairs]
            cpu_ratios += [r / p for p, r in measured["cpu_pairs"] if p > 0]
            rounds.append(sum(r for _, r in pairs) / sum(p for p, _ in pairs))
            recorded_seconds += args.seconds + args.warmup
            loads.append(os.getloadavg()[0])
        records, size = trace_figures(prefix)
        calls_per_second = records / recorded_seconds
        quartiles = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else ratios * 3
        median = statistics.median(ratios)
        return [
            f"{kind}: recorded/plain rate {median:.3f} (median of {len(ratios)} pairs of "
            f"slices, quartiles {quartiles[0]:.3f}-{quartiles[2]:.3f}; per round "
            f"{' '.join(f'{r:.3f}' for r in rounds)}; cost {100 * (1 - median):.1f} %)",
            f"{kind}: the loop's process CPU per transaction, recorded/plain "
            f"{statistics.median(cpu_ratios):.3f} (median of {len(cpu_ratios)} pairs; CPU time "
            "waits for no core, so the machine's other work sways it less than the rate)",
            f"{kind}: {records} calls recorded, {calls_per_second:.0f} calls/s; at "
            f"{call_ns:.0f} ns each, recording took {calls_per_second * call_ns / 1e7:.1f} % "
            "of the time; "
            f"{size / max(records, 1):.2f} bytes per call on disk "
            f"(32-byte records and a 64-byte header per file)",
            f"{kind}: load average during the rounds {min(loads):.2f}-{max(loads):.2f}",
        ]
    finally:
        if server is not None:
            server.terminate()
            server.wait()


def per_call(rounds: int, calls: int = 50_000) -> tuple[str, float]:
    """Nanoseconds of CPU a recorded load adds, in this process, on a MappingStorage (no I/O).

    The loads' own cost is a dict lookup here, so the difference is the
    recorder's: the clock read, the record packed and queued, and the writer
    thread's share.  Counted in the process's CPU time (both threads), not the
    wall clock's, so that the machine's other work inflates it less.
    """
    import ZODB
    from ZODB.MappingStorage import MappingStorage

    from zodbshootout.recording import record

    def timed(storage: object) -> float:
        db = ZODB.DB(storage)
        instance = db._mvcc_storage.new_instance()
        instance.poll_invalidations()
        load = instance.load
        oid = b"\0" * 8
        best = float("inf")
        for _ in range(5):  # the fastest of five: the least disturbed by other work
            start = time.process_time()
            for _ in range(calls):
                load(oid)
            if getattr(storage, "recording", None) is not None:
                storage.recording.flush()  # type: ignore[attr-defined]
            best = min(best, time.process_time() - start)
        db.close()
        return best / calls

    with tempfile.TemporaryDirectory(prefix="recording_cost") as directory:
        added = []
        for number in range(rounds):
            plain = timed(MappingStorage())
            recorded = timed(record(MappingStorage(), os.path.join(directory, str(number))))
            added.append((recorded - plain) * 1e9)
    line = (
        f"per call: recording adds {statistics.median(added):.0f} ns of CPU to a load, its "
        f"trace written (range {min(added):.0f}-{max(added):.0f}, MappingStorage, in-process, "
        f"{rounds} rounds)"
    )
    return line, statistics.median(added)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kinds", default="zeo,sqlite")
    parser.add_argument("--rounds", type=int, default=6, help="even: half each way")
    parser.add_argument("--seconds", type=float, default=3.0, help="per variant and round")
    parser.add_argument("--slice", type=float, default=0.25, help="seconds of one slice")
    parser.add_argument("--warmup", type=float, default=0.5)
    parser.add_argument("--objects", type=int, default=2000)
    parser.add_argument("--reads", type=int, default=10)
    parser.add_argument("--keep", metavar="DIR", help="copy the recorded traces into DIR")
    parser.add_argument("--worker", nargs=2, metavar="CONFIG", help=argparse.SUPPRESS)
    parser.add_argument("--recorded-first", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    # SIGTERM unwinds like Ctrl-C, so that the ZEO server is stopped and the files removed.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    with tempfile.TemporaryDirectory(prefix="recording_cost") as directory:
        line, call_ns = per_call(args.rounds)
        print(line, flush=True)
        for kind in args.kinds.split(","):
            for line in measure_kind(kind, args, directory, call_ns):
                print(line, flush=True)
        if args.keep:
            os.makedirs(args.keep, exist_ok=True)
            for path in glob.glob(os.path.join(directory, "traces", "*.zodbtrace")):
                shutil.copy(path, args.keep)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
