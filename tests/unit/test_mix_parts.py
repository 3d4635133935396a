"""The mix mode's parts without processes: workloads, key choosers, schedules, recording."""

from __future__ import annotations

import collections
import itertools
import pathlib
import random
import sys

import pytest

pytest.importorskip("hdrh", reason="hdrhistogram is not installed (pip install -e .)")

from zodbshootout.errors import UsageError
from zodbshootout.mix import keys as mixkeys
from zodbshootout.mix import recorder as mixrecorder
from zodbshootout.mix.recorder import Recorder
from zodbshootout.mix.schedule import OpenLoop
from zodbshootout.mix.worker import retryable
from zodbshootout.mix.workloads import BUILTIN, choose_workload, parse_mix
from zodbshootout.results import histogram
from zodbshootout.results.mix import MixRecord, MixRun
from zodbshootout.results.mix_stats import summarize, trend, trend_warnings


def test_a_custom_mix_is_a_workload_of_its_weights():
    workload = parse_mix("read=50, update=30,scan=20")
    assert workload.shares() == {"read": 0.5, "update": 0.3, "scan": 0.2}
    assert workload.operations == ("read", "update", "scan")


@pytest.mark.parametrize(
    ("text", "says"),
    [("read=50,fly=10", "'fly=10'"), ("read=x", "not a number"), ("read=0", "above zero")],
)
def test_a_bad_custom_mix_says_what_is_wrong(text, says):
    with pytest.raises(UsageError, match=says):
        parse_mix(text)


def test_builtin_workloads_include_ycsb_a_to_f_and_a_conflict_heavy_one():
    assert {f"ycsb-{letter}" for letter in "abcdef"} <= set(BUILTIN)
    assert "readcurrent" in BUILTIN["conflicts"].operations
    with pytest.raises(UsageError, match="unknown workload"):
        choose_workload("ycsb-z", None, None)
    assert choose_workload("ycsb-c", None, "uniform").keys == "uniform"


def _predicted_top_share(count, top, theta=0.99):
    # Straight from the definition, not from the chooser's table.
    weights = [1 / rank**theta for rank in range(1, count + 1)]
    return sum(weights[:top]) / sum(weights)


def test_zipfian_top_one_percent_gets_its_predicted_share():
    count, draws = 10_000, 200_000
    chooser = mixkeys.make_chooser("zipfian", count, seed=7, worker=0)
    hits = collections.Counter(chooser.next() for _ in range(draws))
    top = [key for key, _n in hits.most_common(count // 100)]
    measured = sum(hits[key] for key in top) / draws
    predicted = _predicted_top_share(count, count // 100)
    assert abs(measured - predicted) < 0.01, (measured, predicted)
    # Scrambled: the hot keys are spread over the tree, not its first buckets.
    assert max(top) > count // 2
    assert len(set(hits)) > count // 2


def test_zipfian_is_reproducible_from_its_seed():
    def keys(seed):
        chooser = mixkeys.make_chooser("zipfian", 1000, seed=seed, worker=3)
        return [chooser.next() for _ in range(50)]

    assert keys(1) == keys(1)
    assert keys(1) != keys(2)


def test_hotspot_gives_its_hot_keys_their_share():
    chooser = mixkeys.make_chooser("hotspot", 1000, seed=1, worker=0, hot=(0.2, 0.8))
    draws = [chooser.next() for _ in range(50_000)]
    share = sum(key < 200 for key in draws) / len(draws)
    assert 0.78 < share < 0.82


def test_latest_prefers_the_newest_keys_and_follows_inserts():
    chooser = mixkeys.make_chooser("latest", 1000, seed=1, worker=0)
    chooser.inserted(1500)
    draws = [chooser.next() for _ in range(10_000)]
    assert max(draws) == 1500
    assert sum(key > 1400 for key in draws) / len(draws) > 0.5


def test_many_keys_are_distinct():
    chooser = mixkeys.make_chooser("zipfian", 100, seed=1, worker=0)
    keys = chooser.many(10)
    assert len(keys) == len(set(keys)) == 10


def test_constant_schedule_interleaves_the_workers_at_the_rate():
    starts = sorted(
        start for worker in range(4) for start in _take(OpenLoop(100.0, 4, worker, start=10.0), 25)
    )
    gaps = {round(b - a, 9) for a, b in itertools.pairwise(starts)}
    assert gaps == {0.01}
    assert starts[0] == 10.0


def test_poisson_schedule_has_the_mean_rate_and_varying_gaps():
    schedule = OpenLoop(200.0, 2, 0, start=0.0, arrival="poisson", rng=random.Random(3))
    starts = _take(schedule, 4000)
    mean_gap = (starts[-1] - starts[0]) / (len(starts) - 1)
    assert mean_gap == pytest.approx(2 / 200.0, rel=0.05)
    assert len({round(b - a, 6) for a, b in itertools.pairwise(starts)}) > 1000


def test_missed_starts_are_the_backlog_at_the_end():
    schedule = OpenLoop(10.0, 1, 0, start=0.0)
    schedule.take()
    assert schedule.missed(end=1.0) == 9  # 0.1, 0.2, ... 0.9


def _take(schedule, n):
    return [schedule.take() for _ in range(n)]


class FakeClock:
    def __init__(self):
        self.now = 0.0


def test_recorder_keeps_percentiles_and_intervals_from_intended_starts():
    recorder = Recorder(("read", "update"), start=0.0, interval_seconds=1.0, open_loop=True)
    # 2 s: reads of 1 ms service that started 9 ms late, one slow update.
    now = 0.0
    for _ in range(1000):
        recorder.record("read", now, now + 0.009, now + 0.010)
        now += 0.002
    recorder.record("update", now, now, now + 0.5)
    recorder.close_intervals(2.6)
    data = recorder.as_data()
    # By completion time: the first interval ends before the 496th read is done.
    assert [n for n, _h in data["intervals"]] == [495, 500]
    rows = {row.operation: row for row in summarize(_record(data, seconds=2.0))}
    assert rows["read"].percentiles_ms[50.0] == pytest.approx(10.0, rel=0.01)
    assert rows["read"].service_ms[50.0] == pytest.approx(1.0, rel=0.01)
    assert rows["read"].lag_mean_ms == pytest.approx(9.0, rel=0.01)
    assert rows["update"].max_ms == pytest.approx(500, rel=0.01)
    assert rows["all"].transactions == 1001
    assert rows["all"].per_second == pytest.approx(500.5)


def test_recorder_memory_does_not_grow_with_transactions():
    recorder = Recorder(("read",), start=0.0, interval_seconds=1000.0)
    entry = recorder.operations["read"]
    sizes = []
    for batch in range(3):
        for i in range(20_000):
            recorder.record("read", 0.0, 0.0, 0.000_1 * (1 + i % 977) + batch)
        sizes.append(sys.getsizeof(entry.latency.counts))
        # A long interval folds its pending latencies early: the list stays short.
        assert len(entry.pending_latency) < mixrecorder.FOLD_EVERY
        recorded = entry.latency.get_total_count() + len(entry.pending_latency)
        assert recorded == 20_000 * (batch + 1)
        assert recorder.interval.get_total_count() == entry.latency.get_total_count()
    assert sizes[0] == sizes[-1]
    recorder.fold()
    assert entry.pending_latency == []
    assert entry.latency.get_total_count() == 60_000
    assert len(histogram.encode(recorder.interval)) < 20_000


def _one_by_one(values):
    """A histogram of *values* recorded as the recorder did before it folded them."""
    one_by_one = histogram.new_histogram()
    for value in values:
        one_by_one.record_value(min(value, histogram.HIGHEST_MICROSECONDS))
    return one_by_one


def _assert_same_histogram(folded, one_by_one):
    assert list(folded.counts) == list(one_by_one.counts)
    assert folded.get_total_count() == one_by_one.get_total_count()
    assert folded.get_min_value() == one_by_one.get_min_value()
    assert folded.get_max_value() == one_by_one.get_max_value()
    # The raw extremes too (the getters round them to their buckets' bounds).
    assert (folded.min_value, folded.max_value) == (one_by_one.min_value, one_by_one.max_value)
    percentiles = [0.0, 1.0, 25.0, 50.0, 90.0, 99.0, 99.9, 99.99, 100.0]
    assert folded.get_percentile_to_value_dict(percentiles) == (
        one_by_one.get_percentile_to_value_dict(percentiles)
    )
    assert histogram.encode(folded) == histogram.encode(one_by_one)


@pytest.mark.parametrize(
    "spread",
    [
        (1, 2_000),  # the first bucket: one microsecond per count
        (1, 5_000_000),  # the usual latencies, every bucket up to 5 s
        (-3, 10),  # below zero is refused, zero is the lowest bucket
        (3_500_000_000, 4_000_000_000),  # an hour and more counts as an hour
    ],
)
def test_folding_latencies_equals_recording_them_one_by_one(spread):
    rng = random.Random(spread[0])
    values = [rng.randint(*spread) for _ in range(3000)]
    values += [int(rng.lognormvariate(7, 2)) for _ in range(3000)]  # many repeats
    hour = histogram.HIGHEST_MICROSECONDS
    values += [-1, 0, 1, 2047, 2048, 2049, 4095, 4096, hour - 1, hour, hour + 1]  # edges
    rng.shuffle(values)
    folded, also = histogram.new_histogram(), histogram.new_histogram()
    mixrecorder.record_values(values[:1000], folded)
    mixrecorder.record_values(values[1000:], folded, also)  # onto one that has counts
    _assert_same_histogram(folded, _one_by_one(values))
    _assert_same_histogram(also, _one_by_one(values[1000:]))
    nothing = histogram.new_histogram()
    mixrecorder.record_values([-1, -5], nothing)
    _assert_same_histogram(nothing, histogram.new_histogram())


def test_recorder_histograms_equal_one_record_value_per_transaction(monkeypatch):
    # Folds early (every 100 transactions) and at each interval's end.
    monkeypatch.setattr(mixrecorder, "FOLD_EVERY", 100)
    rng = random.Random(7)
    recorder = Recorder(("read", "update"), start=0.0, interval_seconds=0.5, open_loop=True)
    latencies = {op: [] for op in ("read", "update")}
    services = {op: [] for op in ("read", "update")}
    per_interval = [[] for _ in range(4)]
    intended = done = 0.0
    for _ in range(1000):
        # One worker: a transaction starts when intended or when the last one is done.
        intended += 0.002
        operation = rng.choice(("read", "update"))
        started = max(intended, done)
        done = started + rng.lognormvariate(-8, 1.5)
        recorder.record(operation, intended, started, done)
        latencies[operation].append(int((done - intended) * 1e6))
        services[operation].append(int((done - started) * 1e6))
        if done < 2.0:
            per_interval[int(done / 0.5)].append(latencies[operation][-1])
    recorder.close_intervals(2.0)
    assert [count for count, _h in recorder.intervals] == [len(v) for v in per_interval]
    for (_count, encoded), values in zip(recorder.intervals, per_interval, strict=True):
        _assert_same_encoded(encoded, values)
    data = recorder.as_data()
    for operation in ("read", "update"):
        record = data["operations"][operation]
        assert record["count"] == len(latencies[operation])
        _assert_same_encoded(record["latency"], latencies[operation])
        _assert_same_encoded(record["service"], services[operation])
        entry = recorder.operations[operation]
        _assert_same_histogram(entry.latency, _one_by_one(latencies[operation]))
        _assert_same_histogram(entry.service, _one_by_one(services[operation]))


def test_the_closed_loop_record_after_begin_keeps_what_record_keeps(monkeypatch):
    """replay's flat-out loop: a recorder made before the clock, begun at its start, fed
    through record_closed, holds the same counts, histograms and intervals as record's."""
    monkeypatch.setattr(mixrecorder, "FOLD_EVERY", 64)
    rng = random.Random(3)
    plain = Recorder(("read", "update"), start=10.0, interval_seconds=0.02)
    closed = Recorder(("read", "update"), start=0.0, interval_seconds=0.02)
    closed.begin(10.0)
    pending = {op: entry.pending_latency for op, entry in closed.operations.items()}
    done = 10.0
    for _ in range(600):
        operation = rng.choice(("read", "update"))
        started, done = done, done + rng.lognormvariate(-8, 1.2)
        plain.record(operation, started, started, done)
        closed.record_closed(pending[operation], started, done)
    for recorder in (plain, closed):
        recorder.close_intervals(done)
    assert len(plain.intervals) >= 4
    assert closed.intervals == plain.intervals
    assert closed.as_data() == plain.as_data()
    assert sum(closed.as_data()["operations"][op]["count"] for op in pending) == 600


def _assert_same_encoded(encoded, values):
    """The recorder's encoded histogram is that of *values* recorded one by one."""
    expected = histogram.encode(_one_by_one(values))
    assert encoded == expected
    _assert_same_histogram(histogram.decode(encoded), histogram.decode(expected))


def _record(worker_data, seconds, database="db", intervals=None):
    """The typed record of one database whose one worker reported *worker_data*."""
    from zodbshootout.mix.operations import Shape
    from zodbshootout.mix.worker import MixPlan
    from zodbshootout.results.mix import merge_reports

    report = dict(worker_data)
    report.update(
        worker=0,
        seconds=seconds,
        unstarted=0,
        increments=0,
        warmup_increments=0,
        uncertain_increments=0,
        inserted=0,
        counters=None,
    )
    ops = tuple(report["operations"])
    workload = parse_mix(",".join(f"{op}=1" for op in ops))
    plan = MixPlan(workload, 10, Shape(1, 1, 16), seconds, 0, 1, rate_per_second=1.0)
    record = merge_reports(database, [report], plan, 1)
    if intervals is not None:
        record["intervals"] = intervals
    return MixRecord.from_data(record)


def test_trend_finds_a_drift_and_not_noise():
    change, r = trend([100, 90, 80, 70, 60, 50])
    assert change == pytest.approx(-0.667, abs=0.01)
    assert r == pytest.approx(-1.0)
    assert trend([100, 90]) is None
    noisy = [100, 104, 97, 101, 99, 103, 98, 100]
    found = trend(noisy)
    assert found is not None
    assert abs(found[0]) < 0.1


def test_a_falling_throughput_is_warned_about():
    recorder = Recorder(("read",), start=0.0)
    intervals = [
        {"transactions": n, "p99_us": 1000, "p50_us": 500} for n in (900, 700, 500, 300, 100)
    ]
    record = _record(recorder.as_data(), 5.0, intervals=intervals)
    (warning,) = trend_warnings(record)
    assert "throughput fell by" in warning
    assert warning.startswith("db:")
    steady = [{"transactions": n, "p99_us": 1000, "p50_us": 500} for n in (500, 510, 490, 505, 495)]
    assert trend_warnings(_record(recorder.as_data(), 5.0, intervals=steady)) == []


def test_retryable_errors_are_the_transient_ones_and_relstorages_lock_timeouts():
    from relstorage.adapters.interfaces import (
        UnableToAcquireCommitLockError,
        UnableToLockRowsToReadCurrentError,
    )
    from ZODB.POSException import ConflictError, POSKeyError, ReadConflictError

    assert retryable(ConflictError())
    assert retryable(ReadConflictError())
    assert retryable(UnableToLockRowsToReadCurrentError("x"))
    assert retryable(UnableToAcquireCommitLockError("x"))
    assert not retryable(POSKeyError(b"x"))
    assert not retryable(ValueError())


def synthetic_run(latency_ms, seconds=10, per_second=200, seed=1, database="db"):
    """A saved-run-like RunResult of one database whose reads take about *latency_ms*."""
    from zodbshootout.mix.operations import Shape
    from zodbshootout.mix.worker import MixPlan
    from zodbshootout.results.mix import merge_reports
    from zodbshootout.results.record import RunResult

    rng = random.Random(seed)
    recorder = Recorder(("read",), start=0.0)
    gap = 1 / per_second
    for i in range(seconds * per_second):
        start = i * gap
        recorder.record("read", start, start, start + latency_ms / 1000 * rng.uniform(0.5, 1.5))
    recorder.close_intervals(seconds + 0.5)
    report = recorder.as_data()
    report.update(
        dict.fromkeys(
            ("worker", "unstarted", "increments", "warmup_increments", "uncertain_increments"), 0
        ),
        inserted=0,
        seconds=float(seconds),
        counters=None,
    )
    plan = MixPlan(parse_mix("read=1"), 10, Shape(1, 1, 16), seconds, 0, seed)
    result = RunResult([database], [10], [1], [], 1)
    result.mix.append(merge_reports(database, [report], plan, 1))
    result.metadata["mix"] = {"workload": "custom(read=1)"}
    return result


def test_compare_flags_a_doubled_p99_and_not_noise():
    from zodbshootout.results.mix_compare import compare_mix, slower_p99

    base = MixRun.of(synthetic_run(10.0, seed=1))
    rows = compare_mix(base, MixRun.of(synthetic_run(20.0, seed=2)))
    p99 = next(row for row in rows if row.metric == "p99")
    assert p99.ratio == pytest.approx(2.0, rel=0.1)
    assert p99.significant
    assert [row.database for row in slower_p99(rows, 50)] == ["db"]
    assert slower_p99(rows, 150) == []
    same = compare_mix(base, MixRun.of(synthetic_run(10.0, seed=3)))
    assert slower_p99(same, 20) == []


def test_a_saved_mix_run_loads_back_and_renders(tmp_path):
    from zodbshootout.render.formats import get_format
    from zodbshootout.results import file as resultfile

    result = synthetic_run(10.0)
    path = tmp_path / "run.json"
    resultfile.save(result, str(path))
    loaded = resultfile.load(str(path))
    assert loaded.mix == result.mix
    lines = get_format("table").mix(MixRun.of(loaded))
    assert lines[0].startswith("db: custom(read=1), 1 workers, 10.0 s")
    assert "p99.9 ms" in lines[1]


def test_compare_subcommand_fails_on_a_doubled_p99(tmp_path, capsys):
    from zodbshootout.cli.entry import main
    from zodbshootout.results import file as resultfile

    base, slow = tmp_path / "base.json", tmp_path / "slow.json"
    resultfile.save(synthetic_run(10.0, seed=1), str(base))
    resultfile.save(synthetic_run(20.0, seed=2), str(slow))
    assert main(["compare", str(base), str(base), "--fail-if-slower", "20"]) == 0
    capsys.readouterr()
    assert main(["compare", str(base), str(slow), "--fail-if-slower", "20"]) == 1
    out, err = capsys.readouterr()
    assert "p99 ms" in out
    assert "db: p99" in err
    assert "--fail-if-slower" in err


def test_plot_of_a_mix_run_draws_the_spectrum_and_latency_over_time(tmp_path):
    pytest.importorskip("matplotlib")
    from zodbshootout.render.mix_plot import plot_mix, spectrum

    result = synthetic_run(10.0)
    points = dict(spectrum(MixRecord.from_data(result.mix[0])))
    assert points[50.0] == pytest.approx(10.0, rel=0.05)
    assert points[99.9] >= points[99.0] >= points[50.0]
    assert 99.99 not in points  # 2000 transactions: one sample per 0.05 %
    path = tmp_path / "mix.png"
    plot_mix(MixRun.of(result), str(path))
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert path.stat().st_size > 20_000


def test_recorder_memory_stays_flat_over_a_30_second_run():
    # The benchmark's own measurement, smaller: 30 one-second intervals.
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "benchmarks"))
    try:
        import mix_record
    finally:
        sys.path.pop(0)
    (after_1, after_10, after_30), _peak = mix_record.memory_after_intervals(2000, (1, 10, 30))
    assert after_30 - after_1 < 64 * 1024, (after_1, after_10, after_30)


def test_history_of_mix_runs_lines_them_up(tmp_path, capsys):
    from zodbshootout.cli.entry import main
    from zodbshootout.results import file as resultfile

    paths = []
    for index, latency in enumerate((10.0, 20.0)):
        run = synthetic_run(latency, seed=index)
        run.metadata.update(started=1_700_000_000 + index * 60, label=f"run{index}")
        paths.append(str(tmp_path / f"run{index}.json"))
        resultfile.save(run, paths[-1])
    assert main(["history", *paths]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["database", "metric", "run0", "run1"]
    p50 = next(line.split() for line in lines if line.startswith("db") and "p50" in line)
    assert float(p50[3]) / float(p50[4]) == pytest.approx(0.5, rel=0.1)


@pytest.mark.parametrize(
    ("found", "says"),
    [
        (7, []),  # committed 5 + uncertain 2: all accounted for
        (10, ["3 object changes in the database were made by transactions that failed"]),
        (4, ["1 committed object changes are missing from the database"]),
    ],
)
def test_the_check_after_the_run_names_stray_and_lost_changes(found, says):
    from zodbshootout.render.formats import get_format

    result = synthetic_run(10.0)
    record = result.mix[0]
    record.update(increments=4, warmup_increments=1, uncertain_increments=2, changes_found=found)
    lines = get_format("table").mix(MixRun.of(result))
    notes = [line.strip() for line in lines if "object changes" in line]
    notes = [line for line in notes if "commits that failed with an error" not in line]
    assert [note.split(":")[0] for note in notes] == says


def test_a_mix_task_crosses_to_a_host_as_plain_data_and_back():
    import json

    from zodbshootout.concurrency.task import decode_task, encode_task
    from zodbshootout.config.loader import ConfigSource
    from zodbshootout.mix.operations import Shape
    from zodbshootout.mix.worker import MixPlan, MixTask

    plan = MixPlan(BUILTIN["conflicts"], 500, Shape(3, 20, 64), 2.0, 0.5, 7, rate_per_second=90.0)
    source = ConfigSource("<zodb db>\n</zodb>\n", "file:///x.conf", "/data")
    task = MixTask(source, "db", (("127.0.0.1", 9100),), 1, 3, plan, 30.0, count_loads=False)
    # execnet carries builtin values only; JSON is stricter still (no tuples).
    wire = json.loads(json.dumps(encode_task(task)))
    assert decode_task(wire) == task
    assert task.timed_waits() == [(1, "mix")]


def test_the_counting_pass_crosses_to_a_host_as_plain_data_and_back():
    import json

    from zodbshootout.concurrency.task import decode_task, encode_task
    from zodbshootout.config.loader import ConfigSource
    from zodbshootout.mix.counting import MixWorkTask
    from zodbshootout.mix.operations import Shape
    from zodbshootout.mix.worker import MixPlan

    plan = MixPlan(BUILTIN["ycsb-a"], 500, Shape(3, 20, 64), 2.0, 0.5, 7, insert_base=500)
    source = ConfigSource("<zodb db>\n</zodb>\n", "file:///x.conf", "/data")
    task = MixWorkTask(source, "db", (("127.0.0.1", 9100),), plan, 30.0, transactions=4)
    wire = json.loads(json.dumps(encode_task(task)))
    assert decode_task(wire) == task
    assert task.timed_waits() == []  # nothing timed


def test_a_task_class_from_outside_the_package_is_refused():
    from zodbshootout.concurrency.task import decode_task

    with pytest.raises(ValueError, match="not a task class"):
        decode_task({"class": "os:system", "fields": {}})


def test_the_table_says_where_the_workers_ran_and_a_large_skew():
    from zodbshootout.render.formats import get_format

    result = synthetic_run(10.0)
    place = {"hostname": "h", "net_namespace": None, "pid": 1}
    result.metadata["mix_workers"] = {
        "db": {"0": {"host": "app1", **place}, "1": {"host": "app2", **place}}
    }
    skew = {"database": "db", "concurrency": 1, "object_count": 10, "repetition": 1}
    result.metadata["barrier_skew"] = [{**skew, "phase": "mix", "skew_seconds": 0.01}]
    lines = get_format("table").mix(MixRun.of(result))
    assert "  workers on hosts: app1 1, app2 1" in lines
    assert not any("apart" in line for line in lines)  # 10 ms of 10 s
    result.metadata["barrier_skew"][0]["skew_seconds"] = 2.0
    lines = get_format("table").mix(MixRun.of(result))
    assert any("started measuring 2000 ms apart" in line for line in lines)
