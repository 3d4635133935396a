"""The three raw stores behind one small interface: write records, read them, size.

Every store keeps the tool's records under :data:`PREFIX`; a write is one
transaction (LMDB write transaction, LevelDB write batch, SQLite
transaction), a read is one consistent view (LMDB read transaction, LevelDB
snapshot, SQLite read transaction), like ZODB's one transaction per phase.
"""

from __future__ import annotations

import importlib
import os
import sqlite3
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from zodbshootout.errors import CellError
from zodbshootout.rawkv.section import BACKENDS, StoreSpec

#: Every key the tool writes starts with this; nothing else is touched.
PREFIX = b"zodbshootout/"

#: Seconds a SQLite writer waits for another process's write lock.
_SQLITE_BUSY_TIMEOUT_SECONDS = 600


def record_key(worker: int, index: int) -> bytes:
    """The key of a worker's *index*-th record (sorted by worker, then index)."""
    return b"%s%d/%010d" % (PREFIX, worker, index)


class Store(Protocol):
    """An open store; one per worker (per process), closed after the stage."""

    def write(self, items: Sequence[tuple[bytes, bytes]]) -> None:
        """Put all *items* (insert or overwrite) in one transaction."""

    def read(self, keys: Sequence[bytes]) -> list[bytes | None]:
        """The values of *keys*, one by one, in one consistent view."""

    def remove_ours(self) -> int:
        """Delete every key under PREFIX (untimed set-up); return how many."""

    def size_bytes(self) -> int:
        """Bytes the store occupies now (see each store for what is counted)."""

    def close(self) -> None: ...


def _import(backend: str) -> Any:
    record = BACKENDS[backend]
    try:
        return importlib.import_module(record.module)
    except ImportError:
        raise CellError(
            f"the {backend} floor needs the {record.package} package: pip install '.[rawkv]' "
            f"in the zodbshootout checkout (or pip install {record.package})"
        ) from None


class ForeignStoreError(CellError):
    """The store's path holds something the tool did not create; nothing was written."""


#: The empty file that marks a directory store (LMDB, LevelDB) as the tool's.
MARKER_FILE = "zodbshootout-rawkv"
#: SQLite's ``application_id`` (header bytes 68-71) of the tool's databases: "zsKV".
SQLITE_APPLICATION_ID = 0x7A734B56
_SQLITE_MAGIC = b"SQLite format 3\x00"


def _refuse(spec: StoreSpec, why: str) -> ForeignStoreError:
    return ForeignStoreError(
        f"{spec.path} {why}; refusing to touch it: point the section's path at a new name"
    )


def check_not_foreign(spec: StoreSpec) -> None:
    """Refuse, before anything opens it, a path that holds what the tool did not create.

    A new name (or, for LMDB and LevelDB, an empty directory) is fine: the
    store is created there and marked.  Anything else must carry the mark
    (SQLite's application id, or the marker file of a directory store).
    Only reads: the path is left byte-identical when refused.
    """
    if not os.path.lexists(spec.path):
        return
    if spec.backend == "sqlite":
        if not os.path.isfile(spec.path):
            raise _refuse(spec, "is not a regular file (a SQLite store is one file)")
        with open(spec.path, "rb") as file:
            header = file.read(100)
        if len(header) < 100 or not header.startswith(_SQLITE_MAGIC):
            raise _refuse(spec, "exists and is not a SQLite database zodbshootout created")
        if int.from_bytes(header[68:72], "big") != SQLITE_APPLICATION_ID:
            raise _refuse(spec, "is a SQLite database zodbshootout did not create")
        return
    if not os.path.isdir(spec.path):
        raise _refuse(spec, f"is not a directory (a {spec.backend} store is a directory)")
    entries = os.listdir(spec.path)
    if entries and MARKER_FILE not in entries:
        raise _refuse(spec, "is a directory zodbshootout did not create")


def _mark_directory(path: str) -> None:
    # Two workers may open the same store at once: whoever makes the marker first wins.
    try:
        with open(os.path.join(path, MARKER_FILE), "xb"):
            pass
    except FileExistsError:
        pass


def _check_keys_ours(spec: StoreSpec, first: bytes | None, last: bytes | None) -> None:
    """Refuse a marked store in which someone else wrote keys outside PREFIX."""
    for key in (first, last):
        if key is not None and not bytes(key).startswith(PREFIX):
            raise _refuse(spec, "holds keys zodbshootout did not write")


def open_store(spec: StoreSpec) -> Store:
    """Open (creating if needed) the store *spec* names; problems are CellError.

    A store the tool did not create is a ForeignStoreError, and is not opened.
    """
    openers: dict[str, Callable[[StoreSpec], Store]] = {
        "lmdb": LMDBStore,
        "leveldb": LevelDBStore,
        "sqlite": SQLiteStore,
    }
    opener = openers[spec.backend]
    check_not_foreign(spec)
    try:
        return opener(spec)
    except CellError:
        raise
    except Exception as e:
        raise CellError(f"cannot open the {spec.backend} store {spec.path}: {e}") from e


class LMDBStore:
    """LMDB: one memory-mapped B+tree; readers never block, one writer at a time."""

    def __init__(self, spec: StoreSpec) -> None:
        lmdb = _import("lmdb")
        os.makedirs(spec.path, exist_ok=True)
        _mark_directory(spec.path)
        self._env = lmdb.open(
            spec.path, map_size=spec.map_size_bytes, sync=spec.sync, metasync=spec.sync
        )
        with self._env.begin() as txn:
            cursor = txn.cursor()
            first = cursor.key() if cursor.first() else None
            last = cursor.key() if cursor.last() else None
        try:
            _check_keys_ours(spec, first, last)
        except ForeignStoreError:
            self._env.close()
            raise

    def write(self, items: Sequence[tuple[bytes, bytes]]) -> None:
        with self._env.begin(write=True) as txn:
            put = txn.put
            for key, value in items:
                put(key, value)

    def read(self, keys: Sequence[bytes]) -> list[bytes | None]:
        with self._env.begin(buffers=False) as txn:
            get = txn.get
            return [get(key) for key in keys]

    def remove_ours(self) -> int:
        removed = 0
        with self._env.begin(write=True) as txn:
            cursor = txn.cursor()
            if cursor.set_range(PREFIX):
                while cursor.key().startswith(PREFIX):
                    cursor.delete()  # moves to the next record
                    removed += 1
        return removed

    def size_bytes(self) -> int:
        """The pages of the store's B+tree (branch, leaf and overflow) times the page size.

        Neither the file's length nor the last page number: pages that
        removed records freed stay allocated and are reused.
        """
        stat = self._env.stat()
        pages = stat["branch_pages"] + stat["leaf_pages"] + stat["overflow_pages"]
        return int(pages) * int(stat["psize"])

    def close(self) -> None:
        self._env.close()


class LevelDBStore:
    """LevelDB: a log-structured merge tree; one process at a time may open it."""

    def __init__(self, spec: StoreSpec) -> None:
        plyvel = _import("leveldb")
        self._path = spec.path
        self._sync = spec.sync
        os.makedirs(spec.path, exist_ok=True)
        _mark_directory(spec.path)
        try:
            self._db = plyvel.DB(spec.path, create_if_missing=True)
        except plyvel.IOError as e:
            if "lock" in str(e).lower() and "not a directory" not in str(e).lower():
                raise CellError(
                    "LevelDB can be opened by only one process at a time; measure it with -c 1"
                ) from None
            raise
        keys = [
            next(self._db.iterator(include_value=False, reverse=reverse), None)
            for reverse in (False, True)
        ]
        try:
            _check_keys_ours(spec, keys[0], keys[1])
        except ForeignStoreError:
            self._db.close()
            raise

    def write(self, items: Sequence[tuple[bytes, bytes]]) -> None:
        with self._db.write_batch(sync=self._sync) as batch:
            put = batch.put
            for key, value in items:
                put(key, value)

    def read(self, keys: Sequence[bytes]) -> list[bytes | None]:
        snapshot = self._db.snapshot()
        try:
            get = snapshot.get
            return [get(key) for key in keys]
        finally:
            snapshot.close()

    def remove_ours(self) -> int:
        keys = list(self._db.iterator(prefix=PREFIX, include_value=False))
        with self._db.write_batch(sync=self._sync) as batch:
            for key in keys:
                batch.delete(key)
        return len(keys)

    def size_bytes(self) -> int:
        """All files of the store's directory: tables and the write-ahead log."""
        return _directory_bytes(self._path)

    def close(self) -> None:
        self._db.close()


class SQLiteStore:
    """SQLite: one table (key BLOB PRIMARY KEY, value BLOB), WAL journal."""

    def __init__(self, spec: StoreSpec) -> None:
        directory = os.path.dirname(spec.path)
        if directory:
            os.makedirs(directory, exist_ok=True)
        new = not os.path.exists(spec.path)
        # Transactions are explicit (BEGIN ... COMMIT), as ZODB's are.
        self._conn = sqlite3.connect(
            spec.path, timeout=_SQLITE_BUSY_TIMEOUT_SECONDS, isolation_level=None
        )
        if new:
            self._conn.execute(f"PRAGMA application_id={SQLITE_APPLICATION_ID}")
        else:
            self._check_only_ours(spec)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute(f"PRAGMA synchronous={'FULL' if spec.sync else 'OFF'}")
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS kv (key BLOB PRIMARY KEY, value BLOB NOT NULL)"
        )

    def _check_only_ours(self, spec: StoreSpec) -> None:
        """Refuse a marked database that holds other tables, or keys outside PREFIX."""
        names = {row[0] for row in self._conn.execute("SELECT name FROM sqlite_master")}
        others = names - {"kv", "sqlite_autoindex_kv_1"}
        end = PREFIX[:-1] + bytes([PREFIX[-1] + 1])
        foreign = others or (
            "kv" in names
            and self._conn.execute(
                "SELECT 1 FROM kv WHERE key < ? OR key >= ? LIMIT 1", (PREFIX, end)
            ).fetchall()
        )
        if foreign:
            self._conn.close()
            raise _refuse(spec, "holds tables or keys zodbshootout did not write")

    def write(self, items: Sequence[tuple[bytes, bytes]]) -> None:
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.executemany(
                "INSERT INTO kv (key, value) VALUES (?, ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                items,
            )
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def read(self, keys: Sequence[bytes]) -> list[bytes | None]:
        conn = self._conn
        conn.execute("BEGIN")
        try:
            values = []
            for key in keys:
                row = conn.execute("SELECT value FROM kv WHERE key = ?", (key,)).fetchone()
                values.append(None if row is None else bytes(row[0]))
        finally:
            conn.execute("COMMIT")
        return values

    def remove_ours(self) -> int:
        # Every key under PREFIX sorts between PREFIX and PREFIX with its last byte + 1.
        end = PREFIX[:-1] + bytes([PREFIX[-1] + 1])
        with self._conn:
            cursor = self._conn.execute("DELETE FROM kv WHERE key >= ? AND key < ?", (PREFIX, end))
        return cursor.rowcount

    def size_bytes(self) -> int:
        """The database's pages in use (also those still in the WAL) times the page size.

        Free pages (left by removed records, reused later) are not counted.
        """
        page_count = self._conn.execute("PRAGMA page_count").fetchone()[0]
        page_count -= self._conn.execute("PRAGMA freelist_count").fetchone()[0]
        page_size = self._conn.execute("PRAGMA page_size").fetchone()[0]
        return int(page_count) * int(page_size)

    def close(self) -> None:
        self._conn.close()


def _directory_bytes(path: str) -> int:
    """The bytes of the files in *path*.

    LevelDB compacts in a thread of its own and deletes table files as it
    goes: a file listed and gone before its size is read holds nothing.
    """
    total = 0
    for entry in os.scandir(path):
        try:
            if entry.is_file(follow_symlinks=False):
                total += entry.stat(follow_symlinks=False).st_size
        except FileNotFoundError:
            continue
    return total
