"""``--index-entries K``: K BTree index entries per object, kept in the same transaction.

An application that catalogs its objects writes, with every object, an entry
in each of its indexes.  With K > 0, each worker has K ``OOBTree`` indexes
(recreated before every repetition, untimed, under the tool's root key);
add inserts one entry per object in each, update moves each entry to the
object's new key (remove the old one, insert the new one), in the same
transaction as the objects themselves.

An index key is derived from what the object holds (its worker, number and
write generation), reversed so that consecutive objects land far apart in
the BTree, as names and other real keys do.  The keys are computed before
the barrier: the timed region holds only the BTree work.

Keys per object: the container's entry plus the K index entries, so the
table's "index keys/s" is (K + 1) × objects/s, the way centidb counts a
record's key and its index entries.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from BTrees.OOBTree import OOBTree
from persistent.mapping import PersistentMapping

from zodbshootout.errors import DataMismatch

#: Per object: the key of the container entry (counted, not indexed here).
CONTAINER_KEYS = 1

#: One object's K index keys.
ObjectKeys = tuple[str, ...]


def keys_per_object(index_entries: int) -> int:
    """Keys written per object: the container entry plus the index entries."""
    return CONTAINER_KEYS + index_entries


def area_key(worker: int) -> str:
    """The root-mapping key of a worker's indexes (a string: populate leaves those alone)."""
    return f"indexes-{worker}"


def setup(top: Any, concurrency: int, index_entries: int) -> None:
    """Give each worker K empty indexes under the tool's mapping *top* (untimed)."""
    for key in [k for k in top if isinstance(k, str) and k.startswith("indexes-")]:
        del top[key]
    if index_entries < 1:
        return
    for worker in range(concurrency):
        top[area_key(worker)] = PersistentMapping(
            {index: OOBTree() for index in range(index_entries)}
        )


def derived_keys(worker: int, count: int, generation: int, index_entries: int) -> list[ObjectKeys]:
    """Every object's K index keys for one write generation (computed before the barrier)."""
    return [
        tuple(f"{index}:{worker}:{generation}:{k}"[::-1] for k in range(index_entries))
        for index in range(count)
    ]


def add_entries(conn: Any, worker: int, keys: Sequence[ObjectKeys]) -> None:
    """Timed, inside add's transaction: insert each object's entries."""
    trees = conn.root()["zodbshootout"][area_key(worker)]
    indexes = [trees[k] for k in range(len(keys[0]))] if keys else []
    for number, object_keys in enumerate(keys):
        for tree, key in zip(indexes, object_keys, strict=True):
            tree[key] = number


def move_entries(
    conn: Any, worker: int, old: Sequence[ObjectKeys], new: Sequence[ObjectKeys]
) -> None:
    """Timed, inside update's transaction: each entry leaves its old key for the new one."""
    trees = conn.root()["zodbshootout"][area_key(worker)]
    indexes = [trees[k] for k in range(len(new[0]))] if new else []
    for number, (old_keys, new_keys) in enumerate(zip(old, new, strict=True)):
        for tree, old_key, new_key in zip(indexes, old_keys, new_keys, strict=True):
            del tree[old_key]
            tree[new_key] = number


def check_entries(conn: Any, worker: int, keys: Sequence[ObjectKeys]) -> None:
    """Untimed: each index holds exactly the entries *keys* name; DataMismatch if not."""
    if not keys or not keys[0]:
        return
    trees = conn.root()["zodbshootout"][area_key(worker)]
    for k in range(len(keys[0])):
        expected = {object_keys[k]: number for number, object_keys in enumerate(keys)}
        found = dict(trees[k].items())
        if found != expected:
            raise DataMismatch(
                f"worker {worker}'s index {k} holds {len(found)} entries, not the "
                f"{len(expected)} the write phase made"
            )
