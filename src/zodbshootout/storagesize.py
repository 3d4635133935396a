"""How many bytes a database's storage occupies now, for the bytes-per-object figures.

Read outside every timed region, before and after a phase, by one process;
the difference divided by the objects written is the storage's cost per
object.  What is counted, per storage:

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
RelStorage on SQLite
    Pages in use (page count less free pages) times the page size, of
    RelStorage's database files.
A ZEO server the tool did not start, MappingStorage, anything else
    Unknown, with the reason (a footnote, never a number).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from zodbshootout.caches import storage_kind


@dataclass(frozen=True)
class SizeReading:
    """A storage's size in bytes, or why it can't be known."""

    size_bytes: int | None
    reason: str | None = None  # set when size_bytes is None
    method: str = ""  # what was counted, e.g. "file length"


def unknown(reason: str) -> SizeReading:
    return SizeReading(None, reason)


def storage_size(db: Any, database_factory: Any) -> SizeReading:
    """The size of the storage behind *db* (opened from *database_factory*)."""
    storage = db.storage
    kind = storage_kind(storage)
    if kind == "filestorage":
        return _file_length(storage._file_name)
    if kind == "zeo":
        return _served_file_length(database_factory)
    if kind == "relstorage":
        return _relstorage_size(storage._adapter)
    if kind == "memory":
        return unknown("its data is in memory, not in a file or database whose size we can read")
    return unknown(f"zodbshootout can't read the size of a {type(storage).__name__}")


def _file_length(path: str) -> SizeReading:
    return SizeReading(os.path.getsize(path), method="FileStorage file length")


def _served_file_length(database_factory: Any) -> SizeReading:
    """The FileStorage an ``<embeddedzeo>`` server serves, read from the configuration."""
    from zodbshootout.storage import embedded_zeo_sections

    sections = embedded_zeo_sections(database_factory)
    if not sections:
        return unknown(
            "the ZEO server's storage is not visible from the client; serve a "
            "filestorage through <embeddedzeo> to measure its size"
        )
    served = sections[0].config.base
    if type(served).__name__ != "FileStorage":
        return unknown(
            f"the embedded ZEO server serves a {type(served).__name__}, whose size "
            "zodbshootout can't read"
        )
    return _file_length(served.config.path)


def _relstorage_size(adapter: Any) -> SizeReading:
    name = type(adapter).__name__
    if name == "PostgreSQLAdapter":
        return _on_new_connection(adapter, _postgresql_size)
    if name == "MySQLAdapter":
        return _on_new_connection(adapter, _mysql_size)
    if name == "Sqlite3Adapter":
        return _on_new_connection(adapter, _sqlite_size)
    return unknown(f"zodbshootout can't read the size of RelStorage's {name}")


def _on_new_connection(adapter: Any, measure: Any) -> SizeReading:
    """Run *measure(cursor)* on a connection of its own (not any worker's)."""
    reading: SizeReading = adapter.connmanager.open_and_call(lambda _conn, cursor: measure(cursor))
    return reading


def _postgresql_size(cursor: Any) -> SizeReading:
    cursor.execute(
        "SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
        "JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = current_schema() AND c.relkind = 'r'"
    )
    (total,) = cursor.fetchone()
    return SizeReading(int(total), method="pg_total_relation_size of RelStorage's tables")


MYSQL_METHOD = "InnoDB data_length + index_length after ANALYZE TABLE (1 MiB extents)"


def _mysql_size(cursor: Any) -> SizeReading:
    cursor.execute(
        "SELECT table_name FROM information_schema.TABLES "
        "WHERE table_schema = DATABASE() AND engine = 'InnoDB'"
    )
    # RelStorage's MySQL connections may hand back names as bytes.
    tables = [_text(row[0]) for row in cursor.fetchall()]
    if not tables:
        return SizeReading(0, method="no InnoDB tables")
    quoted = ", ".join(f"`{name}`" for name in tables)
    cursor.execute(f"ANALYZE TABLE {quoted}")
    failed = [row for row in cursor.fetchall() if _text(row[2]).lower() == "error"]
    if failed:
        return unknown(f"ANALYZE TABLE failed: {_text(failed[0][3])}")
    cursor.execute("COMMIT")  # a fresh snapshot of the refreshed statistics
    cursor.execute(
        "SELECT COALESCE(SUM(data_length + index_length), 0) "
        "FROM information_schema.TABLES WHERE table_schema = DATABASE()"
    )
    (total,) = cursor.fetchone()
    return SizeReading(int(total), method=MYSQL_METHOD)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _sqlite_size(cursor: Any) -> SizeReading:
    cursor.execute("PRAGMA database_list")
    schemas = [row[1] for row in cursor.fetchall()]
    total = 0
    for schema in schemas:
        pages = _pragma(cursor, schema, "page_count") - _pragma(cursor, schema, "freelist_count")
        total += pages * _pragma(cursor, schema, "page_size")
    return SizeReading(total, method="SQLite pages in use")


def _pragma(cursor: Any, schema: str, name: str) -> int:
    cursor.execute(f'PRAGMA "{schema}".{name}')
    return int(cursor.fetchone()[0])
