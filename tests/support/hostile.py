"""Hostile inputs shared by the tests and benchmarks/adversarial.py.

The tests draw from these with hypothesis or name them one by one; the
adversarial script draws from them with a seeded random generator and throws
them at the real command line.  Nothing here runs the tool.

- result files: a real saved document, every path into it, and values that
  do not belong there;
- configurations and options: the words a generated configuration or
  command line is made of;
- raw stores: a user's SQLite database, LMDB environment or LevelDB
  directory, which a ``<rawkv>`` section must leave byte-identical.

:func:`base_document` needs ``tests/unit`` on ``sys.path`` (for sample_run),
as it is in the unit tests and in the script.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import os
import pathlib
import sqlite3
import string
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

# --- result files ---------------------------------------------------------------------

SURROGATE = "\ud800"

#: Values that do not belong anywhere in a result file, or only in some places.
HOSTILE_VALUES: list[Any] = [
    0,
    -1,
    2**63,
    10**40,
    1e308,
    -0.0,
    True,
    None,
    "",
    "x",
    SURROGATE,
    [],
    {},
    [1, "x"],
]


def base_document() -> dict:
    """A real saved run (sample_run) with every metadata field the renderers read."""
    from sample_run import sample_result

    from zodbshootout.results import file as resultfile

    document = resultfile.to_document(sample_result())
    document["metadata"].update(
        label="base",
        environment={"python": {"version": "3.11"}, "cpu_count": 2},
        stopping_rule={"min_repetitions": 3, "precision": None},
        databases={"postgresql": {"kind": "relstorage", "size": {"method": "x"}}},
        load_average={"postgresql": {"before": 0.5, "after": 0.7}},
        barrier_skew=[
            {
                "database": "postgresql",
                "concurrency": 2,
                "object_count": 1000,
                "phase": "add",
                "repetition": 1,
                "skew_seconds": 0.001,
            }
        ],
    )
    return document


def set_path(document: dict, path: tuple, value: object) -> None:
    """Put *value* at *path* (keys and indexes) inside *document*."""
    node: Any = document
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value


def paths(node: object, prefix: tuple = ()) -> Iterator[tuple]:
    """Every path into *node* (the first two items of each list)."""
    if prefix:
        yield prefix
    if isinstance(node, dict):
        for key, value in node.items():
            yield from paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node[:2]):
            yield from paths(value, (*prefix, index))


# --- options and configurations -------------------------------------------------------

#: Options that take a number, and text that may or may not be one.
NUMBER_OPTIONS = ["-n", "-c", "--object-counts", "--concurrency"]
COUNT_OPTIONS = ["-r", "-s", "--timeout", "--repetitions"]
NUMBERISH_ALPHABET = string.digits + ",.-+ eEx"
AGGREGATES = ["mean", "min", "max", "", "MEAN"]
PHASE_WORDS = ["add", "cold", "hot", "chilly", "ADD", "warm", ""]

SECTION_NAMES = ["a", "b", "db-1", "x y", "", "<", "zodb"]
CONFIG_KEY_LINES = [
    "path $(ZODBSHOOTOUT_DATA)/x.fs",
    "cache-size 100",
    "cache-size lots",
    "data-dir /tmp/never",
    "dsn host=h password=p",
    "passwd secret",
    "colour blue",
    "pool-size -1",
    "%define X 1",
    "%define",
    "path $X",
    "path $(UNSET_VARIABLE_Q)",
    "$",
    "%",
    "<",
    ">",
    "</>",
    "<>",
    "%import ZODB",
    "%import relstorage",
]
SECTION_TYPES = [
    "zodb",
    "mappingstorage",
    "filestorage",
    "relstorage",
    "sqlite3",
    "postgresql",
    "embeddedzeo",
    "demostorage",
    "nosuchtype",
    "zeoclient",
    "",
]


# --- raw stores the tool did not create ----------------------------------------------


def checksum(path: pathlib.Path) -> str:
    """Names, kinds and bytes of everything at *path*."""
    digest = hashlib.sha256()
    found = sorted(path.rglob("*")) if path.is_dir() else [path]
    for item in found:
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
    lmdb = importlib.import_module("lmdb")
    env = lmdb.open(str(path), map_size=1 << 20)
    with env.begin(write=True) as txn:
        txn.put(b"user-key", b"mine")
    env.close()


def leveldb_directory(path: pathlib.Path) -> None:
    plyvel = importlib.import_module("plyvel")
    db = plyvel.DB(str(path), create_if_missing=True)
    db.put(b"user-key", b"mine")
    db.close()


def regular_file(path: pathlib.Path) -> None:
    path.write_bytes(b"my notes\n")


class ForeignStore(NamedTuple):
    """A store of *backend* that *make* writes, and what the refusal says about it."""

    backend: str
    make: Callable[[pathlib.Path], None]
    says: str
    #: The module *make* needs (the backend's binding), or None.
    needs: str | None = None


FOREIGN_STORES = [
    ForeignStore("sqlite", sqlite_notes, "is a SQLite database zodbshootout did not create"),
    ForeignStore("sqlite", sqlite_own_kv, "is a SQLite database zodbshootout did not create"),
    ForeignStore("sqlite", sqlite_other_schema, "is a SQLite database zodbshootout did not create"),
    ForeignStore(
        "sqlite", regular_file, "exists and is not a SQLite database zodbshootout created"
    ),
    ForeignStore("sqlite", os.mkfifo, "is not a regular file (a SQLite store is one file)"),
    ForeignStore("lmdb", lmdb_environment, "is a directory zodbshootout did not create", "lmdb"),
    ForeignStore("lmdb", regular_file, "is not a directory (a lmdb store is a directory)"),
    ForeignStore(
        "leveldb", leveldb_directory, "is a directory zodbshootout did not create", "plyvel"
    ),
    ForeignStore("leveldb", regular_file, "is not a directory (a leveldb store is a directory)"),
]
