"""Series on the run's time axis: bounded buffers, the sampler thread's notes, the record shape.

Pure parts only (no process, no server): the integration tests sample real
servers (tests/integration/test_probes_series.py).
"""

from __future__ import annotations

import itertools
import json
import pathlib
import threading
import time

import pytest

from zodbshootout.probes.series import (
    SamplerThread,
    SeriesBuffer,
    SeriesSet,
    open_samplers,
    rss_bytes,
    trimmed,
)

pytest.importorskip("hdrh", reason="hdrhistogram is not installed (pip install -e .)")

from zodbshootout.render.mix import series_document, series_notes
from zodbshootout.results import file as resultfile
from zodbshootout.results.mix import MixRun, Series, client_series

BASE = pathlib.Path(__file__).parent / "golden" / "mix" / "base.json"


def test_a_buffer_below_its_capacity_keeps_every_sample():
    buffer = SeriesBuffer("objects", capacity=8)
    for i in range(8):
        buffer.add(i * 0.5, i)
    assert buffer.times == [i * 0.5 for i in range(8)]
    assert buffer.values == list(range(8))
    assert buffer.stride == 1


@pytest.mark.parametrize("offered", [9, 100, 1000, 4097])
def test_a_full_buffer_thins_evenly_and_keeps_covering_the_run(offered):
    buffer = SeriesBuffer("bytes", capacity=16)
    for i in range(offered):
        buffer.add(float(i), i * 10)
    kept = buffer.times
    assert len(kept) <= 16
    assert len(kept) > 16 // 2  # thinned by halves, never below half full
    assert kept[0] == 0.0  # the start stays
    steps = {b - a for a, b in itertools.pairwise(kept)}
    assert steps == {float(buffer.stride)}  # one regular step
    assert offered - 1 - kept[-1] < buffer.stride  # and it reaches the end
    assert buffer.values == [t * 10 for t in kept]  # each value stays with its time


def test_an_odd_capacity_is_refused():
    with pytest.raises(ValueError, match="even"):
        SeriesBuffer("x", capacity=7)


def test_plain_data_counts_from_the_origin_and_keeps_counters_whole():
    buffer = SeriesBuffer("transactions")
    buffer.add(100.25, 3.0)
    buffer.add(100.5, 4.5)
    assert buffer.as_data(origin=100.0) == {
        "unit": "transactions",
        "t": [0.25, 0.5],
        "values": [3, 4.5],
    }


def test_trimming_drops_the_warmup_but_keeps_one_baseline():
    series = {"unit": "u", "t": [-0.6, -0.4, -0.1, 0.1, 0.3], "values": [1, 2, 3, 4, 5]}
    assert trimmed(series, 0.0) == {"unit": "u", "t": [-0.1, 0.1, 0.3], "values": [3, 4, 5]}
    assert trimmed(series, -1.0) == series
    assert trimmed({"unit": "u", "t": [], "values": []}, 0.0)["t"] == []


def test_a_set_names_each_series_by_its_source():
    series = SeriesSet(capacity=4)
    series.add(1.0, {"commits": ("transactions", 5), "locks": ("locks", 2)}, prefix="pg.")
    series.add(2.0, {"commits": ("transactions", 9)}, prefix="pg.")
    data = series.as_data(origin=1.0)
    assert data["pg.commits"] == {"unit": "transactions", "t": [0.0, 1.0], "values": [5, 9]}
    assert data["pg.locks"]["values"] == [2]


def test_the_resident_memory_is_read():
    rss = rss_bytes()
    assert rss is not None
    assert rss > 1_000_000  # a Python with the package imported is megabytes


class _Counter:
    """A sampler that counts its reads; fails from the *fail_at*-th on."""

    def __init__(self, name, fail_at=None):
        self.name = name
        self.reads = 0
        self.fail_at = fail_at
        self.closed = 0

    def read(self):
        self.reads += 1
        if self.fail_at is not None and self.reads >= self.fail_at:
            raise PermissionError("permission denied for view pg_stat_database\nDETAIL: more")
        return {"reads": ("reads", self.reads)}

    def close(self):
        self.closed += 1


def test_a_sampler_that_fails_is_dropped_with_one_note_and_the_others_go_on():
    good, bad = _Counter("good"), _Counter("bad", fail_at=2)
    now = iter(range(1000))
    thread = SamplerThread([good, bad], 0.01, clock=lambda: float(next(now)))
    for _ in range(5):
        thread.sample()
    thread.stop()  # not started: stop takes the last sample only
    assert good.reads == 6
    assert bad.reads == 2  # never asked again
    assert thread.notes == [
        "bad series not sampled: PermissionError: permission denied for view pg_stat_database"
    ]
    assert bad.closed == 1
    assert good.closed == 1
    data = thread.series.as_data()
    assert data["good.reads"]["values"] == [1, 2, 3, 4, 5, 6]
    assert data["bad.reads"]["values"] == [1]


def test_the_thread_samples_every_interval_until_stopped():
    sampler = _Counter("s")
    done = threading.Event()
    thread = SamplerThread([sampler], 0.02).start()
    done.wait(0.3)
    thread.stop()
    # About 15 intervals in 0.3 s; a busy machine may delay some, never add any.
    assert 5 <= sampler.reads <= 0.3 / 0.02 + 3
    assert thread.cpu_seconds >= 0.0
    times = thread.series.buffers["s.reads"].times
    assert times == sorted(times)


def test_a_sampler_that_cannot_open_is_one_note():
    def refused():
        raise ConnectionRefusedError(111, "Connection refused")

    samplers, notes = open_samplers([("a", lambda: [_Counter("x")]), ("b", refused)])
    assert [s.name for s in samplers] == ["x"]
    assert notes == ["b series not sampled: ConnectionRefusedError: [Errno 111] Connection refused"]


# --- The record's shape -----------------------------------------------------------


def _report(worker, started_at, notes=()):
    return {
        "worker": worker,
        "started_at": started_at,
        "series": {"rss": {"unit": "bytes", "t": [0.0, 0.2], "values": [10, 12]}},
        "series_notes": list(notes),
    }


def test_the_workers_series_merge_under_their_numbers_with_the_earliest_start():
    merged = client_series(
        [_report(1, 50.5, ["x failed"]), _report(0, 50.25, ["x failed"]), {"worker": 2}]
    )
    assert list(merged["series"]) == ["client.0.rss", "client.1.rss"]
    assert merged["series_origin"] == 50.25
    assert merged["series_notes"] == ["client: x failed"]  # once, however many workers said it


def _saved_with_series(series, notes=()):
    document = json.loads(BASE.read_text(encoding="utf-8"))
    record = document["mix"][0]
    record["series"] = series
    record["series_notes"] = list(notes)
    record["series_origin"] = 1700000000.0
    return MixRun.of(resultfile.loads(json.dumps(document))).records[0]


def test_a_record_reads_its_series_and_the_table_names_them_in_one_line():
    series = {
        "client.0.rss": {"unit": "bytes", "t": [0.0, 1.0], "values": [5, 6]},
        "client.1.rss": {"unit": "bytes", "t": [0.0, 1.0], "values": [5, 7]},
        "zeo.commits": {"unit": "transactions", "t": [-0.1, 1.1], "values": [10, 42]},
        "zeo.loads": {"unit": "loads", "t": [-0.1, 1.1], "values": [0, 9]},
    }
    record = _saved_with_series(series, ["memcached x series not sampled: refused"])
    assert record.series["zeo.commits"] == Series("transactions", (-0.1, 1.1), (10, 42))
    assert record.series["zeo.commits"].delta() == 32
    assert record.series_origin == 1700000000.0
    lines = series_notes(record)
    assert lines[0].startswith("series sampled")
    assert "client of 2 workers (1 each), zeo (2); in the result file" in lines[0]
    assert lines[1:] == ["memcached x series not sampled: refused"]
    assert series_document(record)["zeo.loads"] == {
        "unit": "loads",
        "t": [-0.1, 1.1],
        "values": [0, 9],
    }


def test_a_record_without_series_reads_as_none_sampled():
    document = json.loads(BASE.read_text(encoding="utf-8"))
    record = MixRun.of(resultfile.loads(json.dumps(document))).records[0]
    assert record.series == {}
    assert series_notes(record) == []


@pytest.mark.parametrize(
    "series",
    [
        {"a": {"unit": "u", "t": [0.0], "values": [1, 2]}},
        {"a": {"unit": "u", "t": [0.0], "values": ["many"]}},
        {"a": {"unit": "u", "t": "now", "values": []}},
        {"a": [1, 2]},
    ],
)
def test_a_series_of_the_wrong_shape_is_refused(series):
    with pytest.raises(Exception, match="series"):
        _saved_with_series(series)


def test_the_cpu_wait_is_a_ratio_of_two_readings_of_this_threads_schedstat():
    from zodbshootout.probes.series import CpuWait

    wait = CpuWait()
    assert wait.read() == {}  # the baseline
    deadline = time.thread_time() + 0.02
    while time.thread_time() < deadline:  # run a little: the ratio's denominator
        pass
    ((unit, ratio),) = wait.read().values()
    assert unit == "ms/ms"
    assert ratio >= 0.0


def test_the_machine_sampler_reads_the_load_average_and_a_pressure_share():
    from zodbshootout.probes.series import MachineSampler

    clock = iter([100.0, 101.0])
    sampler = MachineSampler(clock=lambda: next(clock))
    first = sampler.read()
    load = float(pathlib.Path("/proc/loadavg").read_text().split()[0])
    assert first["load_1min"][0] == "tasks"
    assert abs(first["load_1min"][1] - load) < 5  # the same file, read a moment apart
    second = sampler.read()
    if pathlib.Path("/proc/pressure/cpu").exists():
        unit, share = second["cpu_pressure"]
        assert unit == "share"
        assert 0.0 <= share <= 1.0
