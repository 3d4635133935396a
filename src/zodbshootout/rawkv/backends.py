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
    module, package = BACKENDS[backend]
    try:
        return importlib.import_module(module)
    except ImportError:
        raise CellError(
            f"the {backend} floor needs the {package} package: pip install '.[rawkv]' "
            f"in the zodbshootout checkout (or pip install {package})"
        ) from None


def open_store(spec: StoreSpec) -> Store:
    """Open (creating if needed) the store *spec* names; problems are CellError."""
    openers: dict[str, Callable[[StoreSpec], Store]] = {
        "lmdb": LMDBStore,
        "leveldb": LevelDBStore,
        "sqlite": SQLiteStore,
    }
    opener = openers[spec.backend]
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
        self._env = lmdb.open(
            spec.path, map_size=spec.map_size_bytes, sync=spec.sync, metasync=spec.sync
        )

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
        try:
            self._db = plyvel.DB(spec.path, create_if_missing=True)
        except plyvel.IOError as e:
            if "lock" in str(e).lower():
                raise CellError(
                    "LevelDB can be opened by only one process at a time; measure it with -c 1"
                ) from None
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
        # Transactions are explicit (BEGIN ... COMMIT), as ZODB's are.
        self._conn = sqlite3.connect(
            spec.path, timeout=_SQLITE_BUSY_TIMEOUT_SECONDS, isolation_level=None
        )
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute(f"PRAGMA synchronous={'FULL' if spec.sync else 'OFF'}")
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS kv (key BLOB PRIMARY KEY, value BLOB NOT NULL)"
        )

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
    total = 0
    for entry in os.scandir(path):
        if entry.is_file(follow_symlinks=False):
            total += entry.stat(follow_symlinks=False).st_size
    return total
