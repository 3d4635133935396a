"""compare: both rates, the ratio in words, and Welch's verdict per cell."""

import pathlib

import pytest
from sample_run import sample_result, with_noise

from zodbshootout.compare import compare_results, format_comparison, format_ratio

GOLDEN = pathlib.Path(__file__).parent / "golden"


@pytest.mark.parametrize(
    ("ratio", "text"),
    [(1.32, "1.32x faster"), (1 / 1.1, "1.10x slower"), (1.001, "same"), (None, "-")],
)
def test_ratio_in_words(ratio, text):
    assert format_ratio(ratio) == text


def test_a_run_compared_with_itself_differs_nowhere():
    comparisons = compare_results(sample_result(), sample_result())
    measured = [c for c in comparisons if c.base is not None]
    assert len(measured) == 5
    assert all(c.ratio == 1.0 and c.significant is False for c in measured)
    assert format_comparison(comparisons)[-1] == "0 of 5 tested cells differ significantly."


def test_a_real_change_is_significant_and_noise_is_not():
    changed = sample_result(scale={"add": 0.5})  # add takes half the time
    changed = with_noise(changed, "postgresql", "cold", (1.05, 0.97, 1.0))
    by_cell = {(c.key.database, c.key.phase): c for c in compare_results(sample_result(), changed)}
    add = by_cell["postgresql", "add"]
    assert add.ratio == pytest.approx(2.0)
    assert add.significant is True
    cold = by_cell["postgresql", "cold"]
    assert cold.significant is False


def test_comparison_matches_golden():
    changed = sample_result(scale={"add": 0.5, "cold": 1.1})
    lines = format_comparison(compare_results(sample_result(), changed), "a.json", "b.json")
    assert "\n".join(lines) + "\n" == (GOLDEN / "compare.txt").read_text()


def test_single_repetitions_are_compared_but_not_tested():
    one = sample_result()
    one.measurements = [m for m in one.measurements if m.repetition == 1]
    comparisons = compare_results(one, one)
    assert comparisons[0].ratio == 1.0
    assert comparisons[0].significant is None
    assert "untested (needs 2+ repetitions on each side)" in format_comparison(comparisons)[1]


def test_a_database_only_in_one_run_is_listed():
    changed = sample_result()
    changed.databases = [*changed.databases, "sqlite"]
    comparisons = compare_results(sample_result(), changed)
    sqlite = [c for c in comparisons if c.key.database == "sqlite"]
    assert len(sqlite) == 3
    assert all(c.base is None and c.changed is None and c.ratio is None for c in sqlite)
