"""Count what a storage holds by walking it with ZODB's own tools, not the tool's code.

The fill and pack tests check their counts against this: every record of
every transaction (``storage.iterator()``), each object's class from its
pickle, and what is reachable from the root by following references
(``ZODB.serialize.referencesf``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import ZODB.config
from ZODB.serialize import referencesf
from ZODB.utils import get_pickle_metadata, z64

BENCHMARK_CLASS = ("zodbshootout.workload.objects", "BenchmarkObject")


@dataclass
class Census:
    revisions: Counter  # oid -> data records of a BenchmarkObject
    oids: set  # every oid with a data record
    reachable: set  # oids reachable from the root now

    @property
    def benchmark_objects(self) -> set:
        return set(self.revisions)


def filestorage(path: str):
    return ZODB.config.storageFromString(f"<filestorage>\n path {path}\n</filestorage>")


def sqlite(data_dir: str):
    return ZODB.config.storageFromString(
        "%import relstorage\n<relstorage>\n <sqlite3>\n  driver sqlite3\n"
        f"  data-dir {data_dir}\n </sqlite3>\n</relstorage>\n"
    )


def take(storage) -> Census:
    """The census of *storage* (the caller closes it)."""
    revisions: Counter = Counter()
    oids = set()
    for txn in storage.iterator():
        for record in txn:
            if record.data is None:
                continue
            oids.add(record.oid)
            if get_pickle_metadata(record.data) == BENCHMARK_CLASS:
                revisions[record.oid] += 1
    reachable = {z64}
    todo = [z64]
    while todo:
        data, _serial = storage.load(todo.pop(), "")
        for ref in referencesf(data):
            if ref not in reachable:
                reachable.add(ref)
                todo.append(ref)
    return Census(revisions, oids, reachable)


def census_of(open_storage, where: str) -> Census:
    storage = open_storage(where)
    try:
        return take(storage)
    finally:
        storage.close()
