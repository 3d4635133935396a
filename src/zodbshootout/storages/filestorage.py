"""FileStorage: one file, locked by the one process that opens it; no client cache."""

from __future__ import annotations

from typing import Any

from zodbshootout.storages.base import ProcessLimit, StorageKind, zodb_config_factory


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

    def pack_backups(self, factory: Any) -> list[str]:
        # Packing renames the previous file to PATH.old, replacing the last backup.
        path = getattr(factory.config, "path", None)
        return [path + ".old"] if path else []

    def describe(self, storage: Any, info: dict[str, Any]) -> None:
        info["history"] = "preserving"


KIND = FileStorageKind()
