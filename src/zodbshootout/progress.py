"""Where a run is (the runner's ProgressEvent) and how to show it.

The runner reports a :class:`ProgressEvent` at each step; the display shows
one live status line on a terminal and plain lines elsewhere.

On a terminal the status line is rewritten in place (carriage return, erase
line) with the database, object count, concurrency, repetition, stage, the
elapsed time and an estimate of the time left.  When stderr is a file or a
pipe every event becomes one line, so logs stay readable.  ``-q`` shows
nothing at all (the CLI doesn't create a display then).
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TextIO


@dataclass(frozen=True)
class ProgressEvent:
    """Where the run is; the CLI decides how (and whether) to show it."""

    database: str
    object_count: int
    concurrency: int
    repetition: int  # 1-based
    repetitions: int
    stage: str  # "start", "populate", "write", "read", "done", "failed"
    detail: str = ""


#: What the runner calls with each event (see make_progress for the CLI's).
ProgressCallback = Callable[[ProgressEvent], None]


def ignore_progress(_event: ProgressEvent) -> None:
    pass


#: How far into a repetition each stage starts, as a fraction of it: the
#: write and read stages take most of the time, populating little.
_STAGE_FRACTION = {"start": 0.0, "populate": 0.0, "write": 0.1, "read": 0.55}

_ERASE_LINE = "\r\x1b[K"


def format_duration(seconds: float) -> str:
    """``0:07``, ``12:03`` or ``1:02:03`` (hours:minutes:seconds)."""
    whole = max(0, round(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}:{minutes:02d}:{secs:02d}"
    return f"{minutes}:{secs:02d}"


class RunPlan:
    """How many repetitions a run consists of, to turn an event into a fraction done."""

    def __init__(
        self,
        databases: Sequence[str],
        object_counts: Sequence[int],
        concurrencies: Sequence[int],
        repetitions: int,
    ) -> None:
        self.databases = list(databases)
        self.object_counts = list(object_counts)
        self.concurrencies = list(concurrencies)
        self.repetitions = repetitions

    @property
    def total(self) -> int:
        """Repetitions in the whole run (each one populate + write + read)."""
        return (
            len(self.databases)
            * len(self.object_counts)
            * len(self.concurrencies)
            * self.repetitions
        )

    def fraction_done(self, event: ProgressEvent) -> float:
        """Share of the run finished when *event* happens, between 0 and 1."""
        try:
            database = self.databases.index(event.database)
            count = self.object_counts.index(event.object_count)
            concurrency = self.concurrencies.index(event.concurrency)
        except ValueError:
            return 0.0
        before = (
            (database * len(self.object_counts) + count) * len(self.concurrencies) + concurrency
        ) * self.repetitions
        if event.stage in ("done", "failed"):
            # A failure skips the rest of its cells: count them as done.
            done: float = before + self.repetitions
        else:
            done = before + event.repetition - 1 + _STAGE_FRACTION.get(event.stage, 0.0)
        return min(1.0, done / self.total) if self.total else 1.0


class TerminalProgress:
    """A single status line on a terminal, rewritten on every event and cleared at the end."""

    def __init__(
        self,
        stream: TextIO,
        plan: RunPlan,
        clock: Callable[[], float] = time.monotonic,
        width: Callable[[], int] | None = None,
    ) -> None:
        self.stream = stream
        self.plan = plan
        self.clock = clock
        self.width = width or (lambda: shutil.get_terminal_size((80, 24)).columns)
        self.started = clock()
        self.showing = False

    def status_line(self, event: ProgressEvent) -> str:
        """The status text for *event*: where the run is and how long it will still take."""
        elapsed = self.clock() - self.started
        fraction = self.plan.fraction_done(event)
        position = ""
        if event.database in self.plan.databases:
            index = self.plan.databases.index(event.database) + 1
            position = f" ({index}/{len(self.plan.databases)})"
        where = [
            f"{event.database}{position}",
            f"{event.object_count} objects",
            f"c={event.concurrency}",
        ]
        if event.stage in ("done", "failed"):
            where.append(event.stage)
        else:
            where += [f"repetition {event.repetition}/{event.repetitions}", event.stage]
        # Time first: on a narrow terminal the end of the line is cut off.
        timing = f"{fraction:4.0%} {format_duration(elapsed)}"
        if fraction > 0.0 and elapsed > 0.0:
            left = elapsed / fraction * (1.0 - fraction)
            timing += f", ~{format_duration(left)} left"
        return f"[{timing}] " + " · ".join(where)

    def __call__(self, event: ProgressEvent) -> None:
        if event.stage == "failed":
            # A failure is worth keeping on screen; the footnote repeats it later.
            self.clear()
            self.stream.write(f"zodbshootout: {event.database}: failed: {event.detail}\n")
        line = self.status_line(event)
        limit = max(10, self.width() - 1)
        if len(line) > limit:
            line = line[: limit - 1] + "…"
        self.stream.write(_ERASE_LINE + line)
        self.stream.flush()
        self.showing = True

    def clear(self) -> None:
        """Erase the status line, so that what is printed next starts on a clean line."""
        if self.showing:
            self.stream.write(_ERASE_LINE)
            self.stream.flush()
            self.showing = False


class LineProgress:
    """One line per event, for logs and pipes."""

    def __init__(self, stream: TextIO, formatter: Callable[[ProgressEvent], str]) -> None:
        self.stream = stream
        self.formatter = formatter

    def __call__(self, event: ProgressEvent) -> None:
        self.stream.write(self.formatter(event) + "\n")
        self.stream.flush()

    def clear(self) -> None:
        pass


class NoProgress:
    """``-q``: nothing."""

    def __call__(self, event: ProgressEvent) -> None:
        pass

    def clear(self) -> None:
        pass


def make_progress(
    stream: TextIO,
    plan: RunPlan,
    quiet: bool,
    line_formatter: Callable[[ProgressEvent], str],
) -> TerminalProgress | LineProgress | NoProgress:
    """The display that suits *stream*: live on a terminal, lines otherwise, none if quiet."""
    if quiet:
        return NoProgress()
    isatty = getattr(stream, "isatty", None)
    if isatty is not None and isatty():
        return TerminalProgress(stream, plan)
    return LineProgress(stream, line_formatter)
