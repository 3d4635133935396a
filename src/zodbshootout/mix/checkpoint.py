"""A long mix run saved while it runs: the intervals closed so far, as a partial record.

The workers send each closed interval (its transactions and encoded
histogram) on the session's progress channel; the runner's
:class:`Checkpoints` merges interval *i* once every worker closed it, keeps
it as four numbers (transactions, p50, p99, max) and adds its histogram to
one running total, so that its memory grows by a few dozen bytes an
interval, never per transaction.  At most *every_seconds* after the run's
last save (*since*: the end of the database before, or the run's start),
it hands a partial record of the database to its *save* callback (the
runner writes the result file atomically: a temporary file renamed over
the old one), so a SIGKILL, a crash or a full disk leaves the last
checkpoint readable.  The partial record holds every operation together as
``all`` (the intervals don't tell operations apart) and ``partial: true``;
the record the workers' reports make at the end replaces it.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from zodbshootout.results.drift import drift
from zodbshootout.results.histogram import encode, merge, new_histogram
from zodbshootout.results.mix import MixRecord

#: The seconds between checkpoints by default (--checkpoint).
DEFAULT_CHECKPOINT_SECONDS = 60.0


def merged_interval(entries: list[tuple[int, str]], into: Any = None) -> tuple[dict[str, Any], Any]:
    """Every worker's interval *i* as the record's interval, and their histograms' union
    (*into*, emptied and reused, when given: see results.histogram.merge)."""
    transactions = sum(count for count, _h in entries)
    union = merge([histogram for _c, histogram in entries], into)
    interval = {
        "transactions": transactions,
        "p50_us": union.get_value_at_percentile(50.0) if transactions else None,
        "p99_us": union.get_value_at_percentile(99.0) if transactions else None,
        "max_us": union.get_max_value() if transactions else None,
    }
    return interval, union


@dataclass
class Checkpoints:
    """The closed intervals of one database's run, merged; a partial record every so often."""

    row: str
    workload: str
    workers: int
    interval_seconds: float
    every_seconds: float | None
    save: Callable[[dict[str, Any]], None]
    clock: Callable[[], float] = time.monotonic
    #: The run's last save on *clock* (the database before's end); None: now.
    since: float | None = None
    intervals: list[dict[str, Any]] = field(default_factory=list, init=False)
    offset: int = field(default=0, init=False)  # intervals of the earlier stages (restarts)
    total: Any = field(default_factory=new_histogram, init=False)
    #: Each interval's union, merged into the same histogram every time (no garbage).
    _scratch: Any = field(default_factory=new_histogram, init=False)
    transactions: int = field(default=0, init=False)
    saves: int = field(default=0, init=False)
    _last_save: float = field(default=0.0, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    def __post_init__(self) -> None:
        self._last_save = self.clock() if self.since is None else self.since

    def next_stage(self) -> None:
        """New workers start (--restart-clients): their interval 0 follows the last closed."""
        with self._lock:
            self.offset = len(self.intervals)

    def closed(self, index: int, entries: list[tuple[int, str]]) -> None:
        """Interval *index* of the current stage, every worker's entry: kept; maybe saved."""
        with self._lock:
            interval, union = merged_interval(entries, self._scratch)
            if self.offset + index != len(self.intervals):
                return  # out of order (never, as workers send theirs in order): not kept
            self.intervals.append(interval)
            self.total.add(union)
            self.transactions += interval["transactions"]
            now = self.clock()
            # Saved at the last close before the gap would pass every_seconds: the
            # next one comes an interval later.  (Saving at the first close after it
            # was due let each gap run an interval over, and drift.)
            every = self.every_seconds
            due = every is not None and now - self._last_save + self.interval_seconds > every
            if due:
                self._last_save = now
                record = self.record()
        if due:
            self.saves += 1
            self.save(record)

    def record(self) -> dict[str, Any]:
        """The partial record of what closed so far (plain data, as a result file holds)."""
        seconds = len(self.intervals) * self.interval_seconds
        return {
            "database": self.row,
            "workload": self.workload,
            "concurrency": self.workers,
            "rate_per_second": None,
            "interval_seconds": self.interval_seconds,
            "seconds": seconds,
            "operations": {
                "all": {
                    "count": self.transactions,
                    "latency": encode(self.total) if self.transactions else "",
                    "service": None,
                    "conflicts": {},
                    "retries": 0,
                    "failures": {},
                    "lag_sum_seconds": 0.0,
                    "lag_max_seconds": 0.0,
                }
            },
            "intervals": list(self.intervals),
            "partial": True,
        }


def save_partial(runner: Any, record: dict[str, Any]) -> None:
    """A checkpoint (from the progress thread): *runner*'s result so far, *record* partial.

    A copy: the run's own result is only appended to by the coordinator,
    which waits for the workers meanwhile.
    """
    if runner.on_database_done is None:
        return
    partial = dict(record)
    with contextlib.suppress(Exception):  # a verdict is a courtesy here
        partial["drift"] = drift(MixRecord.from_data(partial))
    metadata = {**runner.result.metadata, "partial": partial_note(record)}
    runner.on_database_done(
        replace(runner.result, mix=[*runner.result.mix, partial], metadata=metadata)
    )


def partial_note(record: dict[str, Any]) -> dict[str, Any]:
    """``metadata["partial"]``: the database whose record is a checkpoint's, when, how long."""
    return {
        "database": record["database"],
        "saved_at": time.time(),
        "measured_seconds": record["seconds"],
    }
