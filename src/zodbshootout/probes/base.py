"""The probe contract: what an instrument reads around one step's timed region.

A worker's step is: prepare → ``before`` of every probe → barrier → timed
run → barrier → ``after`` of every probe (in reverse order, as an
``ExitStack`` unwinds) → verify.  Every probe works outside the timed
region; the only exceptions are those the user asked for and the output
names (the profiler of ``-p``, which ``during`` switches on), and a
statement counter that reads between the clock's readings (``clock``).

``after`` returns the probe's fields of the step's
:class:`~zodbshootout.results.record.PhaseTiming` (e.g. ``loads``,
``object_growth``), or nothing.  A probe that has nothing to say about an
untimed step returns its empty fields; the worker keeps only timed steps.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol

__all__ = ["Clock", "Probe", "ProbeSet", "Step"]


class Step(Protocol):
    """What a probe knows of a step (a phases.classic.Step): its phase, whether it is timed."""

    @property
    def phase(self) -> str: ...

    @property
    def timed(self) -> bool: ...


#: A monotonic clock in seconds (time.perf_counter or a test's fake).
Clock = Callable[[], float]


class Probe:
    """One instrument around a step; the defaults do nothing."""

    def before(self, step: Step) -> None:
        """Untimed, before the first barrier: read the starting values."""

    def clock(self, clock: Clock) -> Clock:
        """The clock the phase times itself with; a probe may read beside it."""
        return clock

    def during(self, step: Step) -> contextlib.AbstractContextManager[None]:
        """Around the timed run itself: only for what the user asked to run there (-p)."""
        return contextlib.nullcontext()

    def after(self, step: Step) -> dict[str, Any]:
        """Untimed, after the second barrier: this probe's fields of the step's record."""
        return {}


class ProbeSet:
    """The probes of a stage, entered together: one call per point of the step."""

    def __init__(self, probes: Sequence[Probe]) -> None:
        self.probes = tuple(probes)

    def before(self, step: Step) -> None:
        for probe in self.probes:
            probe.before(step)

    def clock(self, clock: Clock) -> Clock:
        for probe in self.probes:
            clock = probe.clock(clock)
        return clock

    @contextlib.contextmanager
    def during(self, step: Step) -> Iterator[None]:
        with contextlib.ExitStack() as stack:
            for probe in self.probes:
                stack.enter_context(probe.during(step))
            yield

    def after(self, step: Step) -> dict[str, Any]:
        """Every probe's fields, read in the reverse order of ``before`` (innermost first)."""
        fields: dict[str, Any] = {}
        for probe in reversed(self.probes):
            fields.update(probe.after(step))
        return fields
