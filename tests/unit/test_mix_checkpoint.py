"""mix.checkpoint: the intervals every worker closed, merged; a partial record when due."""

from __future__ import annotations

import pytest

from zodbshootout.mix.checkpoint import Checkpoints
from zodbshootout.mix.runner import _IntervalLines
from zodbshootout.results.histogram import decode, encode, new_histogram
from zodbshootout.results.mix import MixRecord

pytest.importorskip("hdrh", reason="hdrhistogram is not installed (pip install -e .)")


def _histogram(*values: int) -> str:
    histogram = new_histogram()
    for value in values:
        histogram.record_value(value)
    return encode(histogram)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_an_interval_counts_once_every_worker_closed_it_and_a_checkpoint_comes_when_due():
    saved = []
    clock = Clock()
    checkpoints = Checkpoints("db", "ycsb-b", 2, 1.0, 5.0, saved.append, clock)
    lines: list[str] = []
    progress = _IntervalLines("db", 2, 1.0, lines.append, checkpoints)
    for index in range(8):
        clock.now = index + 1.0
        progress.take(("interval", 0, index, 10, _histogram(100, 200)))
        assert len(checkpoints.intervals) == index  # worker 1 has not closed it yet
        progress.take(("interval", 1, index, 5, _histogram(5000)))
    assert len(lines) == 8
    assert len(saved) == 1  # at 5 s: the next close would be 6 s after the start
    record = MixRecord.from_data(saved[0])
    assert record.partial
    assert len(record.intervals) == 5
    assert record.intervals[0].transactions == 15
    assert record.intervals[0].max_us == pytest.approx(5000, rel=1e-3)
    total = decode(record.operations["all"].latency)
    assert total.get_total_count() == 3 * 5  # the histograms' values, each interval once
    assert record.operations["all"].count == 75


def _saves(
    every: float, closes: list[float], since: float | None = None, built_at: float = 0.0
) -> list[float]:
    """When a one-worker run whose intervals close at *closes* saves checkpoints."""
    clock = Clock()
    clock.now = built_at
    moments: list[float] = []
    checkpoints = Checkpoints(
        "db", "ycsb-b", 1, 1.0, every, lambda _r: moments.append(clock.now), clock, since
    )
    for index, moment in enumerate(closes):
        clock.now = moment
        checkpoints.closed(index, [(1, _histogram(10))])
    return moments


def test_no_gap_between_checkpoints_runs_over_the_cadence_however_late_intervals_close():
    """Intervals close a little after each second (the workers' last report comes
    late): saving at the first close past due let every gap run over by up to an
    interval and the cadence drift (65 s gaps at 60 s in a 10-minute soak)."""
    closes = [0.5 + index * 1.0 + (0.3 if index % 7 == 0 else 0.05) for index in range(600)]
    moments = _saves(60.0, closes)
    gaps = [b - a for a, b in zip([0.0, *moments], moments, strict=False)]
    assert len(moments) >= 9
    # Over only by how much later one close came than the one before (0.25 s here).
    assert max(gaps) <= 60.0 + 0.25
    assert sum(gaps) / len(gaps) <= 60.0  # no drift
    assert min(gaps) >= 59.0 - 0.3  # and not much earlier either: one save a minute


def test_the_cadence_counts_from_the_runs_last_save_not_from_this_databases_start():
    """The database before saved at 0; this one's dataset loaded from 40 to 45: its
    first checkpoint comes at 60, not a minute after its own start."""
    closes = [45.0 + index for index in range(130)]
    moments = _saves(60.0, closes, since=0.0, built_at=40.0)
    assert moments[0] == 60.0
    assert moments[1] - moments[0] <= 60.0


def test_after_a_restart_the_new_workers_intervals_follow_and_lines_count_on():
    saved = []
    checkpoints = Checkpoints("db", "ycsb-b", 1, 1.0, None, saved.append)
    lines: list[str] = []
    progress = _IntervalLines("db", 1, 1.0, lines.append, checkpoints)
    for index in range(3):
        progress.take(("interval", 0, index, 1, _histogram(10)))
    progress.next_stage()
    progress.take(("interval", 0, 0, 2, _histogram(10)))
    assert [i["transactions"] for i in checkpoints.intervals] == [1, 1, 1, 2]
    assert lines[-1].startswith("db:     4 s:")
    assert saved == []  # no --checkpoint: never saved


def test_a_soak_line_says_the_time_left():
    lines: list[str] = []
    progress = _IntervalLines("db", 1, 1.0, lines.append)
    progress.total_intervals = 7200
    progress.take(("interval", 0, 0, 1, _histogram(10)))
    assert lines[0].endswith(", 1:59:59 left")


def test_a_merge_into_a_reused_histogram_equals_the_librarys_decode_and_add():
    """The coordinator merges each interval into one histogram it empties and reuses
    (no cyclic garbage per interval): the same counts, bounds and percentiles as a new
    histogram that decodes and adds each one, however often it is reused."""
    import random

    from zodbshootout.results.histogram import encode, merge, new_histogram

    rng = random.Random(3)
    encoded = []
    for _ in range(3):
        histogram = new_histogram()
        for _ in range(500):
            histogram.record_value(int(rng.lognormvariate(8, 1.5)) + 1)
        encoded.append(encode(histogram))
    encoded.append("")  # an interval without a transaction
    expected = new_histogram()
    for text in encoded[:-1]:
        expected.decode_and_add(text)
    scratch = new_histogram()
    merge(encoded[:1], into=scratch)  # something to empty first
    for _ in range(2):
        union = merge(encoded, into=scratch)
        assert union is scratch
        assert union.get_total_count() == expected.get_total_count() == 1500
        assert union.get_min_value() == expected.get_min_value()
        assert union.get_max_value() == expected.get_max_value()
        for percentile in (50.0, 99.0, 99.9, 100.0):
            assert union.get_value_at_percentile(percentile) == expected.get_value_at_percentile(
                percentile
            )
        assert encode(union) == encode(expected)
