"""Configuration sections the tests use again and again, in one place.

Each function returns one ``<zodb NAME>`` section whose files live below
$(ZODBSHOOTOUT_DATA); join several into one configuration text.
"""

from __future__ import annotations


def sqlite(name: str = "sqlite") -> str:
    """RelStorage on SQLite (RelStorage's automatic driver choice)."""
    return f"""
<zodb {name}>
  <relstorage>
    <sqlite3>
      data-dir $(ZODBSHOOTOUT_DATA)/{name}-sqlite
    </sqlite3>
  </relstorage>
</zodb>
"""


def embedded_zeo(name: str = "zeo", client: str | None = None) -> str:
    """A FileStorage behind a ZEO server the tool starts; *client*: a persistent cache."""
    client_line = f"\n    client {client}" if client else ""
    return f"""
<zodb {name}>
  <embeddedzeo>{client_line}
    <filestorage>
      path $(ZODBSHOOTOUT_DATA)/{name}.fs
    </filestorage>
  </embeddedzeo>
</zodb>
"""


def zeo_client(name: str, port: int) -> str:
    """A ZEO client (ZEO's own ``<clientstorage>``) of a server on 127.0.0.1:*port*.

    It gives up after 3 s without a server, so that a test of a server that
    is down or dies does not wait ZEO's default 30 s.
    """
    return f"""
%import ZEO
<zodb {name}>
  <clientstorage>
    server 127.0.0.1:{port}
    wait-timeout 3
  </clientstorage>
</zodb>
"""


def filestorage(name: str = "fs") -> str:
    """A FileStorage opened by the workers themselves."""
    return f"""
<zodb {name}>
  <filestorage>
    path $(ZODBSHOOTOUT_DATA)/{name}.fs
  </filestorage>
</zodb>
"""


def rawkv(name: str, backend: str) -> str:
    """A raw key-value floor (lmdb, leveldb or sqlite) under $(ZODBSHOOTOUT_DATA)."""
    return f"""
<rawkv {name}>
  backend {backend}
</rawkv>
"""
