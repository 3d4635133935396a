"""Open a database of a configuration.

Opens a database in a worker (or the runner) after its storage kinds have
named their client caches and patched what they need (zodbshootout.storages).
The tool's own objects in it are :mod:`zodbshootout.workload.root`'s.
"""

from __future__ import annotations

from typing import Any

from zodbshootout import storages
from zodbshootout.config.loader import ConfigSource, LoadedConfig, parse_source
from zodbshootout.database.cache_sizing import CacheWorkload, size_caches
from zodbshootout.errors import CellError


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
    zodbshootout.probes.cache_trace).
    """
    from zodbshootout.database.drivers import describe_open_error

    factory = _prepared(source, name, server_addresses, client_label, config)
    if workload is not None:
        size_caches(factory, workload)
    if cache_trace is not None:
        from zodbshootout.probes.cache_trace import trace_on_open

        trace_on_open(factory, cache_trace)
    try:
        return factory.open()
    except CellError:
        raise
    except Exception as e:
        raise CellError(describe_open_error(e)) from e


def _prepared(
    source: ConfigSource,
    name: str,
    server_addresses: list[tuple[str, int]],
    client_label: str,
    config: LoadedConfig | None,
) -> Any:
    """Database *name*'s factory, its embedded servers' addresses set, ready to open."""
    if config is None:
        config = parse_source(source)
    factory = config.databases[name]
    sections = storages.embedded_zeo_sections(factory)
    for section, address in zip(sections, server_addresses, strict=True):
        section.set_address(address)
    storages.prepare_to_open(factory, client_label)
    return factory


def open_storage(
    source: ConfigSource, name: str, server_addresses: list[tuple[str, int]], client_label: str
) -> Any:
    """Database *name*'s storage alone, as an IMVCCStorage (no ``ZODB.DB``: a replay's).

    A storage that is not one (FileStorage, ZEO) is adapted as ``ZODB.DB``
    adapts it; closing the result closes the storage.
    """
    from ZODB.interfaces import IMVCCStorage
    from ZODB.mvccadapter import MVCCAdapter

    from zodbshootout.database.drivers import describe_open_error

    factory = _prepared(source, name, server_addresses, client_label, None)
    try:
        storage = factory.config.storage.open()
    except CellError:
        raise
    except Exception as e:
        raise CellError(describe_open_error(e)) from e
    return storage if IMVCCStorage.providedBy(storage) else MVCCAdapter(storage)
