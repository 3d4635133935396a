"""Raw key-value floors: real stores, real worker processes, the ZODB workers' barriers."""

from __future__ import annotations

import pytest

from zodbshootout.concurrency.processes import run_stage_in_processes
from zodbshootout.config.loader import load_config
from zodbshootout.rawkv.backends import open_store, record_key
from zodbshootout.rawkv.stage import RawStageTask, plan_stages, remove_records
from zodbshootout.workload.objects import UPDATED, make_payload

from support import configs

N = 50
SIZE = 64
BACKENDS = ("lmdb", "leveldb", "sqlite")


def _run(config, name, concurrency, phases):
    spec = config.databases[name].spec()
    remove_records(spec)
    timings = []
    for steps in plan_stages(phases):
        if not steps:
            continue
        tasks = [
            RawStageTask(config.source, spec, worker, N, SIZE, tuple(steps), 60)
            for worker in range(concurrency)
        ]
        outcome = run_stage_in_processes(tasks, 60)
        assert outcome.error is None, outcome.error
        timings.extend(outcome.timings)
    return spec, timings


@pytest.mark.parametrize("backend", BACKENDS)
def test_workers_write_and_read_back_every_record(backend, write_config, tmp_path):
    config = load_config(write_config(configs.rawkv("floor", backend)), str(tmp_path))
    concurrency = 1 if backend == "leveldb" else 2
    spec, timings = _run(config, "floor", concurrency, ["add", "update", "cold", "hot"])
    measured = sorted((t.phase, t.worker) for t in timings)
    expected = sorted(
        (phase, worker)
        for phase in ("add", "update", "cold", "hot")
        for worker in range(concurrency)
    )
    assert measured == expected
    assert all(t.seconds > 0 and t.objects == N for t in timings)
    assert all(t.loads == N for t in timings if t.phase in ("cold", "hot"))
    assert all(t.loads == 0 for t in timings if t.phase in ("add", "update"))
    # What the workers left is the update's payloads, under their own keys.
    store = open_store(spec)
    try:
        for worker in range(concurrency):
            keys = [record_key(worker, index) for index in range(N)]
            expected_values = [make_payload(worker, i, UPDATED, SIZE) for i in range(N)]
            assert store.read(keys) == expected_values
    finally:
        store.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_size_grows_with_records_and_removal_keeps_foreign_keys(backend, write_config, tmp_path):
    config = load_config(write_config(configs.rawkv("floor", backend)), str(tmp_path))
    spec = config.databases["floor"].spec()
    store = open_store(spec)
    try:
        empty = store.size_bytes()
        store.write([(b"theirs", b"x")])
        store.write([(record_key(0, i), b"v" * 200) for i in range(500)])
        full = store.size_bytes()
        # At least the payloads' bytes, and not absurdly more.
        assert 500 * 200 <= full - empty <= 4 * 500 * 200
        assert store.remove_ours() == 500
        assert store.read([b"theirs", record_key(0, 0)]) == [b"x", None]
    finally:
        store.close()


def test_leveldb_with_two_processes_says_why_it_cannot(write_config, tmp_path):
    config = load_config(write_config(configs.rawkv("floor", "leveldb")), str(tmp_path))
    spec = config.databases["floor"].spec()
    writes, _reads = plan_stages(["add"])
    tasks = [RawStageTask(config.source, spec, w, N, SIZE, tuple(writes), 30) for w in range(2)]
    outcome = run_stage_in_processes(tasks, 60)
    assert outcome.error == (
        "LevelDB can be opened by only one process at a time; measure it with -c 1"
    )


def test_a_read_that_finds_other_data_is_an_error_not_a_number(write_config, tmp_path):
    config = load_config(write_config(configs.rawkv("floor", "sqlite")), str(tmp_path))
    spec = config.databases["floor"].spec()
    remove_records(spec)
    _writes, reads = plan_stages(["cold"])
    # No write stage ran: the reader finds nothing.
    tasks = [RawStageTask(config.source, spec, 0, N, SIZE, tuple(reads), 30)]
    outcome = run_stage_in_processes(tasks, 60)
    assert outcome.timings == []
    assert "worker 0 read wrong data for object 0" in (outcome.error or "")
