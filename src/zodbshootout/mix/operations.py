"""The transactions of a mix run: what each operation does inside one ZODB transaction.

Keys are drawn before a transaction starts (:func:`prepare`), so a retry
after a conflict repeats the same work.  :func:`execute` runs one attempt in
an open connection and returns how many object versions it raised; the
worker adds them up for committed transactions only, so a test can check
that nothing committed was lost (every object's ``version`` counts the
committed changes to it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from BTrees.OOBTree import OOBTree
from persistent import Persistent

from zodbshootout.mix.keys import KeyChooser
from zodbshootout.mix.workloads import (
    INSERT,
    POLL,
    READ,
    READ_CURRENT,
    RMW,
    SCAN,
    UPDATE,
)
from zodbshootout.workload.objects import make_payload
from zodbshootout.workload.root import ROOT_KEY

#: Key of the dataset below root[ROOT_KEY]: an OOBTree of integer keys.
MIX_KEY = "mix"


class MixObject(Persistent):
    """One object of the dataset: a payload and how many committed changes it had."""

    def __init__(self, payload: bytes) -> None:
        self.payload = payload
        self.version = 0


def new_dataset() -> OOBTree:
    return OOBTree()


def dataset_of(conn: Any) -> Any:
    """The dataset's tree in an open connection."""
    return conn.root()[ROOT_KEY][MIX_KEY]


def dataset_versions(db: Any, batch: int = 10_000) -> int:
    """The sum of every object's version: how many changes the database holds (untimed)."""
    conn = db.open()
    try:
        total = 0
        for seen, item in enumerate(dataset_of(conn).values(), 1):
            total += item.version
            if seen % batch == 0:
                conn.cacheMinimize()  # a big dataset need not fit in memory
        return total
    finally:
        conn.close()


@dataclass(frozen=True)
class Prepared:
    """One transaction's work, decided before it starts: the same on every retry."""

    operation: str
    keys: tuple[int, ...]
    #: readcurrent: the keys it updates (``keys`` are those it only reads current).
    others: tuple[int, ...] = ()


@dataclass(frozen=True)
class Shape:
    """How big each operation is."""

    keys_per_operation: int  # K: objects a read, update, rmw or readcurrent touches
    scan_length: int  # L: items a scan reads
    object_size_bytes: int


def prepare(operation: str, chooser: KeyChooser, shape: Shape, insert_key: int) -> Prepared:
    """Draw the keys of one transaction of *operation*."""
    k = shape.keys_per_operation
    if operation == INSERT:
        return Prepared(operation, (insert_key,))
    if operation == SCAN:
        return Prepared(operation, (chooser.next(),))
    if operation == POLL:
        return Prepared(operation, ())
    if operation == READ_CURRENT:
        keys = chooser.many(2 * k)
        half = max(1, len(keys) // 2)
        return Prepared(operation, tuple(keys[:half]), tuple(keys[half:]))
    return Prepared(operation, tuple(chooser.many(k)))


def execute(conn: Any, work: Prepared, shape: Shape, worker: int) -> int:
    """One attempt of *work* in *conn* (inside a transaction); the versions it raises."""
    if work.operation == POLL:
        conn.root()  # opening the connection polled invalidations already
        return 0
    return _RUN[work.operation](conn, dataset_of(conn), work, shape, worker)


def _run_read(conn: Any, tree: Any, work: Prepared, shape: Shape, worker: int) -> int:
    for key in work.keys:
        _read(tree, key)
    return 0


def _run_scan(conn: Any, tree: Any, work: Prepared, shape: Shape, worker: int) -> int:
    for seen, item in enumerate(tree.values(min=work.keys[0]), 1):
        item.payload  # noqa: B018 -- loading it is the point
        if seen >= shape.scan_length:
            break
    return 0


def _run_insert(conn: Any, tree: Any, work: Prepared, shape: Shape, worker: int) -> int:
    key = work.keys[0]
    tree[key] = MixObject(make_payload(worker, key, 0, shape.object_size_bytes))
    return 0


def _run_read_current(conn: Any, tree: Any, work: Prepared, shape: Shape, worker: int) -> int:
    for key in work.keys:
        item = tree.get(key)
        if item is not None:
            conn.readCurrent(item)
            item.payload  # noqa: B018
    return _update(tree, work.others, shape, worker)


def _run_update(conn: Any, tree: Any, work: Prepared, shape: Shape, worker: int) -> int:
    return _update(tree, work.keys, shape, worker)


def _run_rmw(conn: Any, tree: Any, work: Prepared, shape: Shape, worker: int) -> int:
    for key in work.keys:
        _read(tree, key)
    return _update(tree, work.keys, shape, worker)


_RUN = {
    READ: _run_read,
    SCAN: _run_scan,
    INSERT: _run_insert,
    READ_CURRENT: _run_read_current,
    UPDATE: _run_update,
    RMW: _run_rmw,
}


def _read(tree: Any, key: int) -> None:
    item = tree.get(key)
    if item is not None:
        item.payload  # noqa: B018 -- loading it is the point


def _update(tree: Any, keys: tuple[int, ...], shape: Shape, worker: int) -> int:
    raised = 0
    for key in keys:
        item = tree.get(key)
        if item is None:
            continue
        item.version += 1
        item.payload = make_payload(worker, key, item.version, shape.object_size_bytes)
        raised += 1
    return raised
