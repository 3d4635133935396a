"""The scaling fit (time ∝ N^k) on synthetic sizes, and the maintain table's rows."""

from __future__ import annotations

import math
import random

import pytest

from zodbshootout.render.maintenance import text_rows
from zodbshootout.results.maintenance import (
    MaintenanceRun,
    OperationRecord,
    fit_exponent,
    scaling_fits,
)


def test_an_exact_power_law_gives_its_exponent_with_no_width():
    sizes = [1e4, 1e5, 1e6]
    k, low, high = fit_exponent(sizes, [3e-6 * n**1.25 for n in sizes])
    assert k == pytest.approx(1.25)
    assert high - low == pytest.approx(0, abs=1e-9)


def test_a_noisy_power_law_is_inside_its_interval():
    rng = random.Random(4)
    sizes = [1e4, 3e4, 1e5, 3e5, 1e6]
    seconds = [2e-6 * n**0.9 * math.exp(rng.gauss(0, 0.1)) for n in sizes]
    k, low, high = fit_exponent(sizes, seconds)
    assert low < 0.9 < high
    assert low < k < high
    assert high - low < 0.5


def test_the_interval_is_students_for_three_sizes():
    # ln sizes 0, 1, 2; ln seconds 0, 1.5, 2 -> slope 1, residuals ±1/6, ∓1/3.
    sizes = [1.0, math.e, math.e**2]
    k, _low, high = fit_exponent(sizes, [1.0, math.exp(1.5), math.exp(2.0)])
    assert k == pytest.approx(1.0)
    error = math.sqrt((1 / 36 + 1 / 9 + 1 / 36) / 1 / 2)
    assert high - k == pytest.approx(12.706 * error)


def test_fewer_than_three_sizes_are_no_fit():
    with pytest.raises(ValueError, match="three distinct sizes"):
        fit_exponent([1e4, 1e4, 1e5], [1.0, 1.1, 2.0])
    records = [OperationRecord("fs", "pack", n, seconds=n / 1e4) for n in (1000, 2000)]
    assert scaling_fits(records) == []


def test_the_table_fits_each_database_and_operation_and_says_why_a_cell_is_empty():
    records = [OperationRecord("fs", "pack", n, seconds=1e-5 * n) for n in (1000, 10_000, 100_000)]
    records.append(OperationRecord("fs", "reindex", 1000, reason="not applicable: no index"))
    run = MaintenanceRun(records, scaling_fits(records), [], [])
    rows, notes = text_rows(run)
    assert rows[0][:4] == ["database", "operation", "objects", "seconds"]
    assert rows[-1][3] == "[1]"
    assert notes[0] == "[1] fs reindex: not applicable: no index"
    assert notes[1].startswith("fs pack: time ∝ N^k, k = 1.00 (95 % interval 1.00 … 1.00)")
