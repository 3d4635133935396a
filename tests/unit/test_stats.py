"""Rates from raw timings: c × N ÷ mean worker duration, aggregated over repetitions."""

import math

import pytest

from zodbshootout.results.record import CellKey, Measurement, PhaseTiming, RunResult
from zodbshootout.results.stats import Stats, cell_stats, repetition_rate


def timing(seconds: float, worker: int = 0, objects: int = 100, phase: str = "add"):
    return PhaseTiming(phase, worker, seconds, objects, loads=0, storage_loads=0, cache_hits=None)


def test_repetition_rate_uses_mean_worker_duration():
    # Two workers, 100 objects each, taking 1 s and 3 s: 200 objects / 2 s.
    assert repetition_rate([timing(1.0, 0), timing(3.0, 1)]) == 100.0


def test_mean_and_min_aggregates():
    stats = Stats((100.0, 200.0, 300.0))
    assert stats.aggregate("mean") == 200.0
    # "min" is the classic best-of-N: the shortest duration, the highest rate.
    assert stats.aggregate("min") == 300.0
    assert stats.median == 200.0
    assert stats.stddev == pytest.approx(100.0)
    assert stats.relative_stddev == pytest.approx(0.5)


def test_single_repetition_has_no_spread():
    assert Stats((42.0,)).stddev == 0.0


def test_unknown_aggregate_is_rejected():
    with pytest.raises(ValueError, match="median"):
        Stats((1.0,)).aggregate("median")


def _result(measurements):
    return RunResult(
        databases=["db"],
        object_counts=[100],
        concurrencies=[2],
        phases=["add"],
        repetitions=2,
        measurements=measurements,
    )


def test_cell_stats_aggregates_per_repetition():
    result = _result(
        [
            Measurement("db", 2, 100, 1, timing(1.0, 0)),
            Measurement("db", 2, 100, 1, timing(1.0, 1)),
            Measurement("db", 2, 100, 2, timing(0.5, 0)),
            Measurement("db", 2, 100, 2, timing(1.5, 1)),
        ]
    )
    stats = cell_stats(result, CellKey("db", 2, 100, "add"))
    assert stats.rates == (200.0, 200.0)


def test_incomplete_repetition_is_not_a_rate():
    # One of two workers reported: that repetition can't give c × N ÷ duration.
    result = _result([Measurement("db", 2, 100, 1, timing(1.0, 0))])
    assert cell_stats(result, CellKey("db", 2, 100, "add")) is None


def test_zero_duration_is_infinite_not_an_error():
    assert math.isinf(repetition_rate([timing(0.0)]))
