"""add's timed commit is not its connection's first (real RelStorage databases).

A connection's first commit does one-time work (RelStorage creates its
temporary table, compiles and prepares statements) that an application pays
once per pooled connection.  add's prepare commits once, untimed, so that
the timed add sends what every later add sends.  Each test is its own
control: without that prepare, a worker's first add sends more statements
than its second.
"""

from __future__ import annotations

import pytest
import ZODB.config

from zodbshootout.phases import classic
from zodbshootout.phases.record import WorkerScope
from zodbshootout.storages.relstorage import round_trips
from zodbshootout.workload.objects import ADDED
from zodbshootout.workload.root import populate

N = 32  # two blocks of the OIDs RelStorage allocates 16 at a time


def statements_of_add(runner_db, scope: WorkerScope, prepare: bool) -> int:
    """Statements the timed part of one add sends, on a fresh container.

    The container is reset through *runner_db*, as the runner's process does.
    """
    populate(runner_db, 1)
    writes = classic.prepare("add", scope) if prepare else classic._writes(scope, ADDED)
    before = round_trips.in_this_thread()
    classic.REGISTRY["add"].run(scope, writes)
    return round_trips.in_this_thread() - before


def check_first_add(storage_section: str) -> None:
    round_trips.install()

    def fresh_db():
        return ZODB.config.databaseFromString(
            f"%import relstorage\n<zodb>\n<relstorage>\n{storage_section}\n</relstorage>\n</zodb>\n"
        )

    runner_db = fresh_db()
    try:
        db = fresh_db()  # a worker's
        try:
            scope = WorkerScope(db, 0, N, 64)
            # The control: a worker's first add, unprepared, does more.
            first, second = (statements_of_add(runner_db, scope, False) for _ in range(2))
            assert first > second > 0
        finally:
            db.close()
        db = fresh_db()
        try:
            scope = WorkerScope(db, 0, N, 64)
            first, second = (statements_of_add(runner_db, scope, True) for _ in range(2))
            assert first == second > 0
        finally:
            db.close()
    finally:
        runner_db.close()


def test_sqlite(tmp_path):
    check_first_add(f"<sqlite3>\n driver sqlite3\n data-dir {tmp_path}\n</sqlite3>")


@pytest.mark.postgresql
def test_postgresql(postgresql_dsn):
    check_first_add(f"<postgresql>\n dsn {postgresql_dsn}\n</postgresql>")
