"""The ``<rawkv NAME>`` section type: a raw key-value store measured as a column.

It implements ZODB's ``ZODB.database`` abstract type, so rawkv sections sit
among the ``<zodb>`` sections in file order and their names are columns like
theirs.  Parsing imports nothing: the store's library is imported by the
worker that opens it, and a missing one is a cell's footnote.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from zodbshootout.config.loader import DATA_DIR_VARIABLE


def _package_version(package: str) -> Callable[[], str | None]:
    def version() -> str | None:
        import importlib.metadata  # only when a floor is described: parsing imports nothing

        try:
            return importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            return None

    return version


def _sqlite_version() -> str | None:
    import sqlite3  # the library's version, not the module's

    return sqlite3.sqlite_version


@dataclass(frozen=True)
class Backend:
    """A raw store the tool measures: what it needs, and what the tool must know of it."""

    name: str  # the section's ``backend`` value
    label: str  # its name in sentences
    module: str  # the Python module it needs
    package: str  # the package that provides it
    #: What its size readings count (see rawkv.backends).
    size_method: str
    #: The library's version, for the result file; None if not installed.
    library_version: Callable[[], str | None]
    #: Only one process at a time can open it (a floor then needs -c 1).
    one_process: bool = False


#: The backends by name.
BACKENDS: dict[str, Backend] = {
    backend.name: backend
    for backend in (
        Backend(
            "lmdb",
            "LMDB",
            "lmdb",
            "lmdb",
            "LMDB B+tree pages in use (branch, leaf, overflow) × page size",
            _package_version("lmdb"),
        ),
        Backend(
            "leveldb",
            "LevelDB",
            "plyvel",
            "plyvel",
            "LevelDB directory: tables and write-ahead log",
            _package_version("plyvel"),
            one_process=True,
        ),
        Backend(
            "sqlite",
            "SQLite",
            "sqlite3",
            "the Python standard library",
            "SQLite pages in use × page size",
            _sqlite_version,
        ),
    )
}


def backend_name(value: str) -> str:
    """ZConfig datatype of the ``backend`` key: one of BACKENDS."""
    name = value.strip().lower()
    if name not in BACKENDS:
        raise ValueError(f"unknown rawkv backend {value!r}; choose from {', '.join(BACKENDS)}")
    return name


@dataclass(frozen=True)
class StoreSpec:
    """What a worker needs to open the store; plain data, crosses process boundaries."""

    name: str
    backend: str
    path: str
    sync: bool
    map_size_bytes: int


class RawKVSection:
    """Factory of a ``<rawkv>`` section (ZConfig calls it with the section's values)."""

    def __init__(self, config: Any) -> None:
        self.config = config
        self.name: str = config.getSectionName() or ""

    @property
    def backend(self) -> str:
        return str(self.config.backend)

    def spec(self) -> StoreSpec:
        """The store's settings; a relative or missing path is under $(ZODBSHOOTOUT_DATA)."""
        path = self.config.path
        if not path:
            safe = "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in self.name)
            path = f"rawkv-{self.backend}-{safe}"
        if not os.path.isabs(path):
            path = os.path.join(os.environ.get(DATA_DIR_VARIABLE) or os.getcwd(), path)
        return StoreSpec(
            name=self.name,
            backend=self.backend,
            path=path,
            sync=bool(self.config.sync),
            map_size_bytes=int(self.config.map_size),
        )

    def open(self) -> Any:
        """A rawkv section is not a ZODB database; code that opens databases must ask first."""
        raise TypeError(f"<rawkv {self.name}> is a raw key-value floor, not a ZODB database")


def is_rawkv(factory: Any) -> bool:
    """Whether a configuration's database entry is a ``<rawkv>`` floor."""
    return isinstance(factory, RawKVSection)
