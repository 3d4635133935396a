"""The ZEO servers a client section reaches, for ``--rtt`` (see storages.network).

``<zeoclient>`` and ``<clientstorage>`` name theirs on ``server`` lines,
one address a line (several: the client picks one that answers); each
line is written again with the proxy's address.  An ``<embeddedzeo>``
section's server is the tool's own, started by the runner on 127.0.0.1: its
address is not in the text, so its link is marked *embedded* and the
runner gives the workers the proxy's address instead of the server's.
"""

from __future__ import annotations

import socket
from collections.abc import Sequence
from typing import Any

from zodbshootout.config.keys import written_at
from zodbshootout.storages.network import Address, ServerLink, host_port, replacing
from zodbshootout.storages.zeo.section import EmbeddedZEO

SERVER = "ZEO server"


def zeo_links(factory: Any) -> list[ServerLink]:
    """The link of a ZEO client section (embedded or not) to its server(s)."""
    if isinstance(factory, EmbeddedZEO):
        return [ServerLink(SERVER, embedded=True)]
    servers = list(factory.config.server)
    unix = [str(s.address) for s in servers if s.family == getattr(socket, "AF_UNIX", None)]
    if unix:
        return [
            ServerLink(
                SERVER,
                unproxyable=f"it reaches its ZEO server through the Unix socket {unix[0]}",
            )
        ]
    lines = written_at(factory.config, "server")
    if len(lines) != len(servers):
        return [ServerLink(SERVER, unproxyable="its server lines could not be found in the text")]
    addresses = tuple((str(s.address[0]), int(s.address[1])) for s in servers)

    def render(proxied: Sequence[Address]) -> list[str]:
        return [f"server {host_port(address)}" for address in proxied]

    return [ServerLink(SERVER, addresses, redirect=replacing(lines, render))]
