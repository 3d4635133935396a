"""The servers a run starts for its databases' embedded sections, launched together.

Today only ``<embeddedzeo>`` sections have one (a ZEO server process, see
storages.zeo.server); the runners ask this module, never the family's.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from zodbshootout.config.loader import LoadedConfig
from zodbshootout.storages import check_served_paths, embedded_zeo_sections
from zodbshootout.storages.zeo.server import ServerRequest, ZEOServerProcess


class EmbeddedServers:
    """The embedded ZEO servers of several databases, launched together.

    Each server spends about half a second importing ZEO and opening its
    storage; launched together they do that side by side, and the runner
    waits for each database's servers only when it sets that database up.
    """

    def __init__(self, config: LoadedConfig, names: list[str]) -> None:
        self._servers: dict[str, list[ZEOServerProcess]] = {}
        self._launch_errors: dict[str, Exception] = {}
        for name in names:
            servers = self._servers[name] = []
            try:
                if embedded_zeo_sections(config.databases[name]):
                    check_served_paths(config.databases[name])
                for index in range(len(embedded_zeo_sections(config.databases[name]))):
                    servers.append(ZEOServerProcess(ServerRequest(config.source, name, index)))
            except Exception as e:  # e.g. OSError: too many open files
                self._launch_errors[name] = e

    def launched(self) -> list[ZEOServerProcess]:
        """Every server launched, in the databases' order."""
        return [server for servers in self._servers.values() for server in servers]

    def addresses(self, name: str) -> list[tuple[str, int]]:
        """Wait for database *name*'s servers; their addresses, or why one did not start."""
        if name in self._launch_errors:
            raise self._launch_errors[name]
        return [server.address for server in self._servers[name]]

    def pids(self, name: str) -> list[int]:
        """The process ids of database *name*'s servers (none for a database without)."""
        return [server.pid for server in self._servers.get(name, [])]

    def stop(self) -> None:
        """Stop every server: all are asked first, then each is waited for."""
        everyone = self.launched()
        for server in everyone:
            server.ask_to_stop()
        for server in everyone:
            server.stop()


@contextlib.contextmanager
def embedded_servers(config: LoadedConfig, names: list[str]) -> Iterator[EmbeddedServers]:
    """Launch the embedded ZEO servers of databases *names*; always stop them at the end."""
    servers = EmbeddedServers(config, names)
    try:
        yield servers
    finally:
        servers.stop()
