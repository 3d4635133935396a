"""Interleaved repetitions: a warm-up of every database, then rounds until the rule says stop.

Measuring all repetitions of one database and then the next lets a slow
drift of the machine (a background job starting, a disk warming up, a CPU
clocking down) land on one column only.  Round-robin spreads it over every
column alike: the warm-up repetition of each database (untimed for the
statistics, and the calibration of the looped phases), then round after
round of one repetition of each database, until the stopping rule
(zodbshootout.run.precision) says the cells are precise enough or the time is up.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from zodbshootout.options.run import StoppingRule
from zodbshootout.results.record import PhaseTiming
from zodbshootout.run.calibration import loops_from_warmup
from zodbshootout.run.precision import another_round

#: (phase, loops) per looped phase: what a repetition's workers repeat.
Loops = tuple[tuple[str, int], ...]
#: ``repeat(database, repetition, loops)``: its timings, or None if it failed
#: (the database is then left out of the next rounds).  Repetition 0 is the warm-up.
Repeat = Callable[[str, int, Loops], list[PhaseTiming] | None]


def measure_in_rounds(
    databases: Sequence[str],
    repeat: Repeat,
    rule: StoppingRule,
    rates: Callable[[list[str]], Mapping[Any, Sequence[float]]],
    looped_phases: Sequence[str],
    warmup: bool = True,
    after_round: Callable[[], None] = lambda: None,
    clock: Callable[[], float] = time.monotonic,
) -> tuple[list[str], int]:
    """Measure *databases* in rounds; return the ones still measured and the rounds done.

    *rates(databases)* gives each cell's per-repetition rates so far, for the
    rule; *after_round* is called after every round (the CLI saves the file).
    """
    alive = list(databases)
    loops: dict[str, Loops] = dict.fromkeys(alive, ())
    started = clock()
    if warmup:
        for name in list(alive):
            timings = repeat(name, 0, ())
            if timings is None:
                alive.remove(name)
            else:
                loops[name] = loops_from_warmup(timings, looped_phases)
    warmup_seconds = clock() - started
    round_seconds: list[float] = []
    done = 0
    while alive and another_round(rule, done, rates(alive), round_seconds, warmup_seconds):
        started, done = clock(), done + 1
        for name in list(alive):
            if repeat(name, done, loops[name]) is None:
                alive.remove(name)
        round_seconds.append(clock() - started)
        after_round()
    return alive, done
