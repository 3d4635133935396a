"""The state a database is measured in: wiped (``--zap``), packed, padded (``--min-objects``).

All of this happens in the runner's process, once per database, before the
first repetition and outside any timing (:func:`prepare_database`):

1. ``--zap``: only for databases the user named and confirmed (see
   :func:`databases_to_zap`).  RelStorage empties its tables
   (``zap_all``); any other storage gets its root emptied in a transaction
   and is then packed, so the old records go too.  No file is deleted; a
   FileStorage keeps its previous contents in ``PATH.old`` after the pack.
2. The guard: a database whose root holds anything but the tool's key is
   refused (workload.root.ForeignDataError), exactly as populate would.
3. ``--min-objects N``: at least N filler objects under
   ``root['zodbshootout']['filler']``, written in batches of commits and
   kept between repetitions and runs (only the shortfall is written).
4. ``--pack``: pack to the current time.  Storages without a pack (or whose
   pack refuses, e.g. DemoStorage over a base) are reported in a note.  A
   FileStorage is not packed when a file its pack would delete or replace
   (``PATH.old``, ``PATH.pack``) exists, in whatever directory: the tool
   did not make it.  The backup its own pack makes is removed.

Before every repetition :func:`zodbshootout.phases.setup.fill_for_repetition`
resets the workers' containers and the extra benchmarks' shared objects.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from BTrees.LOBTree import LOBTree

from zodbshootout import storages
from zodbshootout.config.loader import LoadedConfig
from zodbshootout.database.info import probe_database
from zodbshootout.database.open import open_database
from zodbshootout.errors import UsageError
from zodbshootout.options.run import RunOptions
from zodbshootout.workload.limits import objects_per_commit
from zodbshootout.workload.objects import BenchmarkObject, make_payload
from zodbshootout.workload.root import (
    ROOT_KEY,
    check_root_is_ours,
    connection_in_transaction,
    populate,
    untimed_connection,
)

#: Key of the filler objects below root[ROOT_KEY].
FILLER_KEY = "filler"

#: Filler objects written per commit: large enough to be quick, small enough
#: that one transaction doesn't hold millions of objects in memory.
FILLER_BATCH = 10_000

#: The worker number in the filler objects' payloads; no worker has it.
FILLER_WORKER = -1

#: The --zap value that means "without asking".
FORCE = "force"


@dataclass(frozen=True)
class ZapRequest:
    """A parsed ``--zap`` value.

    names: the databases named, or None for every database in the configuration.
    force: wipe without asking.
    """

    names: tuple[str, ...] | None
    force: bool


def parse_zap_option(value: str) -> ZapRequest:
    """``--zap`` → ZapRequest: ``''`` (all, ask), ``force`` (all, don't ask),
    ``a,b`` (a and b, ask), ``force,a,b`` (a and b, don't ask).

    ``force`` may be combined with names so that a script can wipe one
    database without a prompt and without the risk of wiping every other
    database in the file too.
    """
    parts = [part.strip() for part in value.split(",") if part.strip()]
    force = FORCE in parts
    names = tuple(dict.fromkeys(part for part in parts if part != FORCE))
    return ZapRequest(names or None, force)


def databases_to_zap(
    request: ZapRequest | None,
    databases: Sequence[str],
    ask: Callable[[str], bool],
) -> tuple[str, ...]:
    """The databases to wipe: those requested and, unless forced, confirmed by *ask*.

    *ask(name)* is asked once per database, in configuration order, and must
    return True only for an explicit yes.  A name that isn't a database of
    the configuration is a UsageError (a typo must not silently zap nothing,
    nor anything else).
    """
    if request is None:
        return ()
    if request.names is None:
        wanted = list(databases)
    else:
        unknown = [name for name in request.names if name not in databases]
        if unknown:
            raise UsageError(
                f"--zap names {unknown[0]!r}, which is not a database of the configuration "
                f"(databases: {', '.join(databases)}); --zap takes the word after it as "
                "its value, so put it last or write --zap=NAME,..."
            )
        wanted = [name for name in databases if name in request.names]
    if request.force:
        return tuple(wanted)
    return tuple(name for name in wanted if ask(name))


def is_yes(answer: str | None) -> bool:
    """Only an explicit yes counts; empty, EOF (None) and anything else mean no."""
    return answer is not None and answer.strip().lower() in ("y", "yes")


def zap(db: Any) -> str:
    """Remove all data from *db*; return how, for a note.

    The caller closes *db* afterwards and opens it again: a wiped RelStorage
    has no root object until a new DB creates it.
    """
    how = storages.kind_of(db.storage).zap(db.storage)
    if how is not None:
        return how
    with connection_in_transaction(db) as conn:
        conn.root().clear()
    problem = pack(db)
    if problem:
        return f"emptied its root; the old records remain ({problem})"
    return "emptied its root and packed"


def refuse_foreign_data(db: Any) -> None:
    """Raise workload.root.ForeignDataError if the root holds anything but the tool's key."""
    with connection_in_transaction(db, commit=False) as conn:
        check_root_is_ours(conn.root())


def write_in_batches(
    conn: Any,
    tm: Any,
    tree_of: Callable[[Any], Any],
    keys: Sequence[int],
    make: Callable[[int], Any],
    batch: int,
    on_batch: Callable[[int, int], None] | None = None,
) -> int:
    """Store ``make(key)`` at each of *keys* in ``tree_of(root)``, *batch* keys a commit.

    An interrupted fill keeps what it committed; *on_batch(written, total)*
    reports progress.  Returns how many objects were written.
    """
    for first in range(0, len(keys), batch):
        tm.begin()
        tree = tree_of(conn.root())
        for key in keys[first : first + batch]:
            tree[key] = make(key)
        tm.commit()
        # Let committed objects go: the cache would otherwise hold them all.
        conn.cacheMinimize()
        if on_batch is not None:
            on_batch(min(first + batch, len(keys)), len(keys))
    return len(keys)


def ensure_filler(
    db: Any,
    min_objects: int,
    object_size_bytes: int,
    batch: int = FILLER_BATCH,
    on_batch: Callable[[int, int], None] | None = None,
) -> int:
    """Make sure at least *min_objects* filler objects exist; return how many were written.

    Keys are 0..len-1, so the shortfall is known without loading the
    objects.  Each batch is its own transaction: an interrupted fill keeps
    what it committed.  *on_batch(written, needed)* reports progress.
    """
    if min_objects <= 0:
        return 0
    with untimed_connection(db) as (conn, tm):
        tm.begin()
        top = conn.root()[ROOT_KEY]
        if FILLER_KEY not in top:
            top[FILLER_KEY] = LOBTree()
        filler = top[FILLER_KEY]
        start = len(filler)
        tm.commit()
        needed = max(0, min_objects - start)
        return write_in_batches(
            conn,
            tm,
            lambda root: root[ROOT_KEY][FILLER_KEY],
            range(start, start + needed),
            lambda index: BenchmarkObject(make_payload(FILLER_WORKER, index, 0, object_size_bytes)),
            objects_per_commit(object_size_bytes, batch),
            on_batch,
        )


def filler_count(db: Any) -> int:
    """How many filler objects the database holds (0 if none)."""
    with connection_in_transaction(db, commit=False) as conn:
        top = conn.root().get(ROOT_KEY)
        return len(top[FILLER_KEY]) if top is not None and FILLER_KEY in top else 0


def pack(db: Any) -> str | None:
    """Pack *db* to now; None on success, else why it could not be packed."""
    storage = db.storage
    if not callable(getattr(storage, "pack", None)):
        return f"{type(storage).__name__} has no pack"
    try:
        db.pack(time.time())
    except Exception as e:
        return f"{type(storage).__name__} could not pack: {type(e).__name__}: {e}"
    return None


def pack_would_replace(database_factory: Any) -> list[str]:
    """The files packing would delete or replace that exist already.

    Whatever directory they are in (a data directory the user chose holds
    the user's files), the tool did not make them, so it must not touch them.
    """
    return [path for path in storages.pack_backups(database_factory) if os.path.lexists(path)]


def pack_own_files(db: Any, database_factory: Any) -> str | None:
    """Pack *db* unless that would replace a file the tool did not make.

    Returns None on success, else why it was not packed.  The backup the
    pack leaves (FileStorage's ``PATH.old``) is the tool's own: it is
    removed, so that the next run can pack again and nothing is left behind.
    """
    existing = pack_would_replace(database_factory)
    if existing:
        return (
            f"packing would replace {existing[0]}, which zodbshootout did not make; move "
            "it away, or name the database with --zap"
        )
    problem = pack(db)
    for path in storages.pack_backups(database_factory):
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        elif os.path.lexists(path):
            os.remove(path)
    return problem


def prepare_database(
    config: LoadedConfig,
    name: str,
    addresses: list[tuple[str, int]],
    options: RunOptions,
    report: Callable[[str], None],
    note: Callable[[str], None],
) -> dict[str, int] | None:
    """Zap, check, fill and pack *name* as the options say, before any repetition.

    The guard runs after a zap and before anything is written, so a
    database with foreign data that was not zapped is refused untouched
    (workload.root.ForeignDataError).  *report(stage)* tells the user what is slow;
    *note(text)* is for under the table.  Returns the filler counts
    (``present``, ``written``) with --min-objects, else None.
    """
    filler = None
    zapping = name in options.zap
    if not (zapping or options.min_objects or options.pack):
        return None

    def open_db() -> Any:
        return open_database(config.source, name, addresses, client_label="state")

    if zapping:
        report("zapping (--zap)")
        db = open_db()
        try:
            how = zap(db)
        finally:
            db.close()
        note(f"{name}: zapped before the run: {how}")
    db = open_db()
    try:
        refuse_foreign_data(db)
        if options.min_objects:
            report(f"writing filler objects (--min-objects {options.min_objects})")
            populate(db, 0)  # creates the tool's root key if the database is new
            written = ensure_filler(db, options.min_objects, options.object_size_bytes)
            filler = {"present": filler_count(db), "written": written}
        if options.pack:
            report("packing (--pack)")
            # With --zap the user allowed erasing everything, backups included.
            problem = pack(db) if zapping else pack_own_files(db, config.databases[name])
            if problem:
                note(f"{name}: not packed: {problem}")
    finally:
        db.close()
    return filler


def set_up_database(
    config: LoadedConfig,
    name: str,
    addresses: list[tuple[str, int]],
    options: RunOptions,
    secrets: set[str],
    report: Callable[[str], None],
    note: Callable[[str], None],
    metadata: dict[str, Any],
    gevent_mode: bool = False,
) -> None:
    """Before *name*'s first repetition: describe it (dbinfo), then prepare its state.

    Its description goes to ``metadata["databases"]``, its filler counts (with
    --min-objects) to ``metadata["filler_objects"]``.  *gevent_mode*: the
    workers will run in a gevent-patched process (the mode's record says so).
    """
    info, notes = probe_database(config.source, name, addresses, secrets, gevent_mode)
    metadata.setdefault("databases", {})[name] = info
    counts, levels = list(options.object_counts), list(options.concurrencies)
    notes.extend(storages.plan_notes(name, info, counts, levels))
    for text in notes:
        if text:
            note(text)
    filler = prepare_database(config, name, addresses, options, report, note)
    if filler is not None:
        metadata.setdefault("filler_objects", {})[name] = filler
