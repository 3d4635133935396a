"""How many bytes a database's storage occupies now, for the bytes-per-object figures.

Read outside every timed region, before and after a write phase, by worker 0
(after every worker committed); the difference divided by the objects
written is the storage's cost per object.  Each storage kind reads its own
size (``StorageKind.size``, in zodbshootout.storages); what is counted:

FileStorage (also the one an ``<embeddedzeo>`` server serves)
    The data file's length: FileStorage only appends.
RelStorage on PostgreSQL
    ``pg_total_relation_size`` (table, TOAST and indexes) of every table in
    the schema RelStorage uses: what the files grew by, in 8 KiB pages.
RelStorage on MySQL/MariaDB
    ``data_length + index_length`` of the database's tables from
    ``information_schema.TABLES``, after ``ANALYZE TABLE``.  InnoDB keeps
    these as statistics that it refreshes in the background, after enough
    rows changed: without the ANALYZE they lag behind (often showing no
    growth at all).  Even refreshed they count the pages InnoDB *reserved*
    for each index, and past its first 32 pages an index reserves whole
    extents of 64 pages (1 MiB with 16 KiB pages): a figure is exact to
    about 1 MiB per table, so it needs phases that write well over that.
    (``n_leaf_pages`` in ``mysql.innodb_index_stats`` counts used pages, but
    not the overflow pages where RelStorage's ``longblob`` states live.)
    MySQL (not MariaDB, since MDEV-15101) also drops an analyzed table from
    its table definition cache, so the next phase's first statements reopen
    it: a small untimed action with a timed after-effect, on MySQL only.
RelStorage on SQLite
    Pages in use (page count less free pages) times the page size.
A ZEO server the tool did not start, MappingStorage, anything else
    Unknown, with the reason (a footnote, never a number).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from zodbshootout import storages
from zodbshootout.probes.base import Probe
from zodbshootout.probes.base import Step as StepView
from zodbshootout.storages.base import SizeReading

__all__ = ["SizeReading", "storage_size"]


def storage_size(db: Any, database_factory: Any) -> SizeReading:
    """The size of the storage behind *db* (opened from *database_factory*)."""
    storage = db.storage
    return storages.kind_of(storage).size(storage, database_factory)


class StorageGrowth(Probe):
    """Worker 0: ``storage_growth_bytes``, what the storage grew by over a timed write step.

    Read before the first barrier (no worker writes yet) and after the
    second (every worker has committed).
    """

    def __init__(self, size: Callable[[], int | None], writes: Callable[[str], bool]) -> None:
        self.size = size
        self.writes = writes
        self._before: int | None = None

    def before(self, step: StepView) -> None:
        self._before = self.size() if step.timed and self.writes(step.phase) else None

    def after(self, step: StepView) -> dict[str, Any]:
        if self._before is None:
            return {"storage_growth_bytes": None}
        after = self.size()
        return {"storage_growth_bytes": None if after is None else after - self._before}
