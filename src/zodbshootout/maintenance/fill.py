"""Write a big database: N objects, a share of them garbage, R revisions each, resumable.

The objects live in one LOBTree (or a ``FanoutTree<F>``, see :mod:`.trees`)
at ``root['zodbshootout']['fill']['tree']``, keyed 0..N-1.  They are written
batch by batch; a batch of keys [start, end) is

1. one transaction that creates its objects (revision 0) in the tree;
2. R - 1 transactions that each rewrite every object of the batch;
3. one transaction that removes the batch's garbage objects from the tree:
   they stay in the storage, unreachable, until a pack with garbage
   collection removes them.

Every one of these transactions also records in the fill's marker
(``root['zodbshootout']['fill']``) how far it got, so an interrupted fill
(Ctrl-C, a killed process, a full disk) continues where the last commit
left it: re-running it with the same shape finishes the batch in flight and
goes on, and the counts come out exactly as in one run.

Which objects are garbage depends on the index only: object *i* is garbage
when ``floor((i + 1) g) > floor(i g)`` for the share *g*, so the first N
objects hold exactly ``floor(N g)`` garbage objects, whatever the batches
were, and a later fill to a larger N keeps the same share.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from fractions import Fraction
from typing import Any

from persistent.mapping import PersistentMapping

from zodbshootout.errors import CellError
from zodbshootout.maintenance.trees import tree_class
from zodbshootout.workload.limits import objects_per_commit
from zodbshootout.workload.objects import BenchmarkObject, make_payload
from zodbshootout.workload.root import (
    ROOT_KEY,
    connection_in_transaction,
    populate,
    untimed_connection,
)

#: Key of the fill's marker below root[ROOT_KEY].
FILL_KEY = "fill"
#: The worker number in the fill's payloads: no measuring worker has it.
FILL_WORKER = -2
#: Objects per batch by default: large enough to be quick, small enough that
#: a batch's objects stay in the connection's cache through its revisions.
DEFAULT_BATCH = 10_000


@dataclass(frozen=True)
class FillShape:
    """What a fill's objects look like; a resumed or grown fill must keep it."""

    garbage_share: float = 0.0
    revisions: int = 1
    object_size_bytes: int = 100
    fanout: int = 0  # 0: LOBTree's own node sizes

    @property
    def garbage_fraction(self) -> Fraction:
        # From the decimal the user wrote: 0.2 is exactly 1/5, not the float's binary value.
        return Fraction(repr(self.garbage_share))

    def garbage_among(self, objects: int) -> int:
        """How many of the first *objects* objects are garbage."""
        return int(objects * self.garbage_fraction)

    def is_garbage(self, index: int) -> bool:
        return self.garbage_among(index + 1) > self.garbage_among(index)


@dataclass(frozen=True)
class FillOutcome:
    """One database's fill: objects present before and after, written now, and how long."""

    present_before: int
    present_after: int
    seconds: float
    records_written: int  # object revisions committed by this fill

    @property
    def objects_written(self) -> int:
        return self.present_after - self.present_before


def payload(index: int, revision: int, shape: FillShape) -> bytes:
    return make_payload(FILL_WORKER, index, revision, shape.object_size_bytes)


def fill(
    db: Any,
    objects: int,
    shape: FillShape,
    batch: int = DEFAULT_BATCH,
    on_batch: Callable[[int, int], None] | None = None,
) -> FillOutcome:
    """Fill *db* up to *objects* objects of *shape* (see the module doc).

    The caller has refused foreign data already.  *on_batch(done, objects)*
    is called after every batch.  A database that holds a fill of another
    shape is a CellError (its objects would not add up).
    """
    populate(db, 0)  # the tool's root key, in a new database
    before = _marker_state(db, shape)
    per_commit = objects_per_commit(shape.object_size_bytes, batch)
    records = 0
    with untimed_connection(db) as (conn, tm):
        started = time.perf_counter()
        done, pending = before
        if pending is not None:  # the batch an interruption left: finish it
            records += _write_batch(conn, tm, done, pending, shape)
            done = pending
            if on_batch is not None:
                on_batch(done, objects)
        while done < objects:
            end = min(objects, done + per_commit)
            records += _write_batch(conn, tm, done, end, shape)
            done = end
            if on_batch is not None:
                on_batch(done, objects)
    seconds = time.perf_counter() - started
    return FillOutcome(before[0], max(before[0], objects), seconds, records)


def _marker_state(db: Any, shape: FillShape) -> tuple[int, int | None]:
    """(objects done, end of a batch in flight or None); a new marker if there is none."""
    with connection_in_transaction(db) as conn:
        top = conn.root()[ROOT_KEY]
        marker = top.get(FILL_KEY)
        if marker is None:
            marker = top[FILL_KEY] = PersistentMapping()
            marker.update(
                shape=asdict(shape),
                done=0,
                pending_end=None,
                revision=None,
                tree=tree_class(shape.fanout)(),
            )
        elif marker["shape"] != asdict(shape):
            held = ", ".join(f"{key} {value}" for key, value in marker["shape"].items())
            raise CellError(
                f"it holds a fill of another shape ({held}); fill it with that shape, "
                "or fill another database"
            )
        return marker["done"], marker["pending_end"]


def _write_batch(conn: Any, tm: Any, start: int, end: int, shape: FillShape) -> int:
    """Objects [start, end): created, rewritten, their garbage unlinked; records written.

    Resumes a batch whose first transactions committed before an interruption.
    """
    tm.begin()
    marker = conn.root()[ROOT_KEY][FILL_KEY]
    tree = marker["tree"]
    first_revision = 0 if marker["pending_end"] is None else marker["revision"] + 1
    revisions = 0
    if first_revision == 0:
        for index in range(start, end):
            tree[index] = BenchmarkObject(payload(index, 0, shape))
        marker["pending_end"], marker["revision"] = end, 0
        tm.commit()
        first_revision, revisions = 1, 1
    else:
        tm.abort()
    for revision in range(first_revision, shape.revisions):
        revisions += 1
        tm.begin()
        for index in range(start, end):
            tree[index].payload = payload(index, revision, shape)
        marker["revision"] = revision
        tm.commit()
    tm.begin()
    for index in range(start, end):
        if shape.is_garbage(index):
            del tree[index]
    marker.update(done=end, pending_end=None, revision=None)
    tm.commit()
    # Let the batch's objects go: the cache would otherwise hold them all.
    conn.cacheMinimize()
    return (end - start) * revisions


def fill_state(db: Any) -> dict[str, Any] | None:
    """The fill's marker as plain data (shape, done, batch in flight), or None if no fill."""
    with connection_in_transaction(db, commit=False) as conn:
        top = conn.root().get(ROOT_KEY)
        marker = top.get(FILL_KEY) if top is not None else None
        if marker is None:
            return None
        return {key: marker[key] for key in ("shape", "done", "pending_end", "revision")}


def refill(db: Any, shape: FillShape, batch: int = DEFAULT_BATCH, garbage: bool = True) -> int:
    """Give a packed fill its garbage and history again; how many garbage objects it made.

    After a pack with garbage collection the fill's first N objects hold
    their live objects at one revision and no garbage.  This writes, batch
    by batch, new objects at the garbage keys (R revisions each, then
    unlinked again) and R - 1 new revisions of every live object: the
    counts the fill left before the pack, so that a second pack (under
    load, say) starts from the same shape as the first.  Without *garbage*
    (after a pack that kept unreachable objects) only the history.
    """
    state = fill_state(db)
    if state is None or state["pending_end"] is not None:
        return 0
    objects = state["done"]
    per_commit = objects_per_commit(shape.object_size_bytes, batch)
    with untimed_connection(db) as (conn, tm):
        for start in range(0, objects, per_commit):
            _refill_batch(conn, tm, start, min(objects, start + per_commit), shape, garbage)
    return shape.garbage_among(objects) if garbage else 0


def _refill_batch(
    conn: Any, tm: Any, start: int, end: int, shape: FillShape, with_garbage: bool
) -> None:
    garbage = [i for i in range(start, end) if with_garbage and shape.is_garbage(i)]
    tm.begin()
    tree = conn.root()[ROOT_KEY][FILL_KEY]["tree"]
    for index in garbage:
        tree[index] = BenchmarkObject(payload(index, 0, shape))
    tm.commit()
    for revision in range(1, shape.revisions):
        tm.begin()
        for index in range(start, end):
            if index in tree:  # (without garbage: the live objects only)
                tree[index].payload = payload(index, revision, shape)
        tm.commit()
    tm.begin()
    for index in garbage:
        del tree[index]
    tm.commit()
    conn.cacheMinimize()
