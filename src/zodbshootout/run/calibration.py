"""How many times a repeatable phase loops inside one timed sample.

A sample of a few milliseconds (steamin reads 1000 objects in about 1 ms)
measures the scheduler as much as ZODB: one preemption doubles it.  Phases
that can repeat without changing what they measure (hot, steamin, opening a
connection) therefore repeat their work *loops* times inside one sample, and
the sample's duration is divided by the loop count — as pyperf calibrates
its loops.  The loop count comes from the untimed warm-up repetition: the
smallest power of two that makes every worker's sample last at least
:data:`TARGET_SAMPLE_SECONDS`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from zodbshootout.results.record import PhaseTiming

#: A sample shorter than this is at the mercy of the scheduler (time slices
#: are a few milliseconds); pyperf aims at 100 ms, 50 ms keeps a default run short.
TARGET_SAMPLE_SECONDS = 0.05

#: An upper bound, so that a duration the clock can hardly resolve can't ask
#: for millions of loops.
MAX_LOOPS = 1 << 16


def loops_for(
    seconds_per_loop: float,
    target_seconds: float = TARGET_SAMPLE_SECONDS,
    max_loops: int = MAX_LOOPS,
) -> int:
    """The loops (a power of two, at least 1) whose sample lasts *target_seconds*.

    A duration of zero or less (too short for the clock) asks for *max_loops*.
    """
    if seconds_per_loop <= 0:
        return max_loops
    needed = target_seconds / seconds_per_loop
    if needed <= 1:
        return 1
    return min(max_loops, 1 << math.ceil(math.log2(needed)))


def loops_for_workers(
    seconds_per_loop: Iterable[float],
    target_seconds: float = TARGET_SAMPLE_SECONDS,
    max_loops: int = MAX_LOOPS,
) -> int:
    """One loop count for all workers of a phase: enough for the fastest one.

    All workers of a phase loop the same number of times, so that they stay
    busy for about as long as each other while they run together.
    """
    durations = list(seconds_per_loop)
    if not durations:
        return 1
    return loops_for(min(durations), target_seconds, max_loops)


def loops_from_warmup(
    timings: Iterable[PhaseTiming], looped_phases: Iterable[str]
) -> tuple[tuple[str, int], ...]:
    """(phase, loops) for each looped phase the warm-up repetition timed.

    The warm-up's samples are single loops (or, if it had loops, divided by them).
    """
    looped = set(looped_phases)
    per_phase: dict[str, list[float]] = {}
    for timing in timings:
        if timing.phase in looped:
            per_phase.setdefault(timing.phase, []).append(timing.seconds / timing.loops)
    return tuple((phase, loops_for_workers(durations)) for phase, durations in per_phase.items())
