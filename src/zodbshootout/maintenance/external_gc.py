"""The ``gc`` operation: zc.zodbdgc's external garbage collection.

zc.zodbdgc walks the storage's records from outside it, marks what the
root no longer reaches and writes a deletion record for each
(``IExternalGC.deleteObject``); a pack then removes them.  It counts an
object as live when *any* revision it reads references it, so it is run on
a storage packed without GC (old revisions gone, garbage kept), as packing
regularly without GC leaves it.  Hence three steps: a pack without GC
(untimed), zodbdgc's GC (the timed operation, with its memory), a pack
without GC that removes the deletion records (its time given apart).
zodbdgc pauses twice a batch's time after each batch of deletions (its own
throttle, so that a live database keeps serving): that pause is in its time.
"""

from __future__ import annotations

import os
import tempfile
import time
from types import SimpleNamespace
from typing import Any

from zodbshootout.database.state import pack_own_files
from zodbshootout.errors import CellError

#: Why a database's section can't be collected this way, by what it lacks.
NEEDS_PACK_GC = (
    "zodbdgc's deletions are removed by a pack without GC, and this storage section "
    "has no pack-gc (a ZEO server packs with its own setting, which would collect "
    "the garbage itself)"
)


def missing() -> str | None:
    """Why zc.zodbdgc can't be used here, or None."""
    try:
        import zc.zodbdgc  # noqa: F401
    except ImportError:
        return "zc.zodbdgc is not installed (pip install 'zodbshootout[maintenance]')"
    return None


class Collection:
    """zodbdgc's GC of a database between two packs without GC (see the module doc).

    ``prepare()`` (untimed) packs the history away, ``run()`` is zodbdgc's
    GC, timed alone; ``finish()`` (untimed for the record, its time given)
    packs the deletion records away and counts what zodbdgc found.
    """

    def __init__(self, db: Any, factory: Any) -> None:
        self.db, self.factory = db, factory  # *db* opened with pack_gc false
        self._close: list[Any] = []
        self._bad: Any = None
        self._packs: list[float] = []

    def prepare(self) -> None:
        import zc.zodbdgc  # noqa: F401  (its import out of the timed region)

        self._pack()

    def _pack(self) -> None:
        started = time.perf_counter()
        problem = pack_own_files(self.db, self.factory)
        if problem:
            raise CellError(problem)
        self._packs.append(time.perf_counter() - started)

    def run(self) -> str | None:
        import zc.zodbdgc  # (imported by prepare(), untimed)
        import ZODB.config
        from ZODB.utils import newTid

        # zodbdgc opens its databases from a ZConfig file of its own; the
        # tool's sections are adjusted in code (server addresses, client
        # labels), so it is handed the database already open, its close
        # left to us.  The file it reads is then an empty one.
        handed = SimpleNamespace(
            databases={
                self.db.database_name: SimpleNamespace(storage=self.db.storage, close=_nothing)
            }
        )
        opener, here = ZODB.config.databaseFromFile, os.getcwd()
        ZODB.config.databaseFromFile = lambda file: handed
        # Its list of garbage goes to an unnamed file in the current directory.
        os.chdir(tempfile.gettempdir())
        try:
            with tempfile.NamedTemporaryFile("w", suffix=".conf") as conf:
                # days=0: no trailing days kept as live (the fill's garbage is recent).
                # The history is cut after the newest transaction: zodbdgc's own cut,
                # the wall clock at a whole second, left out every record of the
                # second it started in (a fill of 200 objects just before: 0 of
                # its 40 unreachable objects found).
                cut = newTid(self.db.storage.lastTransaction())
                self._bad = zc.zodbdgc.gc_(self._close, conf.name, 0, (), None, (), None, cut)
        finally:
            ZODB.config.databaseFromFile = opener
            os.chdir(here)
        return None

    def finish(self) -> dict[str, Any]:
        """The pack that removes the deletion records; what the record adds."""
        self._pack()
        count = sum(1 for _ in self._bad.iterator()) if self._bad is not None else 0
        for thing in self._close:
            if hasattr(thing, "close"):
                thing.close()
        return {"gc_deleted": count, "gc_pack_seconds": self._packs}


def _nothing() -> None:
    pass
