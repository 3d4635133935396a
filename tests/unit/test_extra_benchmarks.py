"""The extra benchmarks: where they are planned, what they do, how they are shown.

The benchmarks run here in this process on a MappingStorage, through the
same prepare → run → verify calls a worker makes; the integration tests run
them in real worker processes on the embedded storages.
"""

from __future__ import annotations

import pytest
import transaction
import ZODB
from ZODB.MappingStorage import MappingStorage

from zodbshootout.errors import DataMismatch
from zodbshootout.options.run import RunOptions
from zodbshootout.phases import benchmarks
from zodbshootout.phases import classic as phases
from zodbshootout.phases.classic import ALL_PHASES, PHASES, Step, WorkerScope, plan_stages
from zodbshootout.render.csv import format_csv
from zodbshootout.render.labels import phase_label
from zodbshootout.render.notes import conflict_notes
from zodbshootout.results.record import Measurement, PhaseTiming, RunResult
from zodbshootout.workload.root import ROOT_KEY, populate

N = 12
SIZE = 32


def run_phase(phase, scope):
    """What a worker does with a step, minus barriers and clock."""
    prepared = phases.prepare(phase, scope)
    outcome = phases.REGISTRY[phase].run(scope, prepared)
    phases.verify(phase, scope, outcome)
    return outcome


@pytest.fixture
def scope():
    """A database with worker 0's objects written and updated, shared objects set up."""
    db = ZODB.DB(MappingStorage())
    populate(db, 1)
    benchmarks.setup(db, ALL_PHASES, 1, N)
    worker = WorkerScope(db, 0, N, SIZE)
    run_phase("add", worker)
    run_phase("update", worker)
    yield worker
    db.close()


# -- planning --


def test_classic_selection_plans_exactly_the_classic_stages():
    writes, reads = plan_stages(PHASES)
    assert writes == [Step("add"), Step("update")]
    assert reads == [Step(p) for p in ("warm", "cold", "prefetch", "hot", "steamin", "open")]


def test_benchmarks_run_last_in_the_read_stage_in_canonical_order():
    writes, reads = plan_stages(["conflicts", "hot", "new_oid"])
    assert writes == [Step("add", timed=False), Step("update", timed=False)]
    assert reads == [Step("cold", timed=False), Step("hot"), Step("new_oid"), Step("conflicts")]


def test_benchmark_alone_still_gets_the_written_data_it_reads():
    writes, reads = plan_stages(["readcurrent"])
    assert [s.phase for s in writes] == ["add", "update"]
    assert reads == [Step("readcurrent")]


def test_default_options_are_the_seven_classic_phases():
    assert RunOptions().ordered_phases == list(PHASES)
    assert RunOptions(phases=("tpc", "add")).ordered_phases == ["add", "tpc"]


def test_unknown_benchmark_name_is_rejected_with_the_choices():
    with pytest.raises(ValueError, match=r"unknown phase 'store_all'.*readcurrent_conflicts"):
        RunOptions(phases=("store_all",))


# -- what each benchmark does --


def test_new_oid_allocates_distinct_oids(scope):
    work = run_phase("new_oid", scope)
    assert len({oid for oid, _data, _payload in work.records}) == N


def test_store_writes_real_records_that_a_connection_loads(scope):
    records = run_phase("store", scope).records
    assert len(records) == N
    conn = scope.db.open()
    try:
        loaded = conn.get(records[0][0])
        assert type(loaded).__name__ == "BenchmarkObject"
        assert loaded.payload == records[0][2]
        assert len(loaded.payload) == SIZE
    finally:
        conn.close()


def test_tpc_commits_empty_transactions(scope):
    before = scope.db.storage.lastTransaction()
    run_phase("tpc", scope)
    history = list(scope.db.storage.iterator(before))
    # N new transactions (the iterator starts at *before* itself).
    assert len(history) == N + 1
    assert all(not list(txn) for txn in history[1:])


def test_commit_begins_and_commits_without_writing(scope):
    before = scope.db.storage.lastTransaction()
    run_phase("commit", scope)
    assert scope.db.storage.lastTransaction() == before


def test_readcurrent_checks_serials_and_commits_the_marker(scope):
    read = run_phase("readcurrent", scope)
    assert len(read) == N
    conn = scope.db.open()
    try:
        assert conn.root()[ROOT_KEY][benchmarks.AREA_KEY]["markers"][0].commits == 1
    finally:
        conn.close()


def test_readcurrent_of_a_changed_object_conflicts(scope):
    """The check readcurrent measures is real: a concurrent change makes it fail."""
    from ZODB.POSException import ConflictError

    tm = transaction.TransactionManager()
    conn = scope.db.open(transaction_manager=tm)
    obj = conn.root()[ROOT_KEY][0][0]
    assert obj.payload  # loaded: readCurrent records the serial it was loaded at
    conn.readCurrent(obj)
    conn.root()[ROOT_KEY][benchmarks.AREA_KEY]["markers"][0].commits += 1
    other_tm = transaction.TransactionManager()
    other = scope.db.open(transaction_manager=other_tm)
    other.root()[ROOT_KEY][0][0].payload = b"changed"
    other_tm.commit()
    with pytest.raises(ConflictError):
        tm.commit()
    tm.abort()
    conn.close()
    other.close()


def test_conflicts_without_contention_counts_none_and_updates_every_object(scope):
    outcome = run_phase("conflicts", scope)
    assert benchmarks.conflicts_of(outcome) == 0
    conn = scope.db.open()
    try:
        shared = conn.root()[ROOT_KEY][benchmarks.AREA_KEY]["conflicts"]
        assert [shared[i].writes for i in range(N)] == [{0: 1}] * N
    finally:
        conn.close()


def test_a_conflicting_commit_is_counted_and_retried(scope):
    db = scope.db
    interfered = []

    def work(conn):
        conn.root()[ROOT_KEY][benchmarks.AREA_KEY]["conflicts"][0].payload = b"mine"
        if not interfered:
            # Another client commits the same object between our load and commit.
            tm = transaction.TransactionManager()
            other = db.open(transaction_manager=tm)
            other.root()[ROOT_KEY][benchmarks.AREA_KEY]["conflicts"][0].payload = b"theirs"
            tm.commit()
            other.close()
            interfered.append(True)

    assert benchmarks._retrying(scope, work) == 1
    conn = db.open()
    try:
        assert conn.root()[ROOT_KEY][benchmarks.AREA_KEY]["conflicts"][0].payload == b"mine"
    finally:
        conn.close()


def test_a_lost_shared_update_is_a_data_mismatch(scope):
    outcome = phases.REGISTRY["conflicts"].run(scope, phases.prepare("conflicts", scope))
    tm = transaction.TransactionManager()
    conn = scope.db.open(transaction_manager=tm)
    conn.root()[ROOT_KEY][benchmarks.AREA_KEY]["conflicts"][3].writes = {}
    tm.commit()
    conn.close()
    with pytest.raises(DataMismatch, match="shared object 3 counts 0 commits"):
        phases.verify("conflicts", scope, outcome)


def test_readcurrent_conflicts_roles_alternate(scope):
    writer = run_phase("readcurrent_conflicts", scope)
    reader_scope = WorkerScope(scope.db, 1, N, SIZE)
    populate(scope.db, 2)
    benchmarks.setup(scope.db, ALL_PHASES, 2, N)
    reader = run_phase("readcurrent_conflicts", reader_scope)
    assert (writer.role, reader.role) == ("writer", "reader")
    assert reader.conflicts == 0


def test_setup_without_benchmarks_leaves_no_shared_objects():
    db = ZODB.DB(MappingStorage())
    populate(db, 1)
    benchmarks.setup(db, ["conflicts"], 1, 3)
    benchmarks.setup(db, PHASES, 1, 3)
    conn = db.open()
    try:
        assert benchmarks.AREA_KEY not in conn.root()[ROOT_KEY]
    finally:
        conn.close()
        db.close()


# -- presentation --


def test_every_benchmark_has_its_own_label():
    labels = {phase_label(p, 100) for p in benchmarks.BENCHMARKS}
    assert len(labels) == len(benchmarks.BENCHMARKS)
    assert all("100" in label for label in labels)
    assert phase_label("new_oid", 100) == "Allocate 100 OIDs"


def _timing(phase, worker, conflicts):
    return PhaseTiming(phase, worker, 0.5, 10, 0, 0, None, conflicts=conflicts)


def test_conflict_counts_are_summed_into_a_note_and_shown_under_the_table():
    result = RunResult(["sqlite"], [10], [2], ["conflicts"], 2)
    for repetition, counts in ((1, (0, 3)), (2, (1, 0))):
        for worker, conflicts in enumerate(counts):
            result.measurements.append(
                Measurement("sqlite", 2, 10, repetition, _timing("conflicts", worker, conflicts))
            )
    assert conflict_notes(result) == [
        "conflicts: sqlite (n=10, c=2): 4 conflicts retried in 2 repetitions"
    ]
    lines = format_csv(result)
    assert lines[1].startswith('"Update 10 Shared Objects",')
    assert lines[1].split(",")[1].strip() == "40"  # 2 workers × 10 objects ÷ 0.5 s
    assert "Note: conflicts: sqlite (n=10, c=2): 4 conflicts retried in 2 repetitions" in lines


def test_old_phase_timings_without_the_new_fields_still_work():
    timing = PhaseTiming("add", 0, 1.0, 10, 0, 0, None)
    assert timing.conflicts == 0
    assert timing.object_growth is None
