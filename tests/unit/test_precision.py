"""The adaptive stopping rule: more rounds while a cell is imprecise and time remains."""

import pytest

from zodbshootout.options.run import StoppingRule
from zodbshootout.results.stats import is_precise, relative_half_width
from zodbshootout.run.precision import another_round, imprecise_cells

STEADY = [1000.0, 1001.0, 999.0]  # ±0.1 %: half-width about 0.25 %
NOISY = [1000.0, 1400.0, 700.0]


def test_half_width_follows_student_t():
    # mean 1000, stdev 1, n 3: t(0.975, 2) = 4.303; 4.303 / sqrt(3) / 1000
    assert relative_half_width(STEADY) == pytest.approx(4.303 / 3**0.5 / 1000, rel=1e-3)


def test_one_rate_has_no_half_width():
    assert relative_half_width([5.0]) is None
    assert not is_precise([5.0], 0.5)


def test_imprecise_cells_are_named_and_cells_without_rates_ignored():
    cells = {"steady": STEADY, "noisy": NOISY, "failed": []}
    assert imprecise_cells(cells, 0.05) == ["noisy"]


def test_minimum_repetitions_come_first():
    rule = StoppingRule(min_repetitions=3, relative_half_width=0.05, max_seconds=1)
    assert another_round(rule, 2, {"a": STEADY[:2]}, [10.0, 10.0])


def test_fixed_rule_stops_at_its_count():
    rule = StoppingRule(min_repetitions=3, relative_half_width=None)
    assert not another_round(rule, 3, {"a": NOISY}, [1.0] * 3)


def test_adaptive_rule_stops_when_every_cell_is_precise():
    rule = StoppingRule(relative_half_width=0.05, max_seconds=100)
    assert not another_round(rule, 3, {"a": STEADY, "b": STEADY}, [1.0] * 3)


def test_adaptive_rule_continues_while_a_cell_is_imprecise_and_time_remains():
    rule = StoppingRule(relative_half_width=0.05, max_seconds=100)
    assert another_round(rule, 3, {"a": STEADY, "b": NOISY}, [1.0] * 3)


def test_adaptive_rule_does_not_start_a_round_that_would_end_too_late():
    rule = StoppingRule(relative_half_width=0.05, max_seconds=10)
    # 3 rounds of 3 s: a fourth would end at 12 s.
    assert not another_round(rule, 3, {"b": NOISY}, [3.0] * 3)
    assert another_round(rule, 3, {"b": NOISY}, [2.0] * 3)
