"""Fairness across a mix run's workers: Jain's index, shares, the starved threshold; shown."""

import math

import pytest

pytest.importorskip("hdrh", reason="hdrhistogram is not installed (pip install -e .)")

from zodbshootout.render import mix
from zodbshootout.render.formats import get_format
from zodbshootout.results.histogram import encode, new_histogram
from zodbshootout.results.mix import MixRecord, MixRun, WorkerTotals
from zodbshootout.results.mix_compare import FAIRNESS, WORKERS, compare_mix
from zodbshootout.results.mix_fairness import (
    STARVED_SHARE,
    fairness,
    jain_index,
    shares,
    starved,
    starved_warnings,
)


def test_jain_index_is_one_when_equal_and_one_over_n_when_one_takes_all():
    assert jain_index([5, 5, 5, 5]) == 1.0
    assert jain_index([8, 0, 0, 0]) == pytest.approx(1 / 4)
    # (1+3)^2 / (2 * (1+9)) = 16/20
    assert jain_index([1, 3]) == pytest.approx(0.8)
    assert jain_index([]) is None
    assert jain_index([0, 0]) is None  # nobody committed: no fairness to speak of


def test_shares_add_up_to_one():
    assert shares([1, 3]) == [0.25, 0.75]
    assert shares([0, 0]) == [0.0, 0.0]
    assert math.fsum(shares([7, 11, 13])) == pytest.approx(1.0)


def test_a_worker_is_starved_below_half_the_mean_and_not_at_it():
    assert STARVED_SHARE == 0.5
    # Mean 100: 50 is exactly half (not starved), 49 is below.
    assert starved([150, 100, 50]) == []
    assert starved([151, 100, 49]) == [2]
    assert starved([0, 0, 0]) == []  # a mean of 0 starves nobody
    # The threshold is a parameter: a stricter one flags more.
    assert starved([120, 100, 80], threshold=0.9) == [2]


def _latency(*microseconds: int) -> str:
    histogram = new_histogram()
    for value in microseconds:
        histogram.record_value(value)
    return encode(histogram)


def _record(counts, hosts=None, name="db", seconds=10.0):
    workers = tuple(
        WorkerTotals(
            worker=index,
            seconds=seconds,
            transactions=count,
            latency=_latency(*([1000] * count + [9000] * (index + 1))),
            increments=count,
            host=None if hosts is None else hosts[index],
        )
        for index, count in enumerate(counts)
    )
    return MixRecord(
        database=name,
        concurrency=len(counts),
        seconds=seconds,
        operations={},
        intervals=(),
        workers=workers,
    )


def test_fairness_of_a_record_names_the_starved_worker_and_its_host():
    record = _record([400, 380, 60, 410], hosts=["a", "a", "b", "b"])
    found = fairness(record)
    assert found.jain == pytest.approx(jain_index([400, 380, 60, 410]))
    assert found.min_share == pytest.approx(60 / 1250)
    assert found.max_share == pytest.approx(410 / 1250)
    assert [w.name for w in found.starved] == ["worker 2"]
    a, b = found.hosts
    assert (a.name, a.workers, a.transactions) == ("a", 2, 780)
    assert (b.name, b.workers, b.transactions) == ("b", 2, 470)
    assert a.per_second == pytest.approx(78.0)
    assert a.share + b.share == pytest.approx(1.0)
    (warning,) = starved_warnings(record)
    assert warning.startswith("db: worker 2 on host b is starved: 60 committed transactions")
    notes = mix.fairness_notes(record)
    assert notes[0].startswith("fairness: Jain's index 0.82 over 4 workers")
    assert notes[1].startswith("host a: 2 workers, 78.0 tx/s, p99 ")
    assert notes[-1] == f"warning: {warning}"


def test_no_fairness_with_one_worker_or_none_recorded():
    assert fairness(_record([100])) is None
    assert fairness(_record([])) is None
    assert mix.fairness_notes(_record([100])) == []


def test_the_per_worker_block_only_with_per_worker():
    record = _record([100, 50])
    plain = get_format("table").mix(MixRun((record,)))
    shown = get_format("table").mix(MixRun((record,), per_worker=True))
    assert not any(line.split()[:1] == ["worker"] for line in plain)
    header = next(line for line in shown if line.split()[:1] == ["worker"])
    assert header.split() == ["worker", "tx/s", "p99", "ms", "transactions", "share"]
    # 9 ms as HdrHistogram keeps it (3 significant digits, the bucket's top).
    assert any(line.split() == ["1", "5.0", "9.01", "50", "33.3%"] for line in shown), shown
    # The fairness line is there either way.
    assert any("fairness: Jain's index" in line for line in plain)


def test_compare_has_a_fairness_row_per_database():
    base = MixRun((_record([100, 100]),))
    changed = MixRun((_record([150, 50]),))
    rows = [row for row in compare_mix(base, changed) if row.metric == FAIRNESS]
    (row,) = rows
    assert (row.database, row.operation) == ("db", WORKERS)
    assert (row.base, row.changed) == (1.0, pytest.approx(0.8))
    assert row.worse_by == pytest.approx(0.25)  # higher is better
