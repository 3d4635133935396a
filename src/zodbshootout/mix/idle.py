"""--idle-connections: connections a worker leaves idle in its database's pool for the run.

An application server with several threads whose load rarely needs more
than one keeps the other threads' connections in ZODB's pool, unused: the
pool hands out the connection that was closed last (among those with the
fullest pickle cache), so a connection that served a burst once and went
quiet may stay there for hours.  On RelStorage each such connection is a
viewer of the client's MVCC object index at the transaction it last polled
(``relstorage.cache.mvcc``), so the index keeps a map per transaction
committed since, and every load the busy connection makes from the local
cache walks those maps: the client's transactions get slower as the run
goes on, and a new process (a client restart) starts with an index of one
map.  RelStorage bounds it: past ``RS_CACHE_MVCC_MAX_DEPTH`` transactions
(1,000 by default, an environment variable) it detaches the idle viewers,
whose next use then drops their whole pickle cache.

Opened before the first barrier and closed with the database: untimed.
"""

from __future__ import annotations

from typing import Any

import transaction
from ZODB.utils import z64


def leave_idle(db: Any, count: int) -> None:
    """Leave *count* connections idle in *db*'s pool, each having read the root.

    They are opened together with one more (a burst of ``count + 1``
    requests), all at the same transaction, then closed: the pool keeps
    them, and the worker's transactions reuse the one closed last, never
    the others.
    """
    if count <= 0:
        return
    opened = []
    try:
        for _ in range(count + 1):
            manager = transaction.TransactionManager(explicit=True)
            conn = db.open(transaction_manager=manager)
            opened.append((manager, conn))
            manager.begin()
            conn.get(z64)._p_activate()  # the root loaded: a connection that polled
            manager.abort()
    finally:
        for _manager, conn in opened:
            conn.close()
