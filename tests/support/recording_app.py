"""A small application for the recorder's tests: a classic-like loop on a configuration.

    python tests/support/recording_app.py CONFIG --transactions N [--objects M]
        [--reads K] [--seed S] [--own I/P] [--hold]

It opens the configuration's database (whose storage section may be a
``<recording>``), makes a dataset of M objects if there is none, then runs N
transactions: each empties the connection's pickle cache, reads K objects
(one storage load each) and, every other transaction, changes one of them
(with ``--own I/P``, one of the objects whose number is I modulo P instead,
so that P processes at once never change the same object: PersistentMapping
has no conflict resolution).
It prints one JSON line of what it did, counted on its side: the loop's
start (``time.monotonic_ns()``, the clock the trace's records count on),
ZODB's own activity monitor's loads and stores, its commits, and a ZEO
server's ``server_status()`` before and after the loop when it has one.

With ``--hold`` it flushes the trace after the JSON line and sleeps, so that
a test can kill it there.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time

import transaction
import ZODB.config
from persistent.mapping import PersistentMapping
from ZODB.ActivityMonitor import ActivityMonitor
from ZODB.utils import z64


def server_status(db):
    storage = db.storage
    inner = getattr(storage, "_zst_inner", storage)
    status = getattr(inner, "server_status", None)
    return status() if status else None


def dataset(db, objects):
    with db.transaction() as conn:
        root = conn.root()
        if "app" not in root:
            root["app"] = PersistentMapping(
                {i: PersistentMapping({"v": 0}) for i in range(objects)}
            )
        return len(root["app"])


def loop(db, transactions, reads, rng, objects, own=None):
    commits = 0
    for number in range(transactions):
        conn = db.open()
        conn.cacheMinimize()
        app = conn.root()["app"]
        keys = rng.sample(range(objects), reads)
        for key in keys:
            app[key]["v"]  # the read is the point
        if number % 2:
            changed = keys[0] if own is None else rng.randrange(own[0], objects, own[1])
            app[changed]["v"] += 1
            transaction.commit()
            commits += 1
        else:
            transaction.abort()
        conn.close()
    return commits


def _share(text):
    """``I/P``: (I, P)."""
    index, processes = (int(part) for part in text.split("/"))
    return index, processes


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("config")
    parser.add_argument("--transactions", type=int, default=100)
    parser.add_argument("--objects", type=int, default=200)
    parser.add_argument("--reads", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--own", type=_share, default=None)
    parser.add_argument("--hold", action="store_true")
    args = parser.parse_args(argv)
    with open(args.config) as config:
        db = ZODB.config.databaseFromFile(config)
    objects = dataset(db, args.objects)
    # Every load in the loop must be an unghosting, which the activity monitor
    # counts; a Connection.get miss it does not.  The pickle cache keeps ghosts
    # only while something refers to them, so the loop's connection (the pool's
    # one) would load its root twice per transaction: once by get(), once to
    # unghost it.  Held here, the root stays in its cache as a ghost.
    conn = db.open()
    root = conn.get(z64)
    conn.getTransferCounts(clear=True)  # what the set-up loaded is not the loop's
    conn.close()
    before = server_status(db)
    monitor = ActivityMonitor(history_length=24 * 3600)
    db.setActivityMonitor(monitor)
    start = time.monotonic_ns()
    rng = random.Random(args.seed)
    commits = loop(db, args.transactions, args.reads, rng, objects, args.own)
    end = time.monotonic_ns()
    (activity,) = monitor.getActivityAnalysis(divisions=1)
    report = {
        "start_ns": start,
        "end_ns": end,
        "loads": activity["loads"],
        "stores": activity["stores"],
        "commits": commits,
        "server_before": before,
        "server_after": server_status(db),
    }
    print(json.dumps(report, default=str), flush=True)
    del root
    if args.hold:
        db.storage.recording.flush()
        print("flushed", flush=True)
        time.sleep(600)
    db.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
