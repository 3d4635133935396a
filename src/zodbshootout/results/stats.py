"""Rates and their spread, computed from a RunResult's raw timings.

A repetition's duration is the mean of its workers' durations (of one loop:
a phase that repeats inside its sample divides the sample by its loops); its
rate is ``workers × objects ÷ duration`` objects per second.  A cell aggregates the
rates of its repetitions by their mean (default) or takes the fastest one
(``min``: the classic best-of-N).  Pure functions: no clock, no printing.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

from zodbshootout.results.record import CellKey, PhaseTiming, RunResult

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

    @property
    def count(self) -> int:
        """How many repetitions the statistics are computed from."""
        return len(self.rates)

    @cached_property
    def ci95_half_width(self) -> float | None:
        """Half the width of the 95% confidence interval of the mean rate.

        Student's t with n-1 degrees of freedom, because repetitions are few.
        None with a single repetition: one value says nothing about spread.
        """
        n = len(self.rates)
        if n < 2:
            return None
        return student_t_quantile(0.975, n - 1) * self.stddev / math.sqrt(n)

    @property
    def ci95(self) -> tuple[float, float] | None:
        """The 95% confidence interval of the mean rate (objects per second), or None."""
        half = self.ci95_half_width
        if half is None:
            return None
        return (self.mean - half, self.mean + half)

    def aggregate(self, how: str) -> float:
        """The cell's reported rate: the mean rate, or the fastest repetition's."""
        if how == "mean":
            return self.mean
        if how == "min":
            # Best of N: the repetition with the shortest duration, i.e. the highest rate.
            return self.max
        raise ValueError(f"unknown aggregate {how!r}; choose from {', '.join(AGGREGATES)}")


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


def repetition_rate(timings: list[PhaseTiming]) -> float:
    """Objects per second of one repetition: all workers' objects over their mean
    duration of one loop."""
    seconds = statistics.fmean(t.seconds / t.loops for t in timings)
    objects = sum(t.objects for t in timings)
    if seconds <= 0:
        return math.inf
    return objects / seconds


def cell_stats(result: RunResult, key: CellKey) -> Stats | None:
    """The statistics of one cell, or None if it has no complete repetition."""
    return stats_of(key, result.timings_for(key))


def complete_repetitions(
    key: CellKey, by_repetition: dict[int, list[PhaseTiming]]
) -> list[list[PhaseTiming]]:
    """The cell's repetitions in which every worker finished, in order."""
    return [
        timings
        for _rep, timings in sorted(by_repetition.items())
        if len(timings) == key.concurrency
    ]


def stats_of(key: CellKey, by_repetition: dict[int, list[PhaseTiming]]) -> Stats | None:
    """The statistics of a cell from its timings (see RunResult.cells), or None."""
    rates = tuple(repetition_rate(t) for t in complete_repetitions(key, by_repetition))
    return Stats(rates) if rates else None


# --- Spread warnings --------------------------------------------------------

#: Above this relative standard deviation a cell's mean is not to be trusted.
NOISY_RELATIVE_STDDEV = 0.10


def noisy_cells(
    result: RunResult, threshold: float = NOISY_RELATIVE_STDDEV
) -> list[tuple[CellKey, Stats]]:
    """The cells whose repetitions vary by more than *threshold* (relative stddev)."""
    found = []
    for key, timings in result.cells():
        stats = stats_of(key, timings)
        if stats is not None and stats.count > 1 and stats.relative_stddev > threshold:
            found.append((key, stats))
    return found


#: The noisy-cells warning names this many cells, then counts the rest.
NAMED_NOISY_CELLS = 5


def format_spread_warning(
    result: RunResult, threshold: float = NOISY_RELATIVE_STDDEV, every: bool = False
) -> list[str]:
    """Lines for stderr naming the noisy cells and what to do about them; [] if none.

    The first few cells are named and the rest counted, unless *every*
    (``show --verbose``): a busy machine makes every cell noisy, and 24
    lines would bury the advice.
    """
    noisy = noisy_cells(result, threshold)
    if not noisy:
        return []
    several_levels = len(result.concurrencies) > 1
    lines = [
        f"warning: {len(noisy)} cell(s) vary by more than {threshold:.0%} "
        "(relative standard deviation of the repetitions' rates):"
    ]
    named = noisy if every or len(noisy) <= NAMED_NOISY_CELLS + 1 else noisy[:NAMED_NOISY_CELLS]
    for key, stats in named:
        where = f"{key.database}, {key.phase}, {key.object_count} objects"
        if several_levels:
            where += f", concurrency {key.concurrency}"
        lines.append(f"  {where}: ±{stats.relative_stddev:.0%}")
    if len(named) < len(noisy):
        lines.append(f"  ... and {len(noisy) - len(named)} more (show --verbose lists every one)")
    rule = result.metadata.get("stopping_rule") or {}
    if rule.get("precision"):
        seconds = rule.get("max_time_seconds")
        more = (
            f"give them more time (--max-time {2 * seconds:g})" if seconds else "raise --max-time"
        )
    else:
        more = f"run more repetitions (-r {max(5, result.repetitions * 2)})"
    lines.append(
        f"  Their means are uncertain: {more}"
        " on a quieter machine (close other programs, no other benchmarks at the same time)."
    )
    return lines


# --- Student's t distribution -----------------------------------------------
# Enough of it for confidence intervals and Welch's t-test without scipy.


def regularized_incomplete_beta(a: float, b: float, x: float) -> float:
    """I_x(a, b), the regularized incomplete beta function, for a, b > 0 and 0 <= x <= 1.

    Evaluated with the continued fraction (modified Lentz), using the symmetry
    I_x(a, b) = 1 - I_{1-x}(b, a) where the fraction converges slowly.
    """
    if not 0.0 <= x <= 1.0:
        raise ValueError(f"x must lie in [0, 1], not {x!r}")
    if x in (0.0, 1.0):
        return x
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    if x > (a + 1.0) / (a + b + 2.0):
        return 1.0 - regularized_incomplete_beta(b, a, 1.0 - x)
    return math.exp(log_front) * _beta_continued_fraction(a, b, x) / a


def _beta_continued_fraction(a: float, b: float, x: float) -> float:
    tiny = 1e-300
    c = 1.0
    d = 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    fraction = d
    for m in range(1, 500):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            fraction *= c * d
        if abs(c * d - 1.0) < 1e-15:
            break
    return fraction


def student_t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t distribution with *df* (> 0, may be fractional) degrees."""
    if df <= 0:
        raise ValueError(f"degrees of freedom must be positive, not {df!r}")
    if math.isinf(t):
        return 1.0 if t > 0 else 0.0
    tail = 0.5 * regularized_incomplete_beta(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t > 0 else tail


def student_t_quantile(p: float, df: float) -> float:
    """The t with P(T <= t) = p: inverts :func:`student_t_cdf` by bisection."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must lie in (0, 1), not {p!r}")
    if p < 0.5:
        return -student_t_quantile(1.0 - p, df)
    low, high = 0.0, 1.0
    while student_t_cdf(high, df) < p:
        high *= 2.0
    for _ in range(200):
        middle = (low + high) / 2.0
        if student_t_cdf(middle, df) < p:
            low = middle
        else:
            high = middle
        if high - low < 1e-12 * max(1.0, high):
            break
    return (low + high) / 2.0


@dataclass(frozen=True)
class TTest:
    """Welch's t-test of two samples: the statistic, its degrees of freedom, the p-value."""

    t: float
    df: float
    p_value: float  # two-sided

    def significant(self, alpha: float = 0.05) -> bool:
        return self.p_value < alpha


def welch_t_test(a: tuple[float, ...], b: tuple[float, ...]) -> TTest | None:
    """Welch's unequal-variance t-test of the means of *a* and *b*.

    None when either sample has fewer than two values (no variance to test
    against).  Two samples without any spread are different for certain if
    their means differ and the same otherwise.
    """
    if len(a) < 2 or len(b) < 2:
        return None
    mean_a, mean_b = statistics.fmean(a), statistics.fmean(b)
    var_a = statistics.variance(a) / len(a)
    var_b = statistics.variance(b) / len(b)
    if var_a + var_b == 0.0:
        if mean_a == mean_b:
            return TTest(0.0, math.inf, 1.0)
        return TTest(math.copysign(math.inf, mean_a - mean_b), math.inf, 0.0)
    t = (mean_a - mean_b) / math.sqrt(var_a + var_b)
    df = (var_a + var_b) ** 2 / (var_a**2 / (len(a) - 1) + var_b**2 / (len(b) - 1))
    p_value = 2.0 * (1.0 - student_t_cdf(abs(t), df))
    return TTest(t, df, min(1.0, max(0.0, p_value)))
