"""--until-steady: fio's steady-state stop rule on a mix's throughput.  Pure functions.

fio's ``--steadystate=iops_slope:0.3%`` ends a job once the least-squares
slope of its IOPS over a window (``ss_dur``) is at most 0.3 % of their
mean, per second.  Here the same on the transactions per second of the
closed intervals: the window is the run's minimum duration
(``--min-duration``), its last W intervals; the rule is first asked once W
intervals are closed, then at each interval after; a run that never
satisfies it goes on to ``--duration``, its maximum.  A throughput that
drifts either way (a decay, a warm-up) keeps its slope above the bound.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

#: The fewest intervals the window may hold: a slope over fewer is noise.
MIN_WINDOW_INTERVALS = 5


@dataclass(frozen=True)
class SteadyRule:
    """Stop once |slope| ≤ *bound* × mean per second over the last *window_seconds*.

    *bound*: a fraction per second (0.003 for fio's 0.3 %); *window_seconds*:
    the minimum duration, which the window spans.
    """

    bound: float
    window_seconds: float
    max_seconds: float

    def window_intervals(self, interval_seconds: float) -> int:
        return max(MIN_WINDOW_INTERVALS, round(self.window_seconds / interval_seconds))

    def as_data(self) -> dict[str, Any]:
        return {
            "slope_bound_per_second": self.bound,
            "min_seconds": self.window_seconds,
            "max_seconds": self.max_seconds,
        }


def relative_slope(rates: Sequence[float], interval_seconds: float) -> float | None:
    """The least-squares slope of *rates* (one per interval) per second, over their mean.

    None when the mean is zero or the rates are fewer than two.
    """
    if len(rates) < 2:
        return None
    mean = statistics.fmean(rates)
    if mean <= 0:
        return None
    times = [(index + 1) * interval_seconds for index in range(len(rates))]
    if len(set(rates)) < 2:
        return 0.0
    slope, _intercept = statistics.linear_regression(times, rates)
    return slope / mean


def is_steady(rule: SteadyRule, rates: Sequence[float], interval_seconds: float) -> float | None:
    """The window's relative slope when the run is steady by *rule*, else None.

    *rates*: every closed interval's transactions per second so far.
    """
    window = rule.window_intervals(interval_seconds)
    if len(rates) < window:
        return None
    slope = relative_slope(rates[-window:], interval_seconds)
    if slope is None or abs(slope) > rule.bound:
        return None
    return slope


def describe(found: dict[str, Any]) -> str | None:
    """The stop rule's outcome in one sentence, or None for a run without the rule."""
    if not found:
        return None
    bound = found["slope_bound_per_second"]
    at = found.get("stopped_at_seconds")
    if at is not None:
        return (
            f"until-steady: steady after {at:g} s of at most {found['max_seconds']:g} s: "
            f"throughput's slope over the last {found['min_seconds']:g} s was "
            f"{found['slope_per_second']:+.2%}/s of its mean (bound {bound:.2%}/s)"
        )
    last = found.get("slope_per_second")
    shown = "?" if last is None else f"{last:+.2%}/s"
    return (
        f"until-steady: not steady within {found['max_seconds']:g} s: the last window's "
        f"slope was {shown} of its mean (bound {bound:.2%}/s); ran to the maximum"
    )
