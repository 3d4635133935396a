"""A database's network servers, and its configuration rewritten to reach them through proxies.

:func:`find_servers` asks each storage kind of a database's sections which
servers they reach (``StorageKind.network_links``) and where the text names
them; :func:`rewrite` writes those lines again with the proxies' addresses
and gives the embedded ZEO servers' proxied addresses, so that workers,
which rebuild the database from plain data, connect through the proxies
without knowing it.  Only the configuration file's own lines are
rewritten: a server named in an ``%include``'d file is refused, as is one
reached through a Unix socket.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from zodbshootout import storages
from zodbshootout.config.loader import ConfigSource, LoadedConfig
from zodbshootout.storages.network import Address, LineEdit, ServerLink

NOTHING_TO_DELAY = (
    "the ladder has nothing to delay: no database of the configuration talks to a server over TCP"
)


@dataclass(frozen=True)
class DatabaseServers:
    """The servers database *name* reaches, as its sections say.

    links: each section's link, outermost section first; an embedded ZEO
    server's has its runner-given address filled in.
    """

    name: str
    links: tuple[ServerLink, ...]

    @property
    def targets(self) -> list[Address]:
        """Every TCP server address, once each, in the configuration's order."""
        return list(dict.fromkeys(a for link in self.links for a in link.addresses))

    @property
    def servers(self) -> list[str]:
        """What the targets are, for messages: ``["PostgreSQL", "memcached"]``."""
        return list(dict.fromkeys(link.server for link in self.links if link.addresses))

    def refusal(self) -> str | None:
        """Why a proxy can't stand between this database and its servers, in one line."""
        for link in self.links:
            if link.unproxyable:
                return (
                    f"{self.name}: {link.unproxyable}; a TCP proxy can't delay it, "
                    "so --rtt can't measure this database"
                )
        return None


def find_servers(
    config: LoadedConfig, name: str, embedded: Sequence[Address] = ()
) -> DatabaseServers:
    """The servers of database *name*; *embedded*: its embedded ZEO servers' addresses.

    *embedded* is in the order of ``storages.embedded_zeo_sections`` (as the
    runner's ``EmbeddedServers.addresses`` gives them); without it an
    embedded link has no address yet.
    """
    links = []
    remaining = list(embedded)
    for factory in storages.storage_factories(config.databases[name]):
        for link in storages.kind_of_factory(factory).network_links(factory):
            if link.embedded and remaining:
                link = dataclasses.replace(link, addresses=(remaining.pop(0),))
            links.append(_checked(link, config.source))
    return DatabaseServers(name, tuple(links))


def _checked(link: ServerLink, source: ConfigSource) -> ServerLink:
    """*link*, unproxyable if its lines are in another file than the configuration's own."""
    if link.redirect is None or link.unproxyable:
        return link
    for edit in link.redirect(link.addresses):
        if edit.url != source.url:
            where = f"{edit.url.removeprefix('file://')}:{edit.lineno}"
            return dataclasses.replace(
                link,
                addresses=(),
                redirect=None,
                unproxyable=(
                    f"its {link.server} is named in an included file ({where}), which --rtt "
                    "does not rewrite: move that section into the configuration file"
                ),
            )
    return link


@dataclass(frozen=True)
class ProxiedSource:
    """What workers open instead: the rewritten text, and the embedded servers' addresses."""

    source: ConfigSource
    embedded: list[Address]


def rewrite(
    source: ConfigSource, servers: DatabaseServers, routes: Mapping[Address, Address]
) -> ProxiedSource:
    """*source* with every server of *servers* reached at ``routes[address]`` instead.

    *routes* maps each of ``servers.targets`` to its proxy's address; a
    ValueError for a refused database (see :meth:`DatabaseServers.refusal`).
    """
    refusal = servers.refusal()
    if refusal:
        raise ValueError(refusal)
    edits: list[LineEdit] = []
    embedded = []
    for link in servers.links:
        proxied = [routes[address] for address in link.addresses]
        if link.embedded:
            embedded += proxied
        elif link.redirect is not None:
            edits += link.redirect(proxied)
    return ProxiedSource(
        dataclasses.replace(source, text=apply_edits(source.text, edits)), embedded
    )


def apply_edits(text: str, edits: Sequence[LineEdit]) -> str:
    """*text* with each edit's line replaced (or appended to), keeping its indentation.

    Lines are counted as ZConfig counts them: ended by a newline only.
    """
    lines = text.split("\n")
    by_line: dict[int, LineEdit] = {}
    for edit in edits:
        if edit.lineno in by_line or not 0 < edit.lineno <= len(lines):
            raise ValueError(f"line {edit.lineno} can't be rewritten twice or is not in the text")
        by_line[edit.lineno] = edit
    for lineno, edit in by_line.items():
        line = lines[lineno - 1]
        body = line.rstrip("\r")
        ending = line[len(body) :]
        if edit.append:
            lines[lineno - 1] = body.rstrip() + edit.text + ending
            continue
        indent = body[: len(body) - len(body.lstrip())]
        lines[lineno - 1] = "\n".join(indent + part + ending for part in edit.text.split("\n"))
    return "\n".join(lines)
