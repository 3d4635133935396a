"""The arithmetic of PostgreSQL's lock table against RelStorage's per-object locks."""

from zodbshootout.storages.relstorage import locks

DEFAULTS = {"max_locks_per_transaction": 64, "max_connections": 100, "max_prepared_transactions": 0}


def test_the_default_table_fits_one_writer_of_a_thousand_but_not_two_of_ten_thousand():
    assert locks.capacity(DEFAULTS) == 6400
    assert locks.plan_note("pg", DEFAULTS, [100, 1000], [1, 2, 4]) is None
    note = locks.plan_note("pg", DEFAULTS, [100, 1000, 10000], [1, 2, 4])
    assert note is not None
    # 4 × (10000 + 16) locks over 100 connections: 401 per slot, rounded up to 448.
    assert "set max_locks_per_transaction = 448" in note
    assert locks.setting_for(DEFAULTS, 10000, 2) == 256


def test_only_a_full_lock_table_gets_the_hint():
    info = {"lock_table": DEFAULTS}
    assert locks.failure_hint("ConflictError: ...", info, 10000, 2) is None
    assert locks.failure_hint("out of shared memory", {}, 10000, 2) is None
    hint = locks.failure_hint("... failed: out of shared memory", info, 10000, 2)
    assert hint is not None
    assert hint.endswith("set max_locks_per_transaction = 256 and restart it")
    assert len(hint) < 180  # the footnote keeps 200 characters with its prefix


def test_the_runner_reaches_the_lock_table_through_the_storage_kinds():
    # run/ and database/ ask the registry, which asks every kind: RelStorage's answers.
    from zodbshootout import storages

    info = {"kind": "relstorage", "lock_table": DEFAULTS}
    error = "... failed: out of shared memory"
    assert storages.failure_hint(error, info, 10000, 2) == locks.failure_hint(error, info, 10000, 2)
    assert storages.failure_hint("ConflictError", info, 10000, 2) is None
    assert storages.plan_notes("pg", info, [10000], [4]) == [
        locks.plan_note("pg", DEFAULTS, [10000], [4])
    ]
    assert storages.plan_notes("pg", info, [1000], [1]) == []
    assert storages.plan_notes("fs", {"kind": "filestorage"}, [10000], [4]) == []
