"""The tool never changes a database that holds data it did not write.

Foreign data is written with plain ZODB, the files are hashed, the tool is
pointed at them, and the files must be byte-for-byte what they were, with
the data still readable, after it refuses them.
"""

from __future__ import annotations

import hashlib
import pathlib

import transaction
import ZODB.config
from persistent.mapping import PersistentMapping

from conftest import run_cli

FOREIGN = {"alice": "x" * 200, "bob": list(range(50))}


def filestorage_section(path: pathlib.Path) -> str:
    return f"<filestorage>\n path {path}\n</filestorage>"


def sqlite_section(directory: pathlib.Path) -> str:
    return f"<relstorage>\n <sqlite3>\n  data-dir {directory}\n </sqlite3>\n</relstorage>"


def database_text(name: str, storage: str) -> str:
    return f"<zodb {name}>\n{storage}\n</zodb>\n"


def write_foreign_data(storage: str) -> None:
    """Give the database a root that some application, not zodbshootout, wrote."""
    db = ZODB.config.databaseFromString("%import relstorage\n" + database_text("app", storage))
    try:
        with db.transaction() as conn:
            conn.root()["customers"] = PersistentMapping(FOREIGN)
    finally:
        db.close()
    transaction.abort()


def read_foreign_data(storage: str) -> dict:
    db = ZODB.config.databaseFromString("%import relstorage\n" + database_text("app", storage))
    try:
        with db.transaction() as conn:
            root = conn.root()
            return {key: dict(value) for key, value in root.items()}
    finally:
        db.close()


def digests(*paths: pathlib.Path) -> dict[str, str]:
    """SHA-256 of every file at or below *paths* (the database's own files)."""
    files = []
    for path in paths:
        files.extend(sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path])
    return {str(f): hashlib.sha256(f.read_bytes()).hexdigest() for f in files}


def test_foreign_filestorage_and_sqlite_are_refused_and_left_intact(tmp_path, write_config):
    fs_path = tmp_path / "app.fs"
    sqlite_dir = tmp_path / "app-sqlite"
    write_foreign_data(filestorage_section(fs_path))
    write_foreign_data(sqlite_section(sqlite_dir))
    before = digests(fs_path, sqlite_dir)
    assert len(before) >= 2

    config = write_config(
        database_text("appfs", filestorage_section(fs_path))
        + database_text("appsql", sqlite_section(sqlite_dir))
    )
    done = run_cli(config, "-n", "10", "-c", "1", "-r", "1", "-q")

    # Nothing could run: exit 2, one line per refused database saying what to do.
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 2, done.stderr
    for name, line in zip(("appfs", "appsql"), lines, strict=True):
        assert line.startswith(f"zodbshootout: error: {name}: ")
        assert "'customers'" in line
        assert f"--zap {name}" in line
    # Byte for byte the same files, and the application's data is all there.
    assert digests(fs_path, sqlite_dir) == before
    assert read_foreign_data(filestorage_section(fs_path)) == {"customers": FOREIGN}
    assert read_foreign_data(sqlite_section(sqlite_dir)) == {"customers": FOREIGN}


def test_a_refused_database_does_not_stop_the_others(tmp_path, write_config):
    fs_path = tmp_path / "app.fs"
    write_foreign_data(filestorage_section(fs_path))
    before = digests(fs_path)
    config = write_config(
        database_text("app", filestorage_section(fs_path))
        + database_text("scratch", sqlite_section(tmp_path / "scratch"))
    )
    done = run_cli(config, "-n", "10", "-c", "1", "-r", "1", "-q", "add", "cold")

    assert done.returncode == 1, f"{done.stdout}\n{done.stderr}"
    measured = [line for line in done.stdout.splitlines() if line.startswith('"Add')]
    assert measured
    assert measured[0].split(",")[1].strip().startswith("n/a[")
    assert measured[0].split(",")[2].strip().isdigit()
    assert "app (concurrency 1): its root holds data zodbshootout did not write" in done.stdout
    assert digests(fs_path) == before


def test_the_tool_keeps_to_its_own_root_key(tmp_path, write_config):
    """A database the tool created holds nothing but its key, and a second run reuses it."""
    sqlite_dir = tmp_path / "own"
    config = write_config(database_text("own", sqlite_section(sqlite_dir)))
    for _ in range(2):
        done = run_cli(config, "-n", "10", "-c", "1", "-r", "1", "-q", "add")
        assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    db = ZODB.config.databaseFromString(
        "%import relstorage\n" + database_text("own", sqlite_section(sqlite_dir))
    )
    try:
        with db.transaction() as conn:
            assert list(conn.root().keys()) == ["zodbshootout"]
    finally:
        db.close()
