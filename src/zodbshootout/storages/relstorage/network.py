"""The servers a RelStorage section reaches, for ``--rtt`` (see storages.network).

- ``<postgresql>``: the ``dsn``'s host (or ``hostaddr``) and port, with
  libpq's defaults (PGHOST, PGHOSTADDR, PGPORT, 5432).  No host, or a host
  that is a directory, is libpq's Unix socket.  The line is rewritten by
  appending ``host=... port=...``: libpq and RelStorage's pg8000 driver both
  take the last value of a repeated key, and the rest of the line (its
  ``$`` references, its password) stays as written.  A URI DSN is refused.
- ``<mysql>``: ``host`` and ``port`` (3306).  MySQLdb (libmysqlclient)
  takes ``localhost``, or no host, as its Unix socket; PyMySQL and the
  MySQL connectors connect over TCP to it.  ``unix_socket`` is a socket.
- ``<relstorage>``'s ``cache-servers``: memcached's ``host[:port]`` (11211),
  space-separated.  A path is a Unix socket.  ``replica-conf`` lists
  servers in another file, which --rtt does not rewrite: refused.

And how long a memcached server takes to answer (its round trip), which
the database's description records beside the database server's.
"""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Sequence
from typing import Any

from zodbshootout.config.keys import written_at
from zodbshootout.storages.base import median_latency_seconds
from zodbshootout.storages.network import Address, LineEdit, ServerLink, host_port, replacing

POSTGRESQL_PORT = 5432
MYSQL_PORT = 3306
MEMCACHED_PORT = 11211

#: Drivers that connect to "localhost" over TCP (MySQLdb takes it as the socket).
_TCP_LOCALHOST_DRIVERS = ("PyMySQL", "Connector")


def relstorage_links(factory: Any) -> list[ServerLink]:
    """The links of a RelStorage section: the storage's (memcached) or its adapter's."""
    kind = type(factory).__name__
    if kind == "RelStorageFactory":
        return _storage_links(factory.config)
    if kind == "PostgreSQLAdapterFactory":
        return [_postgresql_link(factory.config)]
    if kind == "MySQLAdapterFactory":
        return [_mysql_link(factory.config)]
    if kind == "OracleAdapterFactory":
        return [ServerLink("Oracle", unproxyable="zodbshootout can't rewrite an Oracle DSN")]
    return []  # SQLite: a file


def _storage_links(config: Any) -> list[ServerLink]:
    links = []
    for key in ("replica_conf", "ro_replica_conf"):
        if getattr(config, key, None):
            option = key.replace("_", "-")
            links.append(
                ServerLink(
                    "database replicas",
                    unproxyable=f"its {option} file names servers that --rtt does not rewrite",
                )
            )
    servers = config.cache_servers
    if isinstance(servers, str):
        servers = servers.split()
    if servers:
        links.append(_memcached_link(config, servers))
    return links


def _memcached_link(config: Any, servers: Sequence[str]) -> ServerLink:
    addresses = []
    for server in servers:
        address = memcached_address(str(server))
        if address is None:
            return ServerLink(
                "memcached",
                unproxyable=f"its cache server {server} is not a TCP host:port (a Unix socket?)",
            )
        addresses.append(address)
    lines = written_at(config, "cache-servers")
    if len(lines) != 1:
        return ServerLink("memcached", unproxyable="its cache-servers line could not be found")

    def render(proxied: Sequence[Address]) -> list[str]:
        return ["cache-servers " + " ".join(host_port(address) for address in proxied)]

    return ServerLink("memcached", tuple(addresses), redirect=replacing(lines, render))


_MEMCACHED_SERVER = re.compile(
    r"\[(?P<v6>[^\]]+)\](?::(?P<port6>\d+))?|(?P<host>[^:/\s]+)(?::(?P<port>\d+))?"
)


def memcached_latency_seconds(server: str) -> float | None:
    """The round trip of memcached's ``version`` command to *server*, median of a few.

    Over a connection of its own, in memcached's text protocol, which every
    server speaks: ``version`` touches none of the counters the run reads
    (gets, sets, flushes).  None for a server that is no TCP ``host[:port]``.
    """
    address = memcached_address(server)
    if address is None:
        return None
    with socket.create_connection(address, timeout=10) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        answers = sock.makefile("rb")

        def version() -> None:
            sock.sendall(b"version\r\n")
            answer = answers.readline()
            if not answer.startswith(b"VERSION"):
                raise ConnectionError(f"memcached at {server} answered {answer[:40]!r}")

        return median_latency_seconds(version)


def memcached_address(server: str) -> Address | None:
    match = _MEMCACHED_SERVER.fullmatch(server)
    if match is None:
        return None
    host = match["v6"] or match["host"]
    port = match["port6"] or match["port"]
    return host, int(port) if port else MEMCACHED_PORT


# -- PostgreSQL --


def _postgresql_link(config: Any) -> ServerLink:
    dsn = str(config.dsn)
    if re.match(r"postgres(ql)?://", dsn):
        return ServerLink(
            "PostgreSQL", unproxyable="its dsn is a URI: write it as key=value pairs for --rtt"
        )
    fields = parse_conninfo(dsn)
    address_key = "hostaddr" if fields.get("hostaddr") or os.environ.get("PGHOSTADDR") else "host"
    host = fields.get(address_key) or os.environ.get(f"PG{address_key.upper()}", "")
    port = fields.get("port") or os.environ.get("PGPORT") or str(POSTGRESQL_PORT)
    if not host or host.startswith("/") or host.startswith("@"):
        return ServerLink(
            "PostgreSQL",
            unproxyable=(
                f"it reaches PostgreSQL through a Unix socket ({host or 'no host in its dsn'}): "
                "write host=127.0.0.1 in the dsn"
            ),
        )
    if "," in host or "," in port:
        return ServerLink("PostgreSQL", unproxyable="its dsn names several hosts")
    lines = written_at(config, "dsn")
    if len(lines) != 1 or not port.isdigit():
        return ServerLink("PostgreSQL", unproxyable="its dsn line could not be rewritten")
    url, lineno = lines[0]

    def redirect(proxied: Sequence[Address]) -> list[LineEdit]:
        ((new_host, new_port),) = proxied
        return [LineEdit(url, lineno, f" {address_key}={new_host} port={new_port}", append=True)]

    return ServerLink("PostgreSQL", ((host, int(port)),), redirect=redirect)


_CONNINFO = re.compile(
    r"\s*(?P<key>[A-Za-z_]+)\s*=\s*(?:'(?P<quoted>(?:[^'\\]|\\.)*)'|(?P<bare>(?:[^\s'\\]|\\.)*))"
)


def parse_conninfo(dsn: str) -> dict[str, str]:
    """libpq's ``key=value`` connection string as a dict (the last of a repeated key wins).

    Values may be single-quoted; a backslash escapes the next character.
    Text that is no ``key=value`` pair ends the parse (libpq would refuse it).
    """
    fields: dict[str, str] = {}
    position = 0
    while position < len(dsn) and dsn[position:].strip():
        match = _CONNINFO.match(dsn, position)
        if match is None:
            break
        value = match["quoted"] if match["quoted"] is not None else match["bare"]
        fields[match["key"].lower()] = re.sub(r"\\(.)", r"\1", value)
        position = match.end()
    return fields


# -- MySQL --


def _mysql_link(config: Any) -> ServerLink:
    driver = str(getattr(config, "driver", "") or "auto")
    host = getattr(config, "host", None)
    if getattr(config, "unix_socket", None):
        return ServerLink(
            "MySQL",
            unproxyable=f"it reaches MySQL through the Unix socket {config.unix_socket}",
        )
    tcp_localhost = any(name in driver for name in _TCP_LOCALHOST_DRIVERS)
    if not host or (host == "localhost" and not tcp_localhost):
        if getattr(config, "read_default_file", None) and not host:
            why = "its host may come from its read_default_file"
        else:
            why = "its host is localhost, which MySQLdb reaches through its Unix socket"
        return ServerLink("MySQL", unproxyable=f"{why}: write host 127.0.0.1")
    host_lines = written_at(config, "host")
    port_lines = written_at(config, "port")
    if len(host_lines) != 1 or len(port_lines) > 1:
        return ServerLink("MySQL", unproxyable="its host line could not be found")
    port = int(config.port or MYSQL_PORT)

    def redirect(proxied: Sequence[Address]) -> list[LineEdit]:
        ((new_host, new_port),) = proxied
        url, lineno = host_lines[0]
        if port_lines:
            return [
                LineEdit(url, lineno, f"host {new_host}"),
                LineEdit(*port_lines[0], f"port {new_port}"),
            ]
        return [LineEdit(url, lineno, f"host {new_host}\nport {new_port}")]

    return ServerLink("MySQL", ((str(host), port),), redirect=redirect)
