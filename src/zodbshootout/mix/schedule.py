"""When a worker starts its transactions: as soon as it can (closed loop), or on a schedule.

Closed loop (the default): a worker starts its next transaction when the
previous one is done, so a database that stalls gets fewer requests and its
stall hides in a few slow samples (coordinated omission).

Open loop (``--rate OPS``): the run has a schedule of intended starts, OPS
per second across all c workers.  ``constant`` spaces them evenly (wrk2),
worker w taking starts w, w + c, w + 2c, ...; ``poisson`` draws each
worker's gaps from an exponential distribution of mean c ÷ OPS (pgbench -R;
c independent Poisson processes of rate OPS ÷ c add up to one of rate OPS).
A transaction's latency then counts from its intended start, so time spent
waiting behind a slow transaction counts; its service time (from its actual
start) and its schedule lag (actual - intended start) are kept too.
"""

from __future__ import annotations

import random

CONSTANT = "constant"
POISSON = "poisson"
ARRIVALS = (CONSTANT, POISSON)
#: --rate: no ZODB storage commits a million transactions a second; beyond,
#: the gap between intended starts rounds to nothing.
MAX_RATE_PER_SECOND = 1_000_000.0
#: --rate: one transaction every 100 seconds; near 0 the gap overflows to infinity.
MIN_RATE_PER_SECOND = 0.01


class OpenLoop:
    """The intended start times (clock seconds) of one worker's transactions."""

    def __init__(
        self,
        rate_per_second: float,
        workers: int,
        worker: int,
        start: float,
        arrival: str = CONSTANT,
        rng: random.Random | None = None,
    ) -> None:
        if not MIN_RATE_PER_SECOND <= rate_per_second <= MAX_RATE_PER_SECOND:  # NaN fails too
            raise ValueError(
                f"the rate must be from {MIN_RATE_PER_SECOND:g} to {MAX_RATE_PER_SECOND:,.0f}"
            )
        self.gap_seconds = workers / rate_per_second  # this worker's mean gap
        self.poisson = arrival == POISSON
        self.rng = rng or random.Random(worker)
        if self.poisson:
            self._next = start + self.rng.expovariate(1.0 / self.gap_seconds)
        else:
            self._next = start + worker / rate_per_second

    def peek(self) -> float:
        """The next intended start, not yet taken."""
        return self._next

    def take(self) -> float:
        """The next intended start; the schedule moves on to the one after it."""
        intended = self._next
        if self.poisson:
            self._next += self.rng.expovariate(1.0 / self.gap_seconds)
        else:
            self._next += self.gap_seconds
        return intended

    def missed(self, end: float) -> int:
        """How many intended starts before *end* were never taken (the backlog at the end)."""
        if self._next >= end:
            return 0
        if self.poisson:
            return max(1, round((end - self._next) / self.gap_seconds))
        return int((end - self._next) // self.gap_seconds) + 1
