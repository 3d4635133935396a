"""Open the databases of a configuration, and what the runner must know about them.

Walks a ``<zodb>`` section's storage factories to find embedded ZEO servers,
storages that one process must own alone, and persistent client caches that
need a name per worker; opens a database in a worker; and prepares the
tool's own objects in it (``populate``), refusing databases that hold data
that is not ours.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import transaction
from persistent.mapping import PersistentMapping
from ZConfig.matcher import SectionValue
from ZODB.config import BaseConfig

from zodbshootout.config import ConfigSource, LoadedConfig, parse_source
from zodbshootout.embedded_zeo import EmbeddedZEO
from zodbshootout.errors import CellError

#: The only root key the tool ever writes.
ROOT_KEY = "zodbshootout"

# Storages behind one process's lock: one worker process at a time can use them.
_LOCKED_BY_ONE_PROCESS = {
    "FileStorage": (
        "FileStorage can be opened by only one process at a time; "
        "measure it with -c 1 or --threads, or serve it through <embeddedzeo>"
    ),
}
# Storages whose data lives in one process's memory: worker processes never see it.
_IN_ONE_PROCESS_MEMORY = {
    "MappingStorage": (
        "MappingStorage keeps its data in one process's memory, which worker "
        "processes can't see; measure it with --threads, or serve it through <embeddedzeo>"
    ),
    "DemoStorage": (
        "DemoStorage keeps its changes in one process's memory, which worker "
        "processes can't see; measure it with --threads, or serve it through <embeddedzeo>"
    ),
}


class ForeignDataError(CellError):
    """The database holds data the tool did not create."""


def storage_factories(factory: Any) -> Iterator[Any]:
    """Yield the storage factories of a database or storage factory, outermost first.

    Does not descend into an ``<embeddedzeo>`` section's inner storage: that
    storage is opened by the server process, not by the workers.
    """
    section = factory.config.storage if hasattr(factory.config, "storage") else None
    todo = [section] if section is not None else [factory]
    while todo:
        current = todo.pop(0)
        yield current
        if isinstance(current, EmbeddedZEO):
            continue
        for value in vars(current.config).values():
            children = value if isinstance(value, list | tuple) else [value]
            todo.extend(child for child in children if _is_factory(child))


def _is_factory(value: Any) -> bool:
    """A section factory: ZODB's BaseConfig and look-alikes (RelStorage has its own)."""
    return isinstance(value, BaseConfig) or isinstance(getattr(value, "config", None), SectionValue)


def embedded_zeo_sections(database_factory: Any) -> list[EmbeddedZEO]:
    """The ``<embeddedzeo>`` sections of a database, in a stable order."""
    return [f for f in storage_factories(database_factory) if isinstance(f, EmbeddedZEO)]


def _zodb_storage_names(database_factory: Any) -> list[str]:
    return [
        type(factory).__name__
        for factory in storage_factories(database_factory)
        if type(factory).__module__ == "ZODB.config"
    ]


def single_process_reason(database_factory: Any) -> str | None:
    """Why several processes can't share this database, or None if they can."""
    for name in _zodb_storage_names(database_factory):
        reason = _IN_ONE_PROCESS_MEMORY.get(name) or _LOCKED_BY_ONE_PROCESS.get(name)
        if reason:
            return reason
    return None


def process_mode_reason(database_factory: Any, concurrency: int) -> str | None:
    """Why worker processes can't measure this database at *concurrency*, or None.

    A locked file works for one worker process at a time; data in memory
    works for none, since the writers' memory is gone before the readers start.
    """
    for name in _zodb_storage_names(database_factory):
        if name in _IN_ONE_PROCESS_MEMORY:
            return _IN_ONE_PROCESS_MEMORY[name]
        if name in _LOCKED_BY_ONE_PROCESS and concurrency > 1:
            return _LOCKED_BY_ONE_PROCESS[name]
    return None


def uses_relstorage_mysql(database_factory: Any) -> bool:
    """Whether the database is RelStorage on MySQL/MariaDB (see mariadb_compat)."""
    return any(
        type(f).__name__ == "MySQLAdapterFactory" for f in storage_factories(database_factory)
    )


def name_client_caches(database_factory: Any, label: str) -> None:
    """Give every persistent ZEO client cache a file of its own for this process.

    ZEO locks a persistent cache file, so two workers can't share one.  The
    writer and the reader with the same *label* (worker number) use the same
    file, which is what lets the warm phase find what the writer cached.
    """
    for factory in storage_factories(database_factory):
        config = factory.config
        if getattr(config, "client", None) and type(factory).__name__ in (
            "ZEOClient",
            "EmbeddedZEO",
        ):
            base = config.__dict__.setdefault("_zodbshootout_client_base", config.client)
            config.client = f"{base}-{label}"


def open_database(
    source: ConfigSource,
    name: str,
    server_addresses: list[tuple[str, int]],
    client_label: str,
    config: LoadedConfig | None = None,
    cache_trace: str | None = None,
) -> Any:
    """Open database *name* in this process, as a worker or the runner does.

    *server_addresses* are those of the database's embedded ZEO servers, in
    the order of :func:`embedded_zeo_sections`.  With *cache_trace*, the
    storage's client cache writes its trace there (see cachetrace).
    """
    from zodbshootout.drivers import describe_open_error

    if config is None:
        config = parse_source(source)
    factory = config.databases[name]
    for section, address in zip(embedded_zeo_sections(factory), server_addresses, strict=True):
        section.set_address(address)
    name_client_caches(factory, client_label)
    if cache_trace is not None:
        from zodbshootout.cachetrace import trace_on_open

        trace_on_open(factory, cache_trace)
    if uses_relstorage_mysql(factory):
        from zodbshootout import mariadb_compat

        mariadb_compat.install()
    try:
        return factory.open()
    except CellError:
        raise
    except Exception as e:
        raise CellError(describe_open_error(e)) from e


@contextlib.contextmanager
def connection_in_transaction(db: Any, commit: bool = True) -> Iterator[Any]:
    """A connection of its own in an explicit transaction, for untimed set-up work.

    The transaction commits when the block ends (or aborts, with
    ``commit=False``, for reads); an error aborts it; the connection closes.
    """
    tm = transaction.TransactionManager(explicit=True)
    conn = db.open(transaction_manager=tm)
    try:
        tm.begin()
        yield conn
        if commit:
            tm.commit()
        else:
            tm.abort()
    except BaseException:
        tm.abort()
        raise
    finally:
        conn.close()


def populate(db: Any, concurrency: int, container_factory: Any = PersistentMapping) -> None:
    """Give each of *concurrency* workers a fresh, empty container under ROOT_KEY.

    Refuses (ForeignDataError) a database whose root holds anything else.
    """
    with connection_in_transaction(db) as conn:
        root = conn.root()
        check_root_is_ours(root)
        top = root.get(ROOT_KEY)
        if top is None:
            top = root[ROOT_KEY] = PersistentMapping()
        for worker in list(top):
            # String keys (dbstate's filler, the benchmarks' shared objects)
            # are not workers' containers.
            if isinstance(worker, int) and worker >= concurrency:
                del top[worker]
        for worker in range(concurrency):
            top[worker] = container_factory()


def check_root_is_ours(root: Any) -> None:
    """Raise ForeignDataError if *root* holds any key but ROOT_KEY."""
    foreign = sorted(str(key) for key in root if key != ROOT_KEY)
    if foreign:
        shown = ", ".join(repr(k) for k in foreign[:3])
        more = f" and {len(foreign) - 3} more" if len(foreign) > 3 else ""
        raise ForeignDataError(
            f"its root holds data zodbshootout did not write ({shown}{more}); "
            "refusing to touch it: point the section at an empty database"
        )


def container_of(conn: Any, worker: int) -> Any:
    """The container of *worker* in an open connection."""
    return conn.root()[ROOT_KEY][worker]
