"""A raw store the tool did not create is refused, one line, exit 2, and left byte-identical.

The same guard as for ZODB databases' foreign data: a user's SQLite
database, LMDB environment or LevelDB directory named in a ``<rawkv>``
section is never opened for writing (no table added, no WAL switched on,
no key written or removed).  A store the tool created carries its mark
(SQLite's application id, a marker file in a directory store) and is reused.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import pathlib
import sqlite3

import pytest

from zodbshootout.cli import entry


def run_main(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = entry.main(list(argv))
    return code, out.getvalue(), err.getvalue()


def checksum(path: pathlib.Path) -> str:
    """Names, kinds and bytes of everything at *path*."""
    digest = hashlib.sha256()
    paths = sorted(path.rglob("*")) if path.is_dir() else [path]
    for item in paths:
        digest.update(str(item.relative_to(path.parent)).encode())
        if item.is_file() and not item.is_fifo():
            digest.update(item.read_bytes())
    return digest.hexdigest()


def sqlite_notes(path: pathlib.Path) -> None:
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("CREATE TABLE notes (body TEXT)")
        conn.execute("INSERT INTO notes VALUES ('mine')")


def sqlite_own_kv(path: pathlib.Path) -> None:
    """The tool's own table name and schema, and a key under its prefix: still not its."""
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("CREATE TABLE kv (key BLOB PRIMARY KEY, value BLOB NOT NULL)")
        conn.execute("INSERT INTO kv VALUES (?, ?)", (b"zodbshootout/0/0000000000", b"mine"))


def sqlite_other_schema(path: pathlib.Path) -> None:
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("CREATE TABLE kv (k TEXT, v TEXT, owner TEXT)")


def lmdb_environment(path: pathlib.Path) -> None:
    lmdb = pytest.importorskip("lmdb")
    env = lmdb.open(str(path), map_size=1 << 20)
    with env.begin(write=True) as txn:
        txn.put(b"user-key", b"mine")
    env.close()


def leveldb_directory(path: pathlib.Path) -> None:
    plyvel = pytest.importorskip("plyvel")
    db = plyvel.DB(str(path), create_if_missing=True)
    db.put(b"user-key", b"mine")
    db.close()


def regular_file(path: pathlib.Path) -> None:
    path.write_bytes(b"my notes\n")


CASES = [
    ("sqlite", sqlite_notes, "is a SQLite database zodbshootout did not create"),
    ("sqlite", sqlite_own_kv, "is a SQLite database zodbshootout did not create"),
    ("sqlite", sqlite_other_schema, "is a SQLite database zodbshootout did not create"),
    ("sqlite", regular_file, "exists and is not a SQLite database zodbshootout created"),
    ("sqlite", os.mkfifo, "is not a regular file (a SQLite store is one file)"),
    ("lmdb", lmdb_environment, "is a directory zodbshootout did not create"),
    ("lmdb", regular_file, "is not a directory (a lmdb store is a directory)"),
    ("leveldb", leveldb_directory, "is a directory zodbshootout did not create"),
    ("leveldb", regular_file, "is not a directory (a leveldb store is a directory)"),
]


@pytest.mark.parametrize(("backend", "make", "says"), CASES)
def test_a_store_the_tool_did_not_create_is_refused_untouched(tmp_path, backend, make, says):
    store = tmp_path / "theirs"
    make(store)
    before = checksum(store)
    config = tmp_path / "floor.conf"
    config.write_text(f"<rawkv floor>\n  backend {backend}\n  path {store}\n</rawkv>\n")
    code, _stdout, stderr = run_main(str(config), "-n", "10", "-c", "1", "-r", "1", "-q")
    assert code == 2, stderr
    assert stderr.startswith(f"zodbshootout: error: floor: {store} {says}; refusing to touch it")
    assert stderr.count("\n") == 1, stderr
    assert checksum(store) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["floor.conf", "theirs"]


@pytest.mark.parametrize("backend", ["sqlite", "lmdb", "leveldb"])
def test_a_store_the_tool_created_is_reused(tmp_path, backend):
    pytest.importorskip({"sqlite": "sqlite3", "lmdb": "lmdb", "leveldb": "plyvel"}[backend])
    config = tmp_path / "floor.conf"
    store = tmp_path / "ours"
    config.write_text(f"<rawkv floor>\n  backend {backend}\n  path {store}\n</rawkv>\n")
    for _ in range(2):
        code, stdout, stderr = run_main(str(config), "-n", "10", "-c", "1", "-r", "1", "-q", "add")
        assert code == 0, stdout + stderr
