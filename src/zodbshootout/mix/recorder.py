"""A worker's record of its transactions: HdrHistograms per operation and per interval.

Latencies end up in HdrHistograms (the ``hdrhistogram`` package: whole
microseconds, 3 significant digits from 1 µs to an hour, a fixed few
kilobytes each however long the run), never in lists kept for the run, so
memory stays bounded.  A transaction only appends its latency in
microseconds (and its service time, in an open loop) to its operation's
pending list, tens of nanoseconds where ``record_value`` costs a
microsecond.  :func:`record_values` folds the pending values, at once, into
the operation's totals and into the current interval's histogram of all
operations: when the interval ends, or sooner once :data:`FOLD_EVERY`
transactions are pending, so a long interval holds at most that many.  The
fold counts equal values first (latencies repeat a lot in whole
microseconds) and leaves each histogram exactly as recording the values one
by one would.  An interval's histogram is kept encoded when it ends (for
per-interval throughput and p99, live and saved).

Histograms cross process boundaries as their standard encoding (base64 of
the compressed V2 format), a short string: :mod:`zodbshootout.results.histogram`
makes, encodes and reads them, for the workers here and for the results.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from zodbshootout.results.histogram import HIGHEST_MICROSECONDS, empty, encode, new_histogram

if TYPE_CHECKING:
    from hdrh.histogram import HdrHistogram


def record_values(values: list[int], *histograms: HdrHistogram) -> None:
    """Record whole microseconds into each of *histograms* as ``record_value`` would one by one.

    Values of an hour or more count as an hour (as a worker's did when it
    recorded them one by one) and negative ones are left out
    (``record_value`` refuses them); counts, total, min and max come out the
    same as one call per value.  Equal values are counted first, in C
    (``Counter``), and each distinct value's bucket is computed once, with
    the library's ``_counts_index_for`` arithmetic inlined: a method call per
    value is what makes ``record_value`` cost a microsecond.  Latencies in
    whole microseconds repeat a lot, so a fold costs a fraction of that per
    value, and well under a microsecond when no value repeats.
    """
    if not values:
        return
    tally = Counter(values)
    lowest = min(tally)
    highest = max(tally)
    if lowest < 0 or highest > HIGHEST_MICROSECONDS:  # rare: clamp and drop as before
        kept: Counter[int] = Counter()
        for value, count in tally.items():
            if value >= 0:
                kept[min(value, HIGHEST_MICROSECONDS)] += count
        if not kept:
            return
        tally, lowest, highest = kept, min(kept), max(kept)
    shape = histograms[0]  # all come from new_histogram(): one bucket layout
    mask = shape.sub_bucket_mask
    unit = shape.unit_magnitude
    half_magnitude = shape.sub_bucket_half_count_magnitude
    half_count = shape.sub_bucket_half_count
    top = unit + half_magnitude + 1
    indexes = [
        (((bucket := (value | mask).bit_length() - top) + 1) << half_magnitude)
        + (value >> (bucket + unit))
        - half_count
        for value in tally
    ]
    counted = tally.values()
    total = sum(counted)
    for histogram in histograms:
        counts = histogram.counts
        for index, count in zip(indexes, counted, strict=True):
            counts[index] += count
        histogram.total_count += total
        histogram.min_value = min(histogram.min_value, lowest)
        histogram.max_value = max(histogram.max_value, highest)


#: Transactions a recorder lets pend before it folds them into the histograms
#: without waiting for the interval's end: at most about 0.7 MiB of pending
#: latencies (a list slot and an int object each), as much again of service
#: times in an open loop, however long an interval is.
FOLD_EVERY = 16_384


class OperationRecord:
    """One operation's counts in one worker."""

    __slots__ = (
        "conflicts",
        "count",
        "failures",
        "lag_max_seconds",
        "lag_sum_seconds",
        "latency",
        "pending_latency",
        "pending_service",
        "retries",
        "service",
    )

    def __init__(self, open_loop: bool) -> None:
        self.count = 0  # committed transactions, up to the last fold
        self.latency = new_histogram()  # up to the last fold
        self.pending_latency: list[int] = []  # microseconds, since the last fold
        self.service: HdrHistogram | None = new_histogram() if open_loop else None
        self.pending_service: list[int] = []
        self.conflicts: Counter[str] = Counter()  # every transient error, by class
        self.retries = 0  # attempts after the first
        self.failures: Counter[str] = Counter()  # transactions given up, by last error
        self.lag_sum_seconds = 0.0
        self.lag_max_seconds = 0.0

    def fold(self, interval: HdrHistogram) -> int:
        """Move the pending values into the totals, the latencies into *interval* too;
        how many transactions they were (counted here, not as each one ends).

        Straight into both: adding a histogram to another walks all its
        23,552 counts, which at a few hundred transactions an interval cost
        more than the fold.
        """
        folded = len(self.pending_latency)
        if folded:
            self.count += folded
            record_values(self.pending_latency, self.latency, interval)
            self.pending_latency.clear()
        if self.pending_service:
            assert self.service is not None
            record_values(self.pending_service, self.service)
            self.pending_service.clear()
        return folded

    def as_data(self) -> dict[str, Any]:
        """Plain data; pending values must have been folded (:meth:`Recorder.as_data`)."""
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
        #: The current interval's transactions up to the last fold, and those since.
        self._in_interval = 0
        self._pending = 0
        #: Every operation's latencies of the current interval, up to the last fold.
        self.interval = new_histogram()

    def record(self, operation: str, intended: float, started: float, done: float) -> None:
        """A committed transaction: intended start, actual start and end (clock seconds).

        Whole microseconds, as ``int(seconds * 1e6)``, appended to the
        operation's pending lists; :meth:`fold` puts them in the histograms.
        """
        if done >= self._boundary:
            self.close_intervals(done)
        entry = self.operations[operation]
        entry.pending_latency.append(int((done - intended) * 1e6))
        if self.open_loop:
            entry.pending_service.append(int((done - started) * 1e6))
            lag = started - intended
            entry.lag_sum_seconds += lag
            if lag > entry.lag_max_seconds:
                entry.lag_max_seconds = lag
        self._pending += 1
        if self._pending >= FOLD_EVERY:
            self.fold()

    def begin(self, start: float) -> None:
        """Start the intervals at *start* (clock seconds), for a recorder made before the
        clock started: making its histograms takes a millisecond or more, not the run's."""
        self.start = start
        self._boundary = start + self.interval_seconds

    def record_closed(self, pending: list[int], started: float, done: float) -> None:
        """:meth:`record` in a closed loop (a transaction's intended start is its start),
        given its operation's pending latencies (``operations[name].pending_latency``):
        the fewest steps."""
        if done >= self._boundary:
            self.close_intervals(done)
        pending.append(int((done - started) * 1e6))
        self._pending += 1
        if self._pending >= FOLD_EVERY:
            self.fold()

    def fold(self) -> None:
        """Every operation's pending values into the histograms."""
        for entry in self.operations.values():
            self._in_interval += entry.fold(self.interval)
        self._pending = 0

    def close_intervals(self, now: float) -> None:
        """Close every interval that ended by *now* (those without a transaction too)."""
        while now >= self._boundary:
            self.fold()
            encoded = encode(self.interval)
            empty(self.interval)  # reused: no allocation of 188 KB a second
            index = len(self.intervals)
            self.intervals.append((self._in_interval, encoded))
            if self.on_interval is not None:
                self.on_interval(index, self._in_interval, encoded)
            self._in_interval = 0
            self._boundary += self.interval_seconds

    def as_data(self) -> dict[str, Any]:
        """Plain data: the operations' records and the finished intervals.

        Transactions of the last, unfinished interval are in the totals, not
        in the intervals (a partial interval would look like a slowdown).
        """
        self.fold()
        return {
            "operations": {op: entry.as_data() for op, entry in self.operations.items()},
            "intervals": [list(interval) for interval in self.intervals],
        }
