"""When to stop adding repetitions: the adaptive rule behind ``--precision``.

After the minimum number of repetitions, the runner adds one more round
(one repetition of every database) while some cell's mean rate is less
precise than asked — its 95 % confidence half-width (Student's t, see
zodbshootout.stats) exceeds the given fraction of the mean — and another
round still fits in the time allowed.  A fixed ``-r`` without ``--precision``
is the classic rule: exactly that many repetitions.  Pure functions: the
runner supplies the rates and the clock readings.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from zodbshootout.results import CellKey, RunResult
from zodbshootout.stats import Stats, cell_stats

#: Default --precision, in percent of the mean.
DEFAULT_PRECISION_PERCENT = 5.0
#: Default --max-time: seconds of measuring per object count and concurrency
#: level, enough for etc/local.conf to finish within a minute.
DEFAULT_MAX_SECONDS = 40.0
#: Repetitions before the rule is consulted: two rates give a t quantile of
#: 12.7, which makes almost any cell look imprecise.
DEFAULT_MIN_REPETITIONS = 3


@dataclass(frozen=True)
class StoppingRule:
    """How many repetitions a count and concurrency level gets.

    ``relative_half_width`` None means the fixed rule: ``min_repetitions``
    repetitions, no more.
    """

    min_repetitions: int = DEFAULT_MIN_REPETITIONS
    relative_half_width: float | None = DEFAULT_PRECISION_PERCENT / 100
    max_seconds: float = DEFAULT_MAX_SECONDS

    @property
    def adaptive(self) -> bool:
        return self.relative_half_width is not None

    def as_metadata(self, warmup: bool) -> dict[str, Any]:
        """The rule as the result file records it (the table reads ``precision``)."""
        return {
            "min_repetitions": self.min_repetitions,
            "precision": self.relative_half_width,
            "max_time_seconds": self.max_seconds if self.adaptive else None,
            "warmup": warmup,
        }


def relative_half_width(rates: Sequence[float]) -> float | None:
    """The 95 % confidence half-width of the mean rate as a fraction of it.

    None with fewer than two rates, or a mean of zero: no spread is known.
    """
    stats = Stats(tuple(rates))
    half = stats.ci95_half_width
    if half is None or not stats.mean:
        return None
    return half / stats.mean


def is_precise(rates: Sequence[float], goal: float) -> bool:
    """Whether the mean of *rates* is known within *goal* (a fraction, 0.05 = 5 %)."""
    width = relative_half_width(rates)
    return width is not None and width <= goal


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
