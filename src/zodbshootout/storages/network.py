"""The servers a storage section reaches over the network, and its lines that name them.

``--rtt`` puts a delaying proxy between the workers and every server a
database talks to (see zodbshootout.network).  For that each storage kind
says, per section (:meth:`StorageKind.network_links
<zodbshootout.storages.base.StorageKind.network_links>`), which servers it
reaches and how to point the section at other addresses: the lines of the
configuration text to write instead.  A server reached another way than
TCP (a Unix socket) is a link that says why it can't be proxied.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

Address = tuple[str, int]


@dataclass(frozen=True)
class LineEdit:
    """A change to line *lineno* of the configuration file at *url*.

    *text* replaces the line: ``key value`` without indentation (the line
    keeps its own), possibly several lines joined by newlines.  With
    *append*, *text* is added at the end of the line as written instead.
    """

    url: str
    lineno: int
    text: str
    append: bool = False


@dataclass(frozen=True)
class ServerLink:
    """How a section reaches one or more servers of one kind.

    server: what is reached, for messages ("ZEO server", "PostgreSQL").
    addresses: the TCP addresses, in the configuration's order.
    redirect: the edits that point the section at other addresses, one per
    address of *addresses* in the same order.
    embedded: an ``<embeddedzeo>`` server's link, whose address the runner
    learns when it starts that server (nothing in the text names it).
    unproxyable: why this link can't go through a TCP proxy (then no addresses).
    """

    server: str
    addresses: tuple[Address, ...] = ()
    redirect: Callable[[Sequence[Address]], list[LineEdit]] | None = None
    embedded: bool = False
    unproxyable: str | None = None


def replacing(
    lines: Sequence[tuple[str, int]], render: Callable[[Sequence[Address]], list[str]]
) -> Callable[[Sequence[Address]], list[LineEdit]]:
    """A redirect that writes ``render(addresses)[i]`` over ``lines[i]``."""

    def redirect(addresses: Sequence[Address]) -> list[LineEdit]:
        texts = render(addresses)
        return [
            LineEdit(url, lineno, text) for (url, lineno), text in zip(lines, texts, strict=True)
        ]

    return redirect


def host_port(address: Address) -> str:
    """``host:port``, with an IPv6 host in brackets."""
    host, port = address
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
