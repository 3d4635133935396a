"""Confidence intervals, the t distribution and Welch's test, against known values."""

import math

import pytest
from sample_run import sample_result, with_noise

from zodbshootout.results.stats import (
    Stats,
    format_spread_warning,
    noisy_cells,
    regularized_incomplete_beta,
    student_t_cdf,
    student_t_quantile,
    welch_t_test,
)


@pytest.mark.parametrize("t", [-30.0, -2.5, -0.3, 0.0, 0.7, 1.0, 4.0, 100.0])
def test_t_cdf_with_one_degree_is_the_cauchy_distribution(t):
    assert student_t_cdf(t, 1) == pytest.approx(0.5 + math.atan(t) / math.pi, abs=1e-12)


@pytest.mark.parametrize("t", [-7.0, -1.2, 0.0, 0.5, 3.3])
def test_t_cdf_with_two_degrees_has_a_closed_form(t):
    assert student_t_cdf(t, 2) == pytest.approx(0.5 + t / (2 * math.sqrt(2 + t * t)), abs=1e-12)


@pytest.mark.parametrize(
    ("df", "quantile"),
    [  # Two-sided 95% critical values from standard tables.
        (1, 12.706204736),
        (2, 4.302652730),
        (4, 2.776445105),
        (10, 2.228138852),
        (30, 2.042272456),
    ],
)
def test_t_quantile_matches_tables(df, quantile):
    assert student_t_quantile(0.975, df) == pytest.approx(quantile, rel=1e-8)
    assert student_t_quantile(0.025, df) == pytest.approx(-quantile, rel=1e-8)


def test_t_quantile_approaches_the_normal_distribution():
    assert student_t_quantile(0.975, 1e6) == pytest.approx(1.959964, abs=1e-5)


def test_incomplete_beta_against_a_binomial_sum():
    # I_x(2, 3) = P(Binomial(4, x) >= 2) = 0.5248 at x = 0.4.
    assert regularized_incomplete_beta(2, 3, 0.4) == pytest.approx(0.5248, abs=1e-14)
    assert regularized_incomplete_beta(2, 3, 0.0) == 0.0
    assert regularized_incomplete_beta(2, 3, 1.0) == 1.0
    with pytest.raises(ValueError, match="x must lie"):
        regularized_incomplete_beta(2, 3, 1.5)


def test_ci95_of_three_rates():
    stats = Stats((90.0, 100.0, 110.0))
    # stddev 10, n 3: half width t(0.975, 2) × 10 / √3 = 24.841...
    assert stats.ci95_half_width == pytest.approx(4.302652730 * 10 / math.sqrt(3))
    low, high = stats.ci95
    assert (low, high) == pytest.approx((100 - 24.8414, 100 + 24.8414), abs=1e-3)
    assert stats.count == 3


def test_one_repetition_has_no_confidence_interval():
    assert Stats((100.0,)).ci95 is None


def test_welch_against_a_worked_example():
    # By hand: means 2.5 and 3.625, variances 5/3 and 2.229167, n 4 each:
    # t = -1.125 / sqrt(5/12 + 0.557292) = -1.13994, df = 5.877.
    test = welch_t_test((1.0, 2.0, 3.0, 4.0), (2.0, 3.0, 4.0, 5.5))
    assert test.t == pytest.approx(-1.13994, abs=1e-5)
    assert test.df == pytest.approx(5.8775, abs=1e-3)
    assert test.p_value == pytest.approx(2 * student_t_cdf(-1.13994, 5.8775), abs=1e-5)
    assert not test.significant()


def test_welch_finds_a_clear_difference():
    test = welch_t_test((100.0, 101.0, 99.0), (150.0, 151.0, 149.0))
    assert test.p_value < 0.001
    assert test.significant()


def test_identical_samples_do_not_differ():
    test = welch_t_test((1.0, 2.0, 3.0), (1.0, 2.0, 3.0))
    assert test.t == 0.0
    assert test.p_value == 1.0


def test_samples_without_spread():
    assert welch_t_test((5.0, 5.0), (5.0, 5.0)).p_value == 1.0
    assert welch_t_test((5.0, 5.0), (6.0, 6.0)).p_value == 0.0


def test_one_value_cannot_be_tested():
    assert welch_t_test((5.0,), (5.0, 6.0)) is None


def test_quiet_run_has_no_spread_warning():
    assert noisy_cells(sample_result()) == []
    assert format_spread_warning(sample_result()) == []


def test_noisy_cell_is_named_with_advice():
    # Rates ∝ 1, 0.654, 1.458 (durations × 1, 1.53, 0.686): relative stddev 0.389.
    noisy = with_noise(sample_result(), "postgresql", "cold", (1.0, 1.5, 0.7))
    cells = noisy_cells(noisy)
    assert [(key.database, key.phase) for key, _stats in cells] == [("postgresql", "cold")]
    lines = format_spread_warning(noisy)
    assert lines[0].startswith("warning: 1 cell(s) vary by more than 10%")
    assert lines[1] == "  postgresql, cold, 1000 objects: ±39%"
    assert "-r 6" in lines[2]
    assert "quieter machine" in lines[2]
