"""What a phase records in its step beyond the sample's seconds: operations and their latencies.

Every phase's run gets one (``scope.recorder``), fresh for each step.  A
classic phase times its whole sample and records nothing here; a phase that
runs several kinds of operation in one step (the mixed workloads of round
3) counts each one (:meth:`StepRecorder.count`) and records each one's
latency (:meth:`StepRecorder.time`, :meth:`StepRecorder.record`) into an
HdrHistogram per operation (the ``hdrhistogram`` package, imported only
when a latency is recorded: whole microseconds, 3 significant digits).
The step's record carries them as plain data: ``operations`` (counts by
name) and ``latency`` (each operation's histogram in its standard string
encoding), both None when nothing was recorded.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["StepRecorder"]

LOWEST_MICROSECONDS = 1
HIGHEST_MICROSECONDS = 3_600_000_000  # an hour; anything longer is clamped
SIGNIFICANT_DIGITS = 3


class StepRecorder:
    """Counts and latencies of the operations of one worker's step."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.operations: Counter[str] = Counter()
        self._histograms: dict[str, Any] = {}

    def count(self, operation: str, n: int = 1) -> None:
        """*n* more operations of this kind in the step."""
        self.operations[operation] += n

    def record(self, operation: str, seconds: float) -> None:
        """One operation that took *seconds*: counted, and its latency kept."""
        self.operations[operation] += 1
        histogram = self._histograms.get(operation)
        if histogram is None:
            histogram = self._histograms[operation] = _new_histogram()
        micros = int(seconds * 1_000_000)
        histogram.record_value(min(HIGHEST_MICROSECONDS, max(LOWEST_MICROSECONDS, micros)))

    @contextlib.contextmanager
    def time(self, operation: str) -> Iterator[None]:
        """Record the latency of the block, read with the step's clock."""
        start = self.clock()
        yield
        self.record(operation, self.clock() - start)

    def fields(self) -> dict[str, Any]:
        """``operations`` and ``latency`` of the step's record (None when nothing was recorded)."""
        latency = {name: _encode(histogram) for name, histogram in self._histograms.items()}
        return {
            "operations": dict(self.operations) or None,
            "latency": latency or None,
        }


def _new_histogram() -> Any:
    from hdrh.histogram import HdrHistogram  # lazy: only phases that record latencies need it

    return HdrHistogram(LOWEST_MICROSECONDS, HIGHEST_MICROSECONDS, SIGNIFICANT_DIGITS)


def _encode(histogram: Any) -> str:
    encoded = histogram.encode()
    return encoded.decode("ascii") if isinstance(encoded, bytes) else str(encoded)
