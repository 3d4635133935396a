"""Statistics of a mix record: percentiles per operation, and trends across the intervals.

Pure functions of the typed records of :mod:`zodbshootout.results.mix`; they
decode the saved histograms, never measure anything.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from zodbshootout.results.histogram import merge
from zodbshootout.results.mix import MixRecord, OperationTotals

#: The percentiles every table shows (and compare compares).
PERCENTILES = (50.0, 90.0, 99.0, 99.9)

#: A trend is reported when the fitted line changes the value by this much
#: over the run, and the intervals follow it closely enough (|r|).
TREND_CHANGE = 0.25
TREND_CORRELATION = 0.7
TREND_MIN_INTERVALS = 5

ALL = "all"


@dataclass(frozen=True)
class OperationSummary:
    """One operation's row (or ``all``): latencies in milliseconds."""

    operation: str
    transactions: int
    per_second: float
    percentiles_ms: dict[float, float]  # percentile -> latency
    max_ms: float
    service_ms: dict[float, float] | None  # open loop: service-time percentiles
    conflicts: dict[str, int]
    retries: int
    failures: dict[str, int]
    lag_mean_ms: float | None
    lag_max_ms: float | None


def _summary(name: str, entries: list[OperationTotals], seconds: float) -> OperationSummary:
    latency = merge([e.latency for e in entries])
    service_codes = [e.service for e in entries if e.service is not None]
    service = merge(service_codes) if service_codes else None
    count = sum(e.count for e in entries)
    conflicts: dict[str, int] = {}
    failures: dict[str, int] = {}
    for e in entries:
        for key, value in e.conflicts.items():
            conflicts[key] = conflicts.get(key, 0) + value
        for key, value in e.failures.items():
            failures[key] = failures.get(key, 0) + value
    lag_sum = sum(e.lag_sum_seconds for e in entries)
    return OperationSummary(
        operation=name,
        transactions=count,
        per_second=count / seconds if seconds > 0 else 0.0,
        percentiles_ms={p: _ms(latency.get_value_at_percentile(p), count) for p in PERCENTILES},
        max_ms=_ms(latency.get_max_value(), count),
        service_ms=(
            {p: _ms(service.get_value_at_percentile(p), count) for p in PERCENTILES}
            if service is not None
            else None
        ),
        conflicts=dict(sorted(conflicts.items())),
        retries=sum(e.retries for e in entries),
        failures=dict(sorted(failures.items())),
        lag_mean_ms=lag_sum / count * 1000 if service is not None and count else None,
        lag_max_ms=(
            max(e.lag_max_seconds for e in entries) * 1000 if service is not None else None
        ),
    )


def _ms(microseconds: float, count: int) -> float:
    return microseconds / 1000 if count else math.nan


def summarize(record: MixRecord) -> list[OperationSummary]:
    """One summary per operation of *record*, then ``all`` (every operation together)."""
    operations = record.operations
    seconds = record.seconds
    rows = [_summary(op, [entry], seconds) for op, entry in operations.items()]
    if len(operations) > 1:
        rows.append(_summary(ALL, list(operations.values()), seconds))
    return rows


def total_summary(record: MixRecord) -> OperationSummary:
    """Every operation of *record* together."""
    return _summary(ALL, list(record.operations.values()), record.seconds)


#: The per-interval series :func:`interval_series` knows: latencies in milliseconds.
_LATENCIES = {"p50_ms": "p50_us", "p99_ms": "p99_us", "max_ms": "max_us"}


def interval_series(record: MixRecord, what: str) -> list[float]:
    """Per-interval values: ``per_second`` (transactions ÷ interval) or ``p99_ms`` etc.

    An interval without a transaction has no latency: it is left out of a latency series.
    """
    seconds = record.interval_length_seconds
    if what == "per_second":
        return [interval.transactions / seconds for interval in record.intervals]
    values = [getattr(interval, _LATENCIES[what]) for interval in record.intervals]
    return [value / 1000 for value in values if value is not None]


def trend(values: list[float]) -> tuple[float, float] | None:
    """(relative change of the least-squares line over the series, Pearson's r), or None.

    The change is (last fitted − first fitted) ÷ the mean; None for fewer
    than TREND_MIN_INTERVALS values or a series that doesn't vary.
    """
    n = len(values)
    if n < TREND_MIN_INTERVALS:
        return None
    mean_x = (n - 1) / 2
    mean_y = sum(values) / n
    sxx = sum((x - mean_x) ** 2 for x in range(n))
    syy = sum((y - mean_y) ** 2 for y in values)
    if syy == 0 or mean_y == 0:
        return None
    sxy = sum((x - mean_x) * (y - mean_y) for x, y in zip(range(n), values, strict=True))
    slope = sxy / sxx
    return slope * (n - 1) / mean_y, sxy / math.sqrt(sxx * syy)


def trend_warnings(record: MixRecord) -> list[str]:
    """What drifted across the run (throughput or p99), in words; empty when nothing did."""
    warnings = []
    for what, label in (("per_second", "throughput"), ("p99_ms", "p99 latency")):
        found = trend(interval_series(record, what))
        if found is None:
            continue
        change, r = found
        if abs(change) >= TREND_CHANGE and abs(r) >= TREND_CORRELATION:
            direction = "rose" if change > 0 else "fell"
            warnings.append(
                f"{record.database}: {label} {direction} by {abs(change):.0%} across the "
                f"run (r={r:.2f} over {len(record.intervals)} intervals): the database "
                "did not reach a steady state; run longer (--duration), warm up longer "
                "(--warmup), or look for what grows (caches, files, server memory)"
            )
    return warnings


def hit_rate(record: MixRecord) -> float | None:
    """The storage client cache's share of the loads that reached the storage, or None."""
    hits, loads = record.counters.get("cache_hits"), record.counters.get("loads")
    if hits is None or not loads:
        return None
    return float(hits) / loads


@dataclass(frozen=True)
class Integrity:
    """The dataset's changes against the workers' commits (object versions)."""

    stray: int  # in the database, though the transactions that made them failed
    lost: int  # committed, but not in the database


def integrity(record: MixRecord) -> Integrity | None:
    """What the check after the run found; None for records saved before it existed.

    A commit that failed with an error other than a conflict may have
    committed (``uncertain_increments``): those changes are neither stray nor lost.
    """
    found = record.changes_found
    if found is None:
        return None
    committed = record.increments + record.warmup_increments + record.work_increments
    uncertain = record.uncertain_increments
    return Integrity(stray=max(0, found - committed - uncertain), lost=max(0, committed - found))
