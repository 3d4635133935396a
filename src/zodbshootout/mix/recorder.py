"""A worker's record of its transactions: HdrHistograms per operation and per interval.

Latencies are recorded in whole microseconds into HdrHistograms (the
``hdrhistogram`` package: 3 significant digits from 1 µs to an hour, a
fixed few kilobytes each however long the run), never into lists, so memory
stays bounded.  Each transaction costs one ``record_value`` into its
operation's histogram of the current interval (plus one for the service
time in an open loop); when an interval ends, its histograms are added to
the operation's totals and their union is kept, encoded, as the interval's
(for per-interval throughput and p99, live and saved).

Histograms cross process boundaries as their standard encoding (base64 of
the compressed V2 format), a short string; :func:`decode` reads one back.
"""

from __future__ import annotations

import ctypes
import sys
from collections import Counter
from typing import TYPE_CHECKING, Any

from zodbshootout.errors import UsageError

if TYPE_CHECKING:
    from hdrh.histogram import HdrHistogram

LOWEST_MICROSECONDS = 1
HIGHEST_MICROSECONDS = 3_600_000_000  # an hour: anything longer is clamped
SIGNIFICANT_DIGITS = 3
_MICRO = 1_000_000


def require_hdrhistogram() -> None:
    """A UsageError that says what to install when the hdrhistogram package is missing.

    Imported lazily so that the rest of zodbshootout (and an environment
    installed before mix existed) works without it.
    """
    try:
        import hdrh.histogram  # noqa: F401
    except ImportError:
        raise UsageError(
            "zodbshootout mix needs the hdrhistogram package: pip install hdrhistogram"
        ) from None


def new_histogram() -> HdrHistogram:
    from hdrh.histogram import HdrHistogram  # lazy: see require_hdrhistogram

    return HdrHistogram(LOWEST_MICROSECONDS, HIGHEST_MICROSECONDS, SIGNIFICANT_DIGITS)


def decode(encoded: str) -> HdrHistogram:
    """A histogram from its encoding (:meth:`HdrHistogram.encode`)."""
    histogram = new_histogram()
    if encoded:
        histogram.decode_and_add(encoded)
    return histogram


def encode(histogram: HdrHistogram) -> str:
    """The histogram as a string ("" when empty: the library can't encode nothing)."""
    if histogram.get_total_count() == 0:
        return ""
    encoded = histogram.encode()
    return encoded.decode("ascii") if isinstance(encoded, bytes) else str(encoded)


def merge(encoded: list[str]) -> HdrHistogram:
    """The sum of encoded histograms."""
    total = new_histogram()
    for text in encoded:
        if text:
            total.decode_and_add(text)
    return total


def clear(histogram: HdrHistogram) -> None:
    """Empty *histogram* as its ``reset()`` does, in microseconds instead of milliseconds.

    ``reset()`` zeroes the counts array (23,552 entries here) in a Python
    loop, 4 ms; a new histogram instead would leave the old one to the cyclic
    garbage collector (a histogram and its encoder refer to each other), so
    memory would rise between collections.  The counts are a ctypes array:
    one memset empties them.
    """
    counts = histogram.counts
    ctypes.memset(ctypes.addressof(counts), 0, ctypes.sizeof(counts))
    histogram.total_count = 0
    histogram.min_value = sys.maxsize
    histogram.max_value = 0


def _micros(seconds: float) -> int:
    """Whole microseconds, at most an hour (0 counts in the lowest bucket)."""
    micros = int(seconds * _MICRO)
    return micros if micros < HIGHEST_MICROSECONDS else HIGHEST_MICROSECONDS


class OperationRecord:
    """One operation's counts in one worker."""

    __slots__ = (
        "conflicts",
        "count",
        "failures",
        "interval",
        "interval_service",
        "lag_max_seconds",
        "lag_sum_seconds",
        "latency",
        "retries",
        "service",
    )

    def __init__(self, open_loop: bool) -> None:
        self.count = 0  # committed transactions
        self.latency = new_histogram()  # totals of the finished intervals
        self.interval = new_histogram()  # the current interval's
        self.service: HdrHistogram | None = new_histogram() if open_loop else None
        self.interval_service: HdrHistogram | None = new_histogram() if open_loop else None
        self.conflicts: Counter[str] = Counter()  # every transient error, by class
        self.retries = 0  # attempts after the first
        self.failures: Counter[str] = Counter()  # transactions given up, by last error
        self.lag_sum_seconds = 0.0
        self.lag_max_seconds = 0.0

    def close_interval(self) -> None:
        if self.interval.get_total_count():
            self.latency.add(self.interval)
            clear(self.interval)
        if self.interval_service is not None and self.interval_service.get_total_count():
            assert self.service is not None
            self.service.add(self.interval_service)
            clear(self.interval_service)

    def as_data(self) -> dict[str, Any]:
        self.close_interval()
        return {
            "count": self.count,
            "latency": encode(self.latency),
            "service": None if self.service is None else encode(self.service),
            "conflicts": dict(self.conflicts),
            "retries": self.retries,
            "failures": dict(self.failures),
            "lag_sum_seconds": self.lag_sum_seconds,
            "lag_max_seconds": self.lag_max_seconds,
        }


class Recorder:
    """Everything one worker measures, from *start* (clock seconds) on."""

    def __init__(
        self,
        operations: tuple[str, ...],
        start: float,
        interval_seconds: float = 1.0,
        open_loop: bool = False,
        on_interval: Any = None,
    ) -> None:
        self.operations = {op: OperationRecord(open_loop) for op in operations}
        self.start = start
        self.interval_seconds = interval_seconds
        self.open_loop = open_loop
        self.on_interval = on_interval  # called with (index, transactions, encoded histogram)
        #: The finished intervals: (transactions, encoded histogram of all operations).
        self.intervals: list[tuple[int, str]] = []
        self._boundary = start + interval_seconds
        self._in_interval = 0
        self._union = new_histogram()  # every operation's current interval, when it closes

    def record(self, operation: str, intended: float, started: float, done: float) -> None:
        """A committed transaction: intended start, actual start and end (clock seconds)."""
        if done >= self._boundary:
            self.close_intervals(done)
        entry = self.operations[operation]
        entry.count += 1
        entry.interval.record_value(_micros(done - intended))
        if self.open_loop:
            assert entry.interval_service is not None
            entry.interval_service.record_value(_micros(done - started))
            lag = started - intended
            entry.lag_sum_seconds += lag
            if lag > entry.lag_max_seconds:
                entry.lag_max_seconds = lag
        self._in_interval += 1

    def close_intervals(self, now: float) -> None:
        """Close every interval that ended by *now* (those without a transaction too)."""
        while now >= self._boundary:
            union = self._union
            clear(union)
            for entry in self.operations.values():
                union.add(entry.interval)
                entry.close_interval()
            index = len(self.intervals)
            self.intervals.append((self._in_interval, encode(union)))
            if self.on_interval is not None:
                self.on_interval(index, self._in_interval, self.intervals[-1][1])
            self._in_interval = 0
            self._boundary += self.interval_seconds

    def as_data(self) -> dict[str, Any]:
        """Plain data: the operations' records and the finished intervals.

        Transactions of the last, unfinished interval are in the totals, not
        in the intervals (a partial interval would look like a slowdown).
        """
        return {
            "operations": {op: entry.as_data() for op, entry in self.operations.items()},
            "intervals": [list(interval) for interval in self.intervals],
        }
