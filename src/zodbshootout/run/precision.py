"""When to stop adding repetitions: the adaptive rule behind ``--precision``.

After the minimum number of repetitions, the runner adds one more round
(one repetition of every database) while some cell's mean rate is less
precise than asked — its 95 % confidence half-width (Student's t, see
zodbshootout.results.stats) exceeds the given fraction of the mean — and another
round still fits in the time allowed.  A fixed ``-r`` without ``--precision``
is the classic rule: exactly that many repetitions.  Pure functions: the
runner supplies the rates and the clock readings.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from zodbshootout.options.run import StoppingRule
from zodbshootout.results.record import CellKey, RunResult
from zodbshootout.results.stats import cell_stats, is_precise


def imprecise_cells(cells: Mapping[Any, Sequence[float]], goal: float) -> list[Any]:
    """The cells whose mean is not yet within *goal*; cells without rates don't count."""
    return [key for key, rates in cells.items() if rates and not is_precise(rates, goal)]


def another_round(
    rule: StoppingRule,
    rounds_done: int,
    cells: Mapping[Any, Sequence[float]],
    round_seconds: Sequence[float],
    spent_before: float = 0.0,
) -> bool:
    """Whether to measure one more round.

    *round_seconds* are the durations of the rounds done so far, after
    *spent_before* seconds of other work (the warm-up); the next round is
    expected to last as long as their mean (as the warm-up, before the
    first), and is started only if it ends within ``rule.max_seconds``.
    """
    if rounds_done < rule.min_repetitions:
        return True
    if rule.relative_half_width is None:
        return False
    if not imprecise_cells(cells, rule.relative_half_width):
        return False
    spent = spent_before + sum(round_seconds)
    expected = statistics.fmean(round_seconds) if round_seconds else spent_before
    return spent + expected <= rule.max_seconds


def round_rates(
    result: RunResult, databases: Sequence[str], object_count: int, concurrency: int
) -> dict[CellKey, tuple[float, ...]]:
    """The per-repetition rates of the cells of these databases at one level."""
    cells: dict[CellKey, tuple[float, ...]] = {}
    for database in databases:
        for phase in result.phases:
            key = CellKey(database, concurrency, object_count, phase)
            stats = cell_stats(result, key)
            cells[key] = stats.rates if stats is not None else ()
    return cells
