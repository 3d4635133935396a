"""Room for a fill: where each database's files live and whether the disk holds N objects.

Checked before anything is written (``zodbshootout fill``): the estimate
counts every revision as kept (a history-preserving storage keeps them all
until a pack) plus the record and index overhead of each, so it errs on the
large side.  Databases whose data lives on a server (PostgreSQL, MySQL, a
ZEO server the tool did not start) have no local path: they are not checked,
and the command says so.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from typing import Any

from zodbshootout.maintenance.fill import FillShape

#: Bytes a stored object revision takes beyond its payload: the data record's
#: header and transaction share (FileStorage: 42 + about 25), the pickle's
#: class reference and state (about 70), an SQLite row's and index's share.
RECORD_OVERHEAD_BYTES = 256
#: Bytes per object of the tree that holds them (keys and references in the
#: buckets, each bucket written again when the garbage is unlinked).
TREE_BYTES_PER_OBJECT = 128

#: Section keys that name where a storage keeps its files.
_PATH_KEYS = ("path", "data_dir")


def estimated_bytes(objects: int, shape: FillShape) -> int:
    """What *objects* objects of *shape* take on disk at most (see the module doc)."""
    per_object = shape.revisions * (shape.object_size_bytes + RECORD_OVERHEAD_BYTES)
    return objects * (per_object + TREE_BYTES_PER_OBJECT)


def data_paths(database_factory: Any) -> list[str]:
    """The files or directories a database's storage writes locally (none for a server)."""
    found: list[str] = []
    _walk(database_factory.config, found)
    return found


def _walk(section: Any, found: list[str]) -> None:
    names = section.getSectionAttributes() if hasattr(section, "getSectionAttributes") else ()
    for name in names:
        value = getattr(section, name, None)
        if name in _PATH_KEYS and isinstance(value, str):
            found.append(value)
        inner = getattr(value, "config", value)
        if hasattr(inner, "getSectionAttributes"):
            _walk(inner, found)


def existing_parent(path: str) -> str:
    """The directory *path* is, or its nearest ancestor that exists (where it is created)."""
    path = os.path.abspath(path)
    while not os.path.isdir(path):
        path = os.path.dirname(path)
    return path


@dataclass(frozen=True)
class Shortfall:
    """A disk that can't hold what the fill would write there."""

    where: str
    needed_bytes: int
    free_bytes: int
    databases: tuple[str, ...]

    def message(self, objects: int, shape: FillShape) -> str:
        return (
            f"{objects:,} objects of {shape.object_size_bytes} bytes × {shape.revisions} "
            f"revisions in {', '.join(self.databases)} need about "
            f"{_gigabytes(self.needed_bytes)} on {self.where}, which has "
            f"{_gigabytes(self.free_bytes)} free; lower -n or free some space"
        )


def _gigabytes(size_bytes: int) -> str:
    return f"{size_bytes / 1e9:,.2f} GB"


def check_room(
    paths_by_database: dict[str, list[str]], objects: int, shape: FillShape
) -> tuple[Shortfall | None, list[str]]:
    """The first disk that can't hold the fill (databases on one disk add up), and the
    databases not checked (no local path)."""
    need = estimated_bytes(objects, shape)
    by_device: dict[int, tuple[str, list[str]]] = {}
    unchecked = []
    for name, paths in paths_by_database.items():
        if not paths:
            unchecked.append(name)
            continue
        where = existing_parent(paths[0])
        device = os.stat(where).st_dev
        by_device.setdefault(device, (where, []))[1].append(name)
    for where, names in by_device.values():
        free = shutil.disk_usage(where).free
        if need * len(names) > free:
            return Shortfall(where, need * len(names), free, tuple(names)), unchecked
    return None, unchecked
