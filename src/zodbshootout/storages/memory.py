"""MappingStorage and DemoStorage: data in one process's memory; no client cache."""

from __future__ import annotations

from typing import Any

from zodbshootout.storages.base import (
    ProcessLimit,
    SizeReading,
    StorageKind,
    zodb_config_factory,
)

_MODULES = ("ZODB.MappingStorage", "ZODB.DemoStorage")


class MemoryKind(StorageKind):
    name = "memory"

    def owns(self, storage: Any) -> bool:
        return type(storage).__module__ in _MODULES

    def owns_factory(self, factory: Any) -> bool:
        return zodb_config_factory(factory, "MappingStorage", "DemoStorage")

    def process_limit(self, factory: Any) -> ProcessLimit:
        what = "its data" if type(factory).__name__ == "MappingStorage" else "its changes"
        return ProcessLimit(
            0,
            f"{type(factory).__name__} keeps {what} in one process's memory, which worker "
            "processes can't see; measure it with --threads, or serve it through <embeddedzeo>",
        )

    def size(self, storage: Any, database_factory: Any) -> SizeReading:
        return SizeReading(
            None, "its data is in memory, not in a file or database whose size we can read"
        )


KIND = MemoryKind()
