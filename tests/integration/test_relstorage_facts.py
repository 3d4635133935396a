"""Facts of RelStorage that the mix page and its integrity check rely on.

If RelStorage changes, these tests fail and docs/mix.rst must say the new fact.
"""

from __future__ import annotations

import pytest

pytest.importorskip("relstorage")

import transaction
import ZODB
from persistent.mapping import PersistentMapping
from relstorage.adapters.sqlite.adapter import Sqlite3Adapter
from relstorage.options import Options
from relstorage.storage import RelStorage
from relstorage.storage.interfaces import VoteReadConflictError


def _sqlite_db(path):
    options = Options(keep_history=False)
    return ZODB.DB(RelStorage(Sqlite3Adapter(str(path), {}, options=options), options=options))


def _commit(db, change):
    """One transaction of a new connection of *db*: change(root), then commit."""
    tm = transaction.TransactionManager(explicit=True)
    conn = db.open(tm)
    try:
        with tm:
            change(conn.root())
    finally:
        conn.close()


def _value(db, key):
    conn = db.open()
    try:
        return conn.root()[key]["v"]
    finally:
        conn.close()


def test_sqlite_commits_a_change_that_failed_at_vote_with_the_next_commit(tmp_path):
    # Two DBs on one SQLite directory: two clients, as two mix workers are.
    mine, theirs = _sqlite_db(tmp_path), _sqlite_db(tmp_path)
    try:
        _commit(mine, lambda root: root.update((k, PersistentMapping(v=0)) for k in "rcn"))
        tm_mine = transaction.TransactionManager(explicit=True)
        conn = mine.open(tm_mine)
        tm_mine.begin()
        root = conn.root()
        root["r"]["v"]  # loaded before the other client changes it
        _commit(theirs, lambda root: root["r"].update(v=1))
        conn.readCurrent(root["r"])
        root["c"]["v"] = 100
        with pytest.raises(VoteReadConflictError):
            tm_mine.commit()
        tm_mine.abort()
        conn.close()
        assert _value(theirs, "c") == 0  # refused, as it should be
        _commit(mine, lambda root: root["n"].update(v=1))
        # ...but the refused change is committed with the client's next commit.
        assert _value(theirs, "c") == 100
    finally:
        mine.close()
        theirs.close()
