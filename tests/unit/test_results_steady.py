"""results.steady: fio's slope rule on the intervals' throughput; mix.steady's watch."""

from __future__ import annotations

import pathlib
import shutil
import statistics

import pytest

from zodbshootout.mix.steady import SteadyStop
from zodbshootout.results.steady import SteadyRule, describe, is_steady, relative_slope

RULE = SteadyRule(bound=0.01, window_seconds=6.0, max_seconds=60.0)


def test_the_relative_slope_is_the_least_squares_slope_over_the_mean():
    rates = [100.0, 98.0, 96.0, 94.0, 92.0]  # -2 per second, mean 96
    assert relative_slope(rates, 1.0) == pytest.approx(-2.0 / 96.0)
    # Two-second intervals: the same drop per interval is half the slope per second.
    assert relative_slope(rates, 2.0) == pytest.approx(-1.0 / 96.0)
    assert relative_slope([5.0, 5.0, 5.0], 1.0) == 0.0
    assert relative_slope([0.0, 0.0], 1.0) is None
    assert relative_slope([3.0], 1.0) is None


def test_a_flat_window_is_steady_once_it_is_full():
    flat = [1000.0, 1003.0, 998.0, 1001.0, 999.0, 1002.0]
    assert is_steady(RULE, flat[:5], 1.0) is None  # the window holds 6 intervals
    slope = is_steady(RULE, flat, 1.0)
    assert slope is not None
    assert abs(slope) <= 0.01
    # Only the last window counts: a warm-up before it is forgotten.
    assert is_steady(RULE, [100.0, 400.0, 700.0, *flat], 1.0) == pytest.approx(slope)


def test_a_drift_either_way_is_not_steady():
    falling = [1000.0 - 30 * i for i in range(12)]  # -3 % of the mean per second
    rising = list(reversed(falling))
    assert is_steady(RULE, falling, 1.0) is None
    assert is_steady(RULE, rising, 1.0) is None
    assert abs(relative_slope(falling[-6:], 1.0)) == pytest.approx(
        30 / statistics.fmean(falling[-6:])
    )


def test_the_window_holds_at_least_five_intervals():
    assert SteadyRule(0.01, 1.0, 10.0).window_intervals(1.0) == 5
    assert SteadyRule(0.01, 30.0, 100.0).window_intervals(2.0) == 15


def test_the_watch_touches_the_stop_file_once_and_says_so():
    said: list[str] = []
    watch = SteadyStop(RULE, 1.0, said.append, "sqlite")
    try:
        stop = pathlib.Path(watch.stop_file)
        # Nothing on disk until the run is steady: nothing a signal could leave behind.
        assert not stop.parent.exists()
        for transactions in (100, 400, 700, 1000, 1000, 1001, 999, 1000):
            watch.closed(transactions)
        assert not stop.exists()  # the last 6 still hold the climb
        for transactions in (1000, 1002, 998):
            watch.closed(transactions)
        assert stop.exists()
        assert watch.stopped_at == 9.0  # at the first full, flat window (seconds 4 to 9)
        outcome = watch.outcome()
        assert outcome["stopped_at_seconds"] == 9.0
        assert abs(outcome["slope_per_second"]) <= 0.01
        assert said == [line for line in said if line.startswith("sqlite: steady after 9 s")]
        assert len(said) == 1
        sentence = describe(outcome)
        assert sentence is not None
        assert sentence.startswith("until-steady: steady after 9 s of at most 60 s")
    finally:
        watch.close()
    assert not pathlib.Path(watch.stop_file).parent.exists()


def test_a_run_never_steady_says_it_ran_to_its_maximum():
    watch = SteadyStop(RULE, 1.0, lambda line: None, "pg")
    try:
        for i in range(20):
            watch.closed(1000 - 40 * i)
        outcome = watch.outcome()
        assert not pathlib.Path(watch.stop_file).parent.exists()
    finally:
        watch.close()
    assert outcome["stopped_at_seconds"] is None
    assert outcome["slope_per_second"] < -0.01
    sentence = describe(outcome)
    assert sentence is not None
    assert "not steady within 60 s" in sentence
    assert "ran to the maximum" in sentence


def test_a_directory_already_at_its_name_is_left_alone_and_the_run_not_stopped():
    """The watch stops the workers only through a directory it made itself."""
    watch = SteadyStop(RULE, 1.0, lambda line: None, "pg")
    theirs = pathlib.Path(watch.stop_file).parent
    theirs.mkdir()
    try:
        for _ in range(8):
            watch.closed(1000)  # flat: steady once the window is full
        assert watch.stopped_at is None
        assert watch.outcome()["stopped_at_seconds"] is None
        assert not pathlib.Path(watch.stop_file).exists()
        watch.close()
        assert theirs.is_dir()
    finally:
        shutil.rmtree(theirs, ignore_errors=True)  # also when the watch wrote in it
