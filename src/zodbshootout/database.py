"""Open a database of a configuration, and prepare the tool's own objects in it.

Opens a database in a worker (or the runner) after its storage kinds have
named their client caches and patched what they need (zodbshootout.storages),
and prepares the tool's own objects in it (``populate``), refusing databases
that hold data that is not ours.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import transaction
from persistent.mapping import PersistentMapping

from zodbshootout import storages
from zodbshootout.cache_sizing import CacheWorkload, size_caches
from zodbshootout.config import ConfigSource, LoadedConfig, parse_source
from zodbshootout.errors import CellError

#: The only root key the tool ever writes.
ROOT_KEY = "zodbshootout"


class ForeignDataError(CellError):
    """The database holds data the tool did not create."""


def open_database(
    source: ConfigSource,
    name: str,
    server_addresses: list[tuple[str, int]],
    client_label: str,
    config: LoadedConfig | None = None,
    workload: CacheWorkload | None = None,
    cache_trace: str | None = None,
) -> Any:
    """Open database *name* in this process, as a worker or the runner does.

    *server_addresses* are those of the database's embedded ZEO servers, in
    the order of :func:`zodbshootout.storages.embedded_zeo_sections`.  With
    *workload*, the caches are first sized for it (see cache_sizing).  With
    *cache_trace*, the storage's client cache writes its trace there (see
    zodbshootout.cachetrace).
    """
    from zodbshootout.drivers import describe_open_error

    if config is None:
        config = parse_source(source)
    factory = config.databases[name]
    sections = storages.embedded_zeo_sections(factory)
    for section, address in zip(sections, server_addresses, strict=True):
        section.set_address(address)
    storages.prepare_to_open(factory, client_label)
    if workload is not None:
        size_caches(factory, workload)
    if cache_trace is not None:
        from zodbshootout.cachetrace import trace_on_open

        trace_on_open(factory, cache_trace)
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
