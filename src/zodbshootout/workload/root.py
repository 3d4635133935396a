"""The tool's own key in a database's root: the workers' containers under it.

``populate`` gives each worker a fresh container under :data:`ROOT_KEY`,
refusing (:class:`ForeignDataError`) a database whose root holds anything
else; :func:`connection_in_transaction` and :func:`untimed_connection` are the untimed
set-up work's connections.  Opening the database is :mod:`zodbshootout.database.open`'s job.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import transaction
from persistent.mapping import PersistentMapping

from zodbshootout.errors import CellError

#: The only root key the tool ever writes.
ROOT_KEY = "zodbshootout"


class ForeignDataError(CellError):
    """The database holds data the tool did not create."""


@contextlib.contextmanager
def untimed_connection(db: Any) -> Iterator[tuple[Any, Any]]:
    """A connection of its own and its explicit transaction manager, for untimed work.

    The block begins and ends its transactions (a fill commits one per
    batch, so that an interruption keeps what it committed); an error
    aborts the one in flight; the connection closes.
    """
    tm = transaction.TransactionManager(explicit=True)
    conn = db.open(transaction_manager=tm)
    try:
        yield conn, tm
    except BaseException:
        tm.abort()
        raise
    finally:
        conn.close()


@contextlib.contextmanager
def connection_in_transaction(db: Any, commit: bool = True) -> Iterator[Any]:
    """A connection of its own in one explicit transaction, for untimed set-up work.

    The transaction commits when the block ends (or aborts, with
    ``commit=False``, for reads); an error aborts it; the connection closes.
    """
    with untimed_connection(db) as (conn, tm):
        tm.begin()
        yield conn
        if commit:
            tm.commit()
        else:
            tm.abort()


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
