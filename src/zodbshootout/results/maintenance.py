"""A maintain run's records, typed, and how each operation's time grows with the database.

``RunResult.maintenance`` holds one plain record per database, size and
operation (see zodbshootout.maintenance.maintain); :class:`MaintenanceRun`
reads them back as :class:`OperationRecord`, and :func:`scaling_fits` fits
``seconds = a · N^k`` over the sizes of each database and operation: the
answer to "will my pack of ten times as many objects finish tonight?".
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

from zodbshootout.results.record import RunResult

#: Student's t at 97.5 % for 1..30 degrees of freedom (a 95 % two-sided interval);
#: beyond 30 the normal's 1.96 is close enough.
_T_975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip


@dataclass(frozen=True)
class OperationRecord:
    """One operation on one database at one size; None where it could not be known."""

    database: str
    operation: str
    objects: int | None  # N, the objects the fill made (garbage included); None: not known
    seconds: float | None = None
    peak_rss_bytes: int | None = None  # the process that did it
    server_peak_rss_bytes: int | None = None  # an embedded ZEO server's, during it
    bytes_before: int | None = None
    bytes_after: int | None = None
    bytes_method: str = ""
    objects_before: int | None = None  # the storage's own count (len(storage))
    objects_after: int | None = None
    reason: str | None = None  # why it was not measured (then no seconds)
    #: Under load: the pack's time alone and the foreground's phases (see maintain).
    load: dict[str, Any] | None = None
    #: gc: the objects zc.zodbdgc found unreachable (and deleted before the pack).
    gc_deleted: int | None = None
    gc_pack_seconds: list[float] | None = None  # the packs without GC before and after it
    #: first-transaction*: the client cache's objects right after opening, and
    #: (warm) how many were loaded into the persistent cache before.
    cache_objects: int | None = None
    cache_warmed: int | None = None

    @property
    def cache_objects_noted(self) -> bool:
        """Whether the client cache's count is worth a footnote (the warm and cold starts)."""
        return self.operation in ("first-transaction-warm", "first-transaction-cold")

    @property
    def objects_removed(self) -> int | None:
        if self.objects_before is None or self.objects_after is None:
            return None
        return self.objects_before - self.objects_after

    @classmethod
    def of(cls, data: dict[str, Any]) -> OperationRecord:
        known = {item.name for item in fields(cls)}
        return cls(**{key: value for key, value in data.items() if key in known})


@dataclass(frozen=True)
class Fit:
    """``seconds = a · N^k`` fitted on log-log by least squares, k with its 95 % interval."""

    database: str
    operation: str
    sizes: tuple[int, ...]
    exponent: float
    low: float
    high: float

    def seconds_at(self, objects: int, coefficient: float) -> float:
        return coefficient * objects**self.exponent


def fit_exponent(sizes: list[float], seconds: list[float]) -> tuple[float, float, float]:
    """(k, low, high): the slope of log(seconds) on log(sizes) and its 95 % interval.

    Needs at least three distinct sizes (two points leave no error to
    estimate); all values must be positive.
    """
    if len(set(sizes)) < 3 or len(sizes) != len(seconds):
        raise ValueError("a fit needs at least three distinct sizes")
    if min(sizes) <= 0 or min(seconds) <= 0:
        raise ValueError("sizes and seconds must be positive")
    xs = [math.log(n) for n in sizes]
    ys = [math.log(s) for s in seconds]
    count = len(xs)
    mean_x, mean_y = sum(xs) / count, sum(ys) / count
    sxx = sum((x - mean_x) ** 2 for x in xs)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / sxx
    intercept = mean_y - slope * mean_x
    residual = sum((y - intercept - slope * x) ** 2 for x, y in zip(xs, ys, strict=True))
    freedom = count - 2
    error = math.sqrt(residual / freedom / sxx)
    t = _T_975[freedom - 1] if freedom <= len(_T_975) else 1.96
    return slope, slope - t * error, slope + t * error


def scaling_fits(records: list[OperationRecord]) -> list[Fit]:
    """A fit per database and operation measured at three sizes or more."""
    groups: dict[tuple[str, str], list[OperationRecord]] = {}
    for record in records:
        if record.seconds is not None and record.seconds > 0:
            groups.setdefault((record.database, record.operation), []).append(record)
    fits = []
    for (database, operation), found in groups.items():
        found = [r for r in found if r.objects]
        sizes = [float(r.objects or 0) for r in found]
        if len(set(sizes)) < 3:
            continue
        k, low, high = fit_exponent(sizes, [r.seconds or 0.0 for r in found])
        fits.append(
            Fit(database, operation, tuple(sorted({r.objects or 0 for r in found})), k, low, high)
        )
    return fits


@dataclass(frozen=True)
class MaintenanceRun:
    """A saved maintain run as its renderers read it."""

    records: list[OperationRecord]
    fits: list[Fit]
    notes: list[str]
    failures: list[tuple[str, str]]

    @classmethod
    def of(cls, result: RunResult) -> MaintenanceRun:
        records = [OperationRecord.of(data) for data in result.maintenance]
        failures = [(f.database, f.reason) for f in result.failures]
        return cls(records, scaling_fits(records), list(result.notes), failures)
