"""Did a long mix run decay, and what moved with it?  Pure functions of a mix record.

For throughput and p99 over the run's intervals (those before a restart):
the change from the first third's mean to the last third's, with a 95 %
confidence interval (:class:`Step`).  Consecutive intervals are not
independent (a slow second tends to follow a slow second), so each third
counts as an effective number of intervals, n·(1 − ρ)/(1 + ρ) with ρ the
lag-1 autocorrelation of what is left around a line through it, with
Student's t.  A drift is reported only when the whole interval lies beyond
:data:`MATERIAL_CHANGE` (p99: :data:`MATERIAL_P99_CHANGE`, as a ratio) and
the medians of the run's thirds agree: a change that is "significant" but
2 % over two hours is steady, and so is one that a few slow seconds made.
The least-squares line through the run (:func:`fit`) is kept beside it,
for its slope: a decay that falls fast and levels off fits no line.

When something drifted, every sampled series is put on the intervals'
time axis and ranked by the absolute value of its correlation with the
drifting value: a gauge (objects, bytes, rows, connections) as its level,
a counter (blocks read, loads, commits) as its increase per committed
transaction of the interval, so that a counter that only follows the
throughput (commits) stays flat and one that does more work per
transaction (blocks read as tables bloat) rises.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from zodbshootout.results.mix import MixRecord, Series, is_counter

#: A drift is material when the last third differs from the first by at least
#: this fraction of the first's mean, at the near end of its 95 % interval.
MATERIAL_CHANGE = 0.10
#: The same for p99, as a ratio: an interval's p99 rests on its slowest 1 %, a
#: few dozen transactions, and a busy machine moves it by tens of percent.
MATERIAL_P99_CHANGE = 0.25
#: A counter moving by less than this per committed transaction is not named.
MIN_PER_TRANSACTION = 0.01
#: Fewer intervals than this: no verdict.
MIN_INTERVALS = 8
#: Series named as moving with a drift: |r| at least this, at most this many.
MIN_CORRELATION = 0.5
MAX_CAUSES = 3


def t_quantile(p: float, df: float) -> float:
    """Student's t quantile (p > 0.5) for *df* degrees of freedom, by bisection on its CDF.

    The CDF is the regularized incomplete beta function, integrated here
    with Simpson's rule on the density (exact enough for a confidence
    interval: 1e-6 where tables give 3 digits).
    """
    if df > 1e4:
        return statistics.NormalDist().inv_cdf(p)
    log_c = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)

    def density(x: float) -> float:
        return math.exp(log_c - (df + 1) / 2 * math.log1p(x * x / df))

    def cdf(x: float) -> float:  # x >= 0
        steps = 400
        h = x / steps
        total = density(0) + density(x)
        for i in range(1, steps):
            total += density(i * h) * (4 if i % 2 else 2)
        return 0.5 + total * h / 3

    low, high = 0.0, 1.0
    while cdf(high) < p:
        high *= 2
    for _ in range(60):
        middle = (low + high) / 2
        if cdf(middle) < p:
            low = middle
        else:
            high = middle
    return (low + high) / 2


@dataclass(frozen=True)
class Slope:
    """A least-squares line through (t, value): per second, with its 95 % interval.

    *log*: the values are logarithms (p99), and a change is a ratio, not a
    difference over the mean.
    """

    slope: float
    low: float
    high: float
    mean: float
    seconds: float  # the span of t the line covers
    n: int
    effective_n: float
    log: bool = False

    def _change(self, slope: float) -> float:
        if self.log:
            return math.expm1(min(slope * self.seconds, 50.0))
        return slope * self.seconds / self.mean if self.mean else 0.0

    @property
    def change(self) -> float:
        """The line's change over the span, as a fraction (of the mean, or of the start)."""
        return self._change(self.slope)

    @property
    def change_low(self) -> float:
        return self._change(self.low)

    @property
    def change_high(self) -> float:
        return self._change(self.high)


def fit(times: Sequence[float], values: Sequence[float], log: bool = False) -> Slope | None:
    """The line through the points with its autocorrelation-aware 95 % interval, or None."""
    n = len(values)
    if n < MIN_INTERVALS or len(set(values)) < 2:
        return None
    slope, intercept = statistics.linear_regression(times, values)
    residuals = [v - (intercept + slope * t) for t, v in zip(times, values, strict=True)]
    mean_t = statistics.fmean(times)
    sxx = math.fsum((t - mean_t) ** 2 for t in times)
    sse = math.fsum(r * r for r in residuals)
    rho = 0.0
    if sse > 0:
        rho = math.fsum(a * b for a, b in itertools.pairwise(residuals)) / sse
    rho = min(max(rho, 0.0), 0.95)  # a negative one would narrow the interval: not trusted
    effective = max(3.0, n * (1 - rho) / (1 + rho))
    # The slope's standard error, its variance scaled up by n / effective.
    error = math.sqrt(sse / (n - 2) / sxx * n / effective) if sxx > 0 else math.inf
    half = t_quantile(0.975, effective - 2 if effective > 3 else 1.0) * error
    return Slope(
        slope,
        slope - half,
        slope + half,
        statistics.fmean(values),
        times[-1] - times[0],
        n,
        effective,
        log,
    )


@dataclass(frozen=True)
class Step:
    """The last third of the intervals against the first: the change, with its 95 % interval.

    What a verdict rests on.  A line through a decay that drops fast and
    levels off (most real ones: a table's dead rows, an index's depth) fits
    badly, its residuals run in long streaks, and their autocorrelation
    widens its interval past any bound: a rate that fell from 35 to 6 per
    second was "no decay" by the line.  Two thirds' means, each with the
    effective count of its own intervals (its noise taken around a line
    through it), tell a level that moved from a level that wandered,
    whatever the shape between.
    *log*: the values are logarithms (p99), the change a ratio.
    """

    change: float
    low: float
    high: float
    log: bool = False

    @property
    def material(self) -> float:
        return MATERIAL_P99_CHANGE if self.log else MATERIAL_CHANGE

    @property
    def rose(self) -> bool:
        """The whole 95 % interval raises the value by the material change or more."""
        return self.low >= self.material

    @property
    def fell(self) -> bool:
        """The whole 95 % interval lowers the value by the material change or more."""
        return self.high <= -self.material

    def as_data(self) -> dict[str, Any]:
        return {"change": self.change, "change_ci95": [self.low, self.high], "log": self.log}


def _effective(values: Sequence[float]) -> tuple[float, float]:
    """(mean, variance of that mean) of one third of the intervals.

    Its noise is what is left around a line through it: a decay inside the
    third is no noise (the third that holds the fall of a fast decay would
    otherwise look as noisy as a run that wanders).  What is left is
    autocorrelated as the run wanders, so the mean's variance uses the
    effective count n·(1 − ρ)/(1 + ρ), as the line does (see fit).
    """
    n = len(values)
    mean = statistics.fmean(values)
    positions = range(n)
    if len(set(values)) < 2:
        return mean, 0.0
    slope, intercept = statistics.linear_regression(positions, values)
    left = [value - (intercept + slope * x) for x, value in zip(positions, values, strict=True)]
    squares = sum(d * d for d in left)
    rho = sum(a * b for a, b in itertools.pairwise(left)) / squares if squares else 0.0
    rho = min(max(rho, 0.0), 0.99)
    effective = max(2.0, n * (1 - rho) / (1 + rho))
    return mean, squares / max(n - 2, 1) / effective


def step(values: Sequence[float], log: bool = False) -> Step | None:
    """The first third's mean against the last third's, or None (too few, or no level)."""
    third = len(values) // 3
    if len(values) < MIN_INTERVALS or third < 3:
        return None
    first, first_variance = _effective(values[:third])
    last, last_variance = _effective(values[-third:])
    if not log and first <= 0:
        return None
    half = t_quantile(0.975, 2 * third - 4) * math.sqrt(first_variance + last_variance)
    moved = last - first

    def change(difference: float) -> float:
        return math.expm1(min(difference, 50.0)) if log else difference / first

    return Step(change(moved), change(moved - half), change(moved + half), log)


def series_on_intervals(
    series: Series, times: Sequence[float], counter: bool
) -> list[float] | None:
    """*series* at each of *times*: a counter's rate per second, a gauge's level.

    Each time takes the last sample at or before it (samples come when an
    interval closes); None when the series has too few samples.
    """
    if len(series.t) < 3:
        return None
    samples = list(zip(series.t, series.values, strict=True))
    values: list[float] = []
    j = 0
    previous: tuple[float, float] | None = None
    for t in times:
        while j + 1 < len(samples) and samples[j + 1][0] <= t + 1e-9:
            j += 1
        at, value = samples[j]
        if counter:
            if previous is None or at <= previous[0]:
                rate = math.nan
            else:
                rate = (value - previous[1]) / (at - previous[0])
            previous = (at, value)
            values.append(rate)
        else:
            values.append(float(value))
    return values


def correlation(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Pearson's r over the pairs where both are numbers; None if either doesn't vary."""
    pairs = [(x, y) for x, y in zip(xs, ys, strict=True) if not (math.isnan(x) or math.isnan(y))]
    if len(pairs) < MIN_INTERVALS:
        return None
    try:
        return statistics.correlation([x for x, _ in pairs], [y for _, y in pairs])
    except statistics.StatisticsError:
        return None


def _interval_values(
    record: MixRecord,
) -> tuple[list[float], list[float], list[float], list[float]]:
    """(times, throughput per second, p99 times, p99 in ms) of the record's intervals."""
    length = record.interval_length_seconds
    restart = record.restart or {}
    after, gap = restart.get("after_interval"), restart.get("gap_seconds") or 0.0
    times = [
        (index + 1) * length + (gap if after is not None and index >= after else 0.0)
        for index in range(len(record.intervals))
    ]
    rates = [interval.transactions / length for interval in record.intervals]
    p99_times = [t for t, i in zip(times, record.intervals, strict=True) if i.p99_us is not None]
    p99 = [i.p99_us / 1000 for i in record.intervals if i.p99_us is not None]
    return times, rates, p99_times, p99


def _judged_values(
    record: MixRecord,
) -> tuple[list[float], list[float], list[float], list[float]]:
    """_interval_values up to a restart: new processes after it would hide what it cured."""
    times, rates, p99_times, p99 = _interval_values(record)
    at = (record.restart or {}).get("after_interval")
    if at is None:
        return times, rates, p99_times, p99
    p99_times = [t for t in p99_times if t <= times[at - 1]] if at else []
    return times[:at], rates[:at], p99_times, p99[: len(p99_times)]


def _whole_run(record: MixRecord, name: str) -> tuple[list[float], list[float], dict[float, float]]:
    """The decaying value on every interval, those after a restart too, to rank series on.

    The restart is the experiment that tells them apart: a series of the
    client's that new processes brought back down while the rate stayed
    down (its memory, during a server's decay) stops moving with the decay;
    one that kept growing (the server's dead rows) still does.
    """
    times, rates, p99_times, p99 = _interval_values(record)
    per_second = dict(zip(times, rates, strict=True))
    if name == "throughput":
        return times, rates, per_second
    return p99_times, [math.log(max(value, 1e-3)) for value in p99], per_second


def _slope_data(slope: Slope | None) -> dict[str, Any] | None:
    if slope is None:
        return None
    return {
        "slope_per_second": slope.slope,
        "ci95": [slope.low, slope.high],
        "mean": slope.mean,
        "change": slope.change,
        "change_ci95": [slope.change_low, slope.change_high],
        "intervals": slope.n,
        "effective_intervals": round(slope.effective_n, 1),
        "log": slope.log,
    }


def drift(record: MixRecord) -> dict[str, Any]:
    """The record's drift verdict as plain data (stored in the record as ``drift``).

    ``verdict``: "decaying" (throughput fell or p99 rose: the last third
    against the first, the whole 95 % interval beyond MATERIAL_CHANGE, the
    thirds' medians agreeing), "busier machine" (a decay that the machine's
    CPU wait rose with: ``machine`` names the series), "steady" (no decay;
    ``improved`` names what got better: a warm-up, or a machine that freed
    up) or "too short";
    ``steps``: those changes (:class:`Step`); ``throughput``, ``p99_ms``:
    the lines' fits (p99's on a log scale); ``moved_with``: the series
    ranked by |r| with the decaying value.  A run with --restart-clients is
    judged before the restart (``before_restart``).
    """
    times, rates, p99_times, p99 = _judged_values(record)
    log_p99 = [math.log(max(value, 1e-3)) for value in p99]
    throughput = fit(times, rates)
    latency = fit(p99_times, log_p99, log=True)
    rate_step = step(rates) if throughput is not None else None
    p99_step = step(log_p99, log=True) if latency is not None else None
    found: dict[str, Any] = {
        "throughput": _slope_data(throughput),
        "p99_ms": _slope_data(latency),
        "steps": {
            key: entry.as_data()
            for key, entry in (("throughput", rate_step), ("p99_ms", p99_step))
            if entry is not None
        },
        "judged_seconds": len(times) * record.interval_length_seconds,
        "before_restart": (record.restart or {}).get("after_interval") is not None,
        "moved_with": [],
        "improved": [],
    }
    if throughput is None and latency is None:
        found["verdict"] = "too short"
        return found
    decays = []
    if rate_step is not None and rate_step.fell and _thirds(rates, -MATERIAL_CHANGE):
        decays.append(("throughput", times, rates))
    if p99_step is not None and p99_step.rose and _thirds(p99, MATERIAL_P99_CHANGE):
        decays.append(("p99_ms", p99_times, log_p99))
    # Better: more throughput, a lower p99 (a warm-up, or the machine freed up).
    found["improved"] = [
        name
        for name, moved in (("throughput", rate_step), ("p99_ms", p99_step))
        if moved is not None and (moved.fell if moved.log else moved.rose)
    ]
    found["verdict"] = "decaying" if decays else "steady"
    if decays:
        name, xs, ys = decays[0]
        found["moved_with"] = _moved_with(record, name, *_whole_run(record, name))
        busier = _machine_busier(record, name, xs, ys)
        # The machine explains it only when no series of the database's moved as
        # closely: a local server that works harder makes the machine busier too.
        closest = max((abs(entry["r"]) for entry in found["moved_with"]), default=0.0)
        if busier is not None and abs(busier["r"]) > closest:
            found["verdict"] = "busier machine"
            found["machine"] = busier
    return found


#: The machine's CPU series that tell a busier machine, in the order they are asked.
#: ``cpu_wait_ratio``: the workers' own (their mean); the others the runner's.
MACHINE_SERIES = ("cpu_wait_ratio", "machine.cpu_pressure", "machine.load_1min")
MACHINE_LEAVES = frozenset(name.rsplit(".", 1)[-1] for name in MACHINE_SERIES)
#: A machine series explains a decay when its last third's median is this many
#: times its first third's (and above it by MACHINE_MIN_RISE), moving with the decay.
MACHINE_RISE = 1.25
MACHINE_MIN_RISE = 0.05


def _machine_busier(
    record: MixRecord, what: str, times: Sequence[float], values: Sequence[float]
) -> dict[str, Any] | None:
    """The machine series that rose with the decay (|r| ≥ MIN_CORRELATION), or None.

    A decay the workers' CPU wait explains is the machine's: a slower database
    makes a worker wait on its socket, not on a run queue.
    """
    for name in MACHINE_SERIES:
        aligned = _machine_values(record, name, times)
        if aligned is None:
            continue
        r = correlation(values, aligned)
        # Throughput falls as the wait rises; p99 (a decay upward) rises with it.
        if r is None or (r > -MIN_CORRELATION if what == "throughput" else r < MIN_CORRELATION):
            continue
        numbers = [value for value in aligned if not math.isnan(value)]
        third = len(numbers) // 3
        if third < 2:
            continue
        first = statistics.median(numbers[:third])
        last = statistics.median(numbers[-third:])
        if last >= first * MACHINE_RISE and last - first >= MACHINE_MIN_RISE:
            return {"series": name, "r": round(r, 3), "first": first, "last": last}
    return None


def _machine_values(record: MixRecord, name: str, times: Sequence[float]) -> list[float] | None:
    """*name* on the intervals; the workers' cpu_wait_ratio as the mean of every worker's."""
    if name.startswith("machine."):
        series = record.series.get(name)
        return None if series is None else series_on_intervals(series, times, counter=False)
    each = [
        aligned
        for key, series in record.series.items()
        if key.rsplit(".", 1)[-1] == name
        and (aligned := series_on_intervals(series, times, counter=False)) is not None
    ]
    if not each:
        return None
    return [statistics.fmean(column) for column in zip(*each, strict=True)]


def _thirds(values: Sequence[float], change: float) -> bool:
    """Whether the medians of the first, middle and last third agree on a move by *change*.

    A confirmation the step needs: a few slow seconds can move a third's
    mean, not its median.  The last third's median is *change* or more from
    the first's; the middle one has not moved the other way, nor past the
    last by more than a quarter of the move (a decay that levelled off
    wanders about its new level; relstorage#498's drop halfway moves them).
    """
    third = len(values) // 3
    first = statistics.median(values[:third])
    middle = statistics.median(values[third:-third])
    last = statistics.median(values[-third:])
    if not first:
        return False
    slack = abs(last - first) / 4
    if change < 0:
        return (last - first) / first <= change and last - slack <= middle <= first
    return (last - first) / first >= change and first <= middle <= last + slack


def _moved_with(
    record: MixRecord,
    what: str,
    times: Sequence[float],
    values: Sequence[float],
    per_second: dict[float, float],
) -> list[dict[str, Any]]:
    """The series whose |r| with *values* is at least MIN_CORRELATION, strongest first."""
    ranked: list[dict[str, Any]] = []
    for name, series in record.series.items():
        if name.rsplit(".", 1)[-1] in MACHINE_LEAVES:
            continue  # the machine's CPU is weighed apart (_machine_busier)
        counter = is_counter(name)
        aligned = series_on_intervals(series, times, counter)
        if aligned is None:
            continue
        if counter:  # per committed transaction: the work each one did
            aligned = [
                rate / per_second[t] if per_second.get(t) else math.nan
                for rate, t in zip(aligned, times, strict=True)
            ]
            amounts = [abs(value) for value in aligned if not math.isnan(value)]
            if not amounts or max(amounts) < MIN_PER_TRANSACTION:
                continue  # next to nothing per transaction: noise, whatever its r
        r = correlation(values, aligned)
        if r is None or abs(r) < MIN_CORRELATION:
            continue
        first = next((v for v in aligned if not math.isnan(v)), None)
        last = next((v for v in reversed(aligned) if not math.isnan(v)), None)
        ranked.append(
            {
                "series": name,
                "r": round(r, 3),
                "with": what,
                "unit": f"{series.unit}/transaction" if counter else series.unit,
                "first": first,
                "last": last,
            }
        )
    ranked.sort(key=lambda entry: -abs(entry["r"]))
    return ranked[:MAX_CAUSES]


def describe(found: dict[str, Any], seconds: float) -> str | None:
    """The drift verdict in one sentence (under the table), or None for a record without one."""
    verdict = found.get("verdict")
    if verdict is None:
        return None
    span = _span(found.get("judged_seconds", seconds))
    if found.get("before_restart"):
        span += " before the restart"
    if verdict == "too short":
        return f"drift: too few intervals to tell (at least {MIN_INTERVALS})"
    # The thirds' step where the record has one (what the verdict rests on), else the line.
    steps = found.get("steps")
    parts = []
    for key, label in (("throughput", "throughput"), ("p99_ms", "p99")):
        entry = (steps or {}).get(key) if steps is not None else found.get(key)
        if not entry:
            continue
        low, high = entry["change_ci95"]
        parts.append(f"{label} {entry['change']:+.0%} (95% CI {low:+.0%} to {high:+.0%})")
    changes = "; ".join(parts)
    if steps is not None and parts:
        changes += ", last third against the first"
    if verdict == "steady":
        improved = " and ".join(
            "throughput rose" if name == "throughput" else "p99 fell"
            for name in found.get("improved") or []
        )
        better = f" ({improved}: a warm-up, or the machine freed up)" if improved else ""
        return f"drift: steady over {span}, no decay: {changes}{better}"
    if verdict == "busier machine":
        machine = found["machine"]
        what = {
            "cpu_wait_ratio": "the workers waited for a CPU",
            "machine.cpu_pressure": "some task waited for a CPU",
            "machine.load_1min": "the load average was",
        }.get(machine["series"], machine["series"])
        return (
            f"drift: the machine got busier, not the database, over {span}: {changes}; "
            f"{what} {_number(machine['first'])} → {_number(machine['last'])} "
            f"({machine['series']}, r = {machine['r']:+.2f})"
        )
    causes = found.get("moved_with") or []
    if causes:
        moved = ", ".join(
            f"{entry['series']} ({entry['unit']}, {_number(entry['first'])} → "
            f"{_number(entry['last'])}, r = {entry['r']:+.2f})"
            for entry in causes
        )
        tail = f"; moved with it: {moved}"
    else:
        tail = "; no sampled series moved with it (|r| ≥ 0.5)"
    return f"drift: decaying over {span}: {changes}{tail}"


def _span(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    if seconds >= 120:
        return f"{seconds / 60:.0f} min"
    return f"{seconds:.0f} s"


def _number(value: float | None) -> str:
    if value is None:
        return "?"
    if abs(value) >= 1e6:
        return f"{value:.3g}"
    return f"{value:.4g}"


#: --restart-clients: the intervals compared on each side of the restart, at most.
RESTART_WINDOW = 10
#: The share of the lost throughput a restart must win back to be the client's decay.
RECOVERY = 0.5


def restart_verdict(record: MixRecord) -> dict[str, Any]:
    """Did restarting the workers win back what the run lost?  Plain data, with evidence.

    Three windows of w intervals (w = a quarter of the intervals before the
    restart, 3 to RESTART_WINDOW): the run's first (the baseline), the last
    before the restart and the first after it, the very first interval after
    it left out (processes starting).  Mean throughput and median p99 of
    each.  The run decayed before the restart as :func:`drift` judges it
    (the last third of the intervals before it against the first, the whole
    95 % interval MATERIAL_CHANGE down or more, the thirds' medians
    agreeing); then the
    restart recovered when it won back at least RECOVERY of the loss between
    the first window and the last before it: the decay lives in the client
    (its caches, connections, memory); else in the server.
    """
    restart = record.restart or {}
    at = restart.get("after_interval")
    length = record.interval_length_seconds
    if at is None:
        return {"verdict": None}
    before_all = record.intervals[:at]
    after_all = record.intervals[at + 1 :]
    w = max(3, min(RESTART_WINDOW, len(before_all) // 4))
    if len(before_all) < 2 * w or len(after_all) < w:
        return {"verdict": "too short", "window_intervals": w}
    windows = {
        "start": before_all[:w],
        "before": before_all[-w:],
        "after": after_all[:w],
    }
    evidence: dict[str, Any] = {"window_intervals": w}
    for key, window in windows.items():
        rates = [interval.transactions / length for interval in window]
        p99 = [i.p99_us / 1000 for i in window if i.p99_us is not None]
        evidence[key] = {
            "per_second": statistics.fmean(rates),
            "per_second_error": statistics.stdev(rates) / math.sqrt(len(rates)),
            "p99_ms": statistics.median(p99) if p99 else None,
        }
    start, before, after = evidence["start"], evidence["before"], evidence["after"]
    lost = start["per_second"] - before["per_second"]
    # Decayed before the restart as drift judges it: the thirds' step,
    # confirmed by their medians.
    rates = [interval.transactions / length for interval in before_all]
    moved = step(rates)
    decayed = moved is not None and moved.fell and _thirds(rates, -MATERIAL_CHANGE) and lost > 0
    if not decayed:
        evidence["verdict"] = "no decay"
        return evidence
    recovered = (after["per_second"] - before["per_second"]) / lost
    evidence["recovered"] = recovered
    evidence["verdict"] = "client" if recovered >= RECOVERY else "server"
    return evidence


def describe_restart(found: dict[str, Any]) -> str | None:
    """The restart's verdict in one sentence, with its evidence; None without a restart."""
    verdict = found.get("verdict")
    if verdict is None:
        return None
    w = found.get("window_intervals")
    if verdict == "too short":
        return f"restart: too few intervals around the restart to compare ({w} each side)"
    start, before, after = found["start"], found["before"], found["after"]
    figures = (
        f"{start['per_second']:.0f} tx/s at the start, {before['per_second']:.0f} just before "
        f"the restart, {after['per_second']:.0f} just after ({w} intervals each; p99 "
        f"{_ms(start['p99_ms'])}, {_ms(before['p99_ms'])}, {_ms(after['p99_ms'])})"
    )
    if verdict == "no decay":
        return f"restart: nothing to attribute, the rate had not decayed before it: {figures}"
    share = found["recovered"]
    where = (
        "the client (its caches, connections or memory): a restart won it back"
        if verdict == "client"
        else "the server: new clients did not win it back"
    )
    return f"restart: the decay lives in {where} ({share:.0%} of the loss recovered): {figures}"


def _ms(value: float | None) -> str:
    return "?" if value is None else f"{value:.2f} ms"


def judge(record: dict[str, Any]) -> None:
    """The drift verdict (and, after a restart, the client-or-server one) into *record*."""
    typed = MixRecord.from_data(record)
    record["drift"] = drift(typed)
    if typed.restart is not None:
        record["restart"] = {**typed.restart, **restart_verdict(typed)}
