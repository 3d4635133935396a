"""Storage kinds: everything zodbshootout does differently per kind of storage.

Each module of this package defines one :class:`~zodbshootout.storages.base.StorageKind`
(filestorage, memory, zeo, relstorage); :data:`KINDS` lists them and
:func:`kind_of` / :func:`kind_of_factory` find the one for an open storage or
a ZConfig storage factory.  The functions below answer questions about a
``<zodb>`` section's factories (which processes may share it, which client
caches need a name per worker) by asking each factory's kind.  A new kind is
one module and one line in :data:`KINDS` (see docs/adding-a-storage-kind.rst).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ZConfig.matcher import SectionValue
from ZODB.config import BaseConfig

from zodbshootout.errors import CellError
from zodbshootout.storages import filestorage, memory
from zodbshootout.storages.base import Driver, StorageKind
from zodbshootout.storages.base import count_requests as count_requests
from zodbshootout.storages.base import counting_requests as counting_requests
from zodbshootout.storages.relstorage import kind as relstorage
from zodbshootout.storages.zeo import kind as zeo
from zodbshootout.storages.zeo.section import EmbeddedZEO


class UnknownKind(StorageKind):
    """A storage no kind recognises: counted where possible, never silently cold-read."""

    name = "other"

    def clear_client_cache(self, storage: Any) -> None:
        raise CellError(
            f"zodbshootout doesn't know how to empty the caches of {type(storage).__name__}"
        )

    def storage_loads(self, storage: Any, loads: int) -> int | None:
        return None

    def round_trips(self, storage: Any) -> int | None:
        return None

    def thread_load_counter(
        self, storage: Any, worker: int, shared_client: bool, shared_oids: frozenset[bytes]
    ) -> None:
        return None


#: The known kinds, asked in this order.
KINDS: tuple[StorageKind, ...] = (
    filestorage.KIND,
    memory.KIND,
    zeo.KIND,
    relstorage.KIND,
)
UNKNOWN = UnknownKind()


def kind_of(storage: Any) -> StorageKind:
    """The kind of an open storage (UNKNOWN when none recognises it)."""
    return next((kind for kind in KINDS if kind.owns(storage)), UNKNOWN)


def kind_of_factory(factory: Any) -> StorageKind:
    """The kind a ZConfig storage factory opens (UNKNOWN when none recognises it)."""
    return next((kind for kind in KINDS if kind.owns_factory(factory)), UNKNOWN)


def storage_factories(factory: Any) -> Iterator[Any]:
    """Yield the storage factories of a database or storage factory, outermost first.

    Does not descend into an ``<embeddedzeo>`` section's inner storage: that
    storage is opened by the server process, not by the workers.
    """
    yield from _walk(factory, into_servers=False)


def _walk(factory: Any, into_servers: bool) -> Iterator[Any]:
    section = factory.config.storage if hasattr(factory.config, "storage") else None
    todo = [section] if section is not None else [factory]
    while todo:
        current = todo.pop(0)
        yield current
        if isinstance(current, EmbeddedZEO) and not into_servers:
            continue
        for value in vars(current.config).values():
            children = value if isinstance(value, list | tuple) else [value]
            todo.extend(child for child in children if _is_factory(child))


def _is_factory(value: Any) -> bool:
    """A section factory: ZODB's BaseConfig and look-alikes (RelStorage has its own)."""
    return isinstance(value, BaseConfig) or isinstance(getattr(value, "config", None), SectionValue)


def samples_servers(database_factory: Any) -> bool:
    """Whether a database's storages reach servers whose statistics can be sampled."""
    return any(kind_of_factory(f).samples_servers for f in storage_factories(database_factory))


def server_samplers(storage: Any) -> list[Any]:
    """The samplers of the servers an open storage reaches (see StorageKind.server_samplers)."""
    return kind_of(storage).server_samplers(storage)


def server_lost(error: BaseException) -> bool:
    """Whether some storage kind says *error* means its server is gone.

    So does an error raised while handling one (its cause or context): a
    library's clean-up after the lost connection (RelStorage's forced abort
    in ``tpc_finish``) may fail in a way of its own.
    """
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if any(kind.server_lost(current) for kind in KINDS):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


def retryable(error: BaseException) -> bool:
    """Whether some storage kind says a transaction that failed with *error* may be retried."""
    return any(kind.retryable(error) for kind in KINDS)


def embedded_zeo_sections(database_factory: Any) -> list[EmbeddedZEO]:
    """The ``<embeddedzeo>`` sections of a database, in a stable order."""
    return [f for f in storage_factories(database_factory) if isinstance(f, EmbeddedZEO)]


def single_process_reason(database_factory: Any) -> str | None:
    """Why several processes can't share this database, or None if they can."""
    for factory in storage_factories(database_factory):
        limit = kind_of_factory(factory).process_limit(factory)
        if limit is not None:
            return limit.reason
    return None


def process_mode_reason(database_factory: Any, concurrency: int) -> str | None:
    """Why worker processes can't measure this database at *concurrency*, or None.

    A locked file works for one worker process at a time; data in memory
    works for none, since the writers' memory is gone before the readers start.
    """
    for factory in storage_factories(database_factory):
        limit = kind_of_factory(factory).process_limit(factory)
        if limit is not None and concurrency > limit.max_processes:
            return limit.reason
    return None


def one_client_per_gevent_process(database_factory: Any) -> bool:
    """Whether a gevent process can hold only one client of this database."""
    return any(
        kind_of_factory(factory).one_client_per_gevent_process
        for factory in storage_factories(database_factory)
    )


def prepare_to_open(database_factory: Any, client_label: str) -> None:
    """Before a process opens the database: name its client caches, install patches."""
    for factory in storage_factories(database_factory):
        kind = kind_of_factory(factory)
        kind.check_paths(factory)
        kind.name_client_cache(factory, client_label)
        kind.prepare_process(factory)


def check_served_paths(database_factory: Any) -> None:
    """A CellError for a path an embedded ZEO server of the database would open unsafely.

    Asked before the server starts, so that it creates nothing beside a
    device any more than a worker would (see StorageKind.check_paths).
    """
    for factory in _walk(database_factory, into_servers=True):
        kind_of_factory(factory).check_paths(factory)


def before_repetition(database_factory: Any) -> None:
    """Untimed, in the runner's process, around populate (see StorageKind.before_repetition)."""
    for factory in storage_factories(database_factory):
        kind_of_factory(factory).before_repetition(factory)


def pack_backups(database_factory: Any) -> list[str]:
    """Files a pack would replace, embedded servers' storages included."""
    return [
        path
        for factory in _walk(database_factory, into_servers=True)
        for path in kind_of_factory(factory).pack_backups(factory)
    ]


def plan_notes(
    name: str, info: dict[str, Any], object_counts: list[int], concurrencies: list[int]
) -> list[str]:
    """Before measuring database *name* (described in *info*): what its server is not set
    up for at the run's largest levels, one note each (see StorageKind.plan_notes)."""
    return [
        note for kind in KINDS for note in kind.plan_notes(name, info, object_counts, concurrencies)
    ]


def failure_hint(
    error: str, info: dict[str, Any], object_count: int, concurrency: int
) -> str | None:
    """What to change after a stage failed with *error*, if a kind knows; else None."""
    return next(
        (
            hint
            for kind in KINDS
            if (hint := kind.failure_hint(error, info, object_count, concurrency))
        ),
        None,
    )


def preload_modules() -> list[str]:
    """The client libraries worker processes should start with (see StorageKind.preload_modules)."""
    return [module for kind in KINDS for module in kind.preload_modules]


def drivers() -> list[Driver]:
    """Every driver a kind's sections may name, with what installs it."""
    return [driver for kind in KINDS for driver in kind.drivers]
