"""FileStorage: one file, locked by the one process that opens it; no client cache."""

from __future__ import annotations

import os
import stat
from typing import Any

from zodbshootout.errors import CellError
from zodbshootout.inputs import kind_of
from zodbshootout.storages.base import (
    ProcessLimit,
    SizeReading,
    StorageKind,
    zodb_config_factory,
)


class FileStorageKind(StorageKind):
    name = "filestorage"

    def owns(self, storage: Any) -> bool:
        return type(storage).__module__ == "ZODB.FileStorage.FileStorage"

    def owns_factory(self, factory: Any) -> bool:
        return zodb_config_factory(factory, "FileStorage")

    def process_limit(self, factory: Any) -> ProcessLimit:
        return ProcessLimit(
            1,
            "FileStorage can be opened by only one process at a time; "
            "measure it with -c 1 or --threads, or serve it through <embeddedzeo>",
        )

    def check_paths(self, factory: Any) -> None:
        """Refuse a path that is no regular file before FileStorage creates files beside it.

        FileStorage opens PATH.index, PATH.lock and PATH.tmp next to its
        file: on a device (or a FIFO, a socket, a directory) that would put
        files beside it, in /dev say, and then fail or hang.
        """
        path = getattr(factory.config, "path", None)
        if not path or not os.path.exists(path):
            return
        mode = os.stat(path).st_mode
        if not stat.S_ISREG(mode):
            raise CellError(
                f"the FileStorage path {path} is {kind_of(mode)}, not a regular file; "
                "name a new file or an existing FileStorage"
            )

    def pack_backups(self, factory: Any) -> list[str]:
        # Packing deletes PATH.old (the last backup), writes PATH.pack, renames
        # the previous file to PATH.old, and replaces BLOB_DIR.old likewise.
        config = factory.config
        path = getattr(config, "path", None)
        if not path:
            return []
        files = [path + ".old", path + ".pack"]
        blob_dir = getattr(config, "blob_dir", None)
        if blob_dir:
            files.append(blob_dir.rstrip(os.sep) + ".old")
        return files

    def describe(self, storage: Any, info: dict[str, Any]) -> None:
        info["history"] = "preserving"

    def size(self, storage: Any, database_factory: Any) -> SizeReading:
        return file_length(storage._file_name)


def file_length(path: str) -> SizeReading:
    """FileStorage only appends: its file's length is what it stores."""
    return SizeReading(os.path.getsize(path), method="FileStorage file length")


KIND = FileStorageKind()
