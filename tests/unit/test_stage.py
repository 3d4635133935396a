"""One worker's stage, in this process, with a fake clock: exact timings, true counts."""

import itertools
import threading

import pytest

from zodbshootout.concurrency.worker import StageTask, execute_stage
from zodbshootout.config.loader import load_config
from zodbshootout.database.open import open_database
from zodbshootout.errors import DataMismatch
from zodbshootout.phases.classic import Step, plan_stages
from zodbshootout.workload.root import populate

from support import configs

N = 20


@pytest.fixture
def filestorage(write_config, data_dir):
    path = write_config(configs.filestorage("fs"))
    config = load_config(path, data_dir)
    db = open_database(config.source, "fs", [], client_label="populate", config=config)
    populate(db, 1)
    db.close()
    return config


def _task(config, steps):
    return StageTask(
        source=config.source,
        database="fs",
        server_addresses=(),
        worker=0,
        object_count=N,
        object_size_bytes=32,
        steps=tuple(steps),
        barrier_timeout_seconds=5,
    )


def fake_clock(step_seconds=0.25):
    """Each call returns a time step_seconds later than the one before."""
    counter = itertools.count()
    return lambda: next(counter) * step_seconds


def test_timings_come_from_the_clock_around_the_run_only(filestorage):
    writes, reads = plan_stages(["add", "update", "cold", "steamin"])
    barrier = threading.Barrier(1)
    clock = fake_clock()
    timings = execute_stage(_task(filestorage, writes), barrier, clock=clock)
    timings += execute_stage(_task(filestorage, reads), barrier, clock=clock)
    assert [t.phase for t in timings] == ["add", "update", "cold", "steamin"]
    # The clock is read exactly twice per step: start and end.
    assert [t.seconds for t in timings] == [0.25] * 4
    assert all(t.objects == N for t in timings)


def test_loads_per_phase_on_filestorage(filestorage):
    writes, reads = plan_stages(["cold", "hot", "steamin"])
    barrier = threading.Barrier(1)
    execute_stage(_task(filestorage, writes), barrier)
    by_phase = {t.phase: t for t in execute_stage(_task(filestorage, reads), barrier)}
    # root, the tool's mapping, the worker's container, and N objects
    assert by_phase["cold"].loads == N + 3
    assert by_phase["cold"].storage_loads == N + 3
    assert by_phase["hot"].loads == N + 3  # FileStorage has no client cache
    assert by_phase["steamin"].loads == 0


def test_untimed_steps_are_not_reported(filestorage):
    writes, _reads = plan_stages(["update"])
    assert writes == [Step("add", timed=False), Step("update", timed=True)]
    timings = execute_stage(_task(filestorage, writes), threading.Barrier(1))
    assert [t.phase for t in timings] == ["update"]


def test_hot_alone_is_primed_by_an_untimed_read():
    _writes, reads = plan_stages(["hot"])
    assert reads == [Step("cold", timed=False), Step("hot", timed=True)]


def test_reads_check_values(filestorage):
    _writes, reads = plan_stages(["cold"])
    barrier = threading.Barrier(1)
    # Only add, no update: the values in the database are the add's, not the update's.
    execute_stage(_task(filestorage, [Step("add", timed=False)]), barrier)
    with pytest.raises(DataMismatch, match="object 0"):
        execute_stage(_task(filestorage, reads), barrier)


def test_timed_region_holds_zodb_work_only(filestorage, monkeypatch):
    """Payloads, counters, checks and barriers all happen outside start..end."""
    from zodbshootout.phases import caches
    from zodbshootout.phases import classic as phases

    events: list[str] = []

    def recorder(name, original):
        def record(*args, **kwargs):
            events.append(name)
            return original(*args, **kwargs)

        return record

    monkeypatch.setattr(phases, "make_payloads", recorder("payloads", phases.make_payloads))
    monkeypatch.setattr(caches, "counters", recorder("counters", caches.counters))
    monkeypatch.setattr(phases, "verify", recorder("verify", phases.verify))
    monkeypatch.setattr(phases, "prepare", recorder("prepare", phases.prepare))

    class RecordingBarrier:
        def wait(self, timeout=None):
            events.append("barrier")
            return 0

        def abort(self):
            events.append("abort")

    ticks = itertools.count()

    def clock():
        events.append("clock")
        return float(next(ticks))

    writes, reads = plan_stages(["add", "cold"])
    execute_stage(_task(filestorage, writes), RecordingBarrier(), clock=clock)
    execute_stage(_task(filestorage, reads), RecordingBarrier(), clock=clock)
    starts = [i for i, e in enumerate(events) if e == "clock"][0::2]
    ends = [i for i, e in enumerate(events) if e == "clock"][1::2]
    assert len(starts) == 3  # add, update, cold
    for start, end in zip(starts, ends, strict=True):
        assert end == start + 1, events[start : end + 1]  # nothing recorded in between
        assert events[start - 1] == "barrier"
        assert events[end + 1] == "barrier"
    assert events.index("payloads") < starts[0]
