"""Rates and their spread, computed from a RunResult's raw timings.

A repetition's duration is the mean of its workers' durations; its rate is
``workers × objects ÷ duration`` objects per second.  A cell aggregates the
rates of its repetitions by their mean (default) or takes the fastest one
(``min``: the classic best-of-N).  Pure functions: no clock, no printing.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from functools import cached_property

from zodbshootout.results import CellKey, PhaseTiming, RunResult

AGGREGATES = ("mean", "min")


@dataclass(frozen=True)
class Stats:
    """Statistics of one cell's per-repetition rates (objects per second)."""

    rates: tuple[float, ...]

    @cached_property
    def mean(self) -> float:
        return statistics.fmean(self.rates)

    @cached_property
    def stddev(self) -> float:
        return statistics.stdev(self.rates) if len(self.rates) > 1 else 0.0

    @property
    def min(self) -> float:
        return min(self.rates)

    @property
    def max(self) -> float:
        return max(self.rates)

    @cached_property
    def median(self) -> float:
        return statistics.median(self.rates)

    @property
    def relative_stddev(self) -> float:
        return self.stddev / self.mean if self.mean else math.inf

    def aggregate(self, how: str) -> float:
        """The cell's reported rate: the mean rate, or the fastest repetition's."""
        if how == "mean":
            return self.mean
        if how == "min":
            # Best of N: the repetition with the shortest duration, i.e. the highest rate.
            return self.max
        raise ValueError(f"unknown aggregate {how!r}; choose from {', '.join(AGGREGATES)}")


def repetition_rate(timings: list[PhaseTiming]) -> float:
    """Objects per second of one repetition: all workers' objects over their mean duration."""
    seconds = statistics.fmean(t.seconds for t in timings)
    objects = sum(t.objects for t in timings)
    if seconds <= 0:
        return math.inf
    return objects / seconds


def cell_stats(result: RunResult, key: CellKey) -> Stats | None:
    """The statistics of one cell, or None if it has no complete repetition."""
    by_repetition = result.timings_for(key)
    rates = tuple(
        repetition_rate(timings)
        for _rep, timings in sorted(by_repetition.items())
        if len(timings) == key.concurrency
    )
    return Stats(rates) if rates else None
