"""How a run's progress is shown: rich's live display on a terminal, plain lines elsewhere.

The runner reports a :class:`~zodbshootout.run.progress.ProgressEvent` at
each step; this module turns them into what the user sees on stderr.

On a terminal, rich draws a bar over the run's repetitions (every database
× object count × concurrency × repetition), described by the cell and stage
being measured, with the elapsed time and an estimate of the time left.
rich refreshes it from its own thread four times a second, so the clock
moves even while one stage runs for minutes.  The estimate comes from the
durations of the repetitions measured so far (:class:`TimeLeft`).
A failure is printed above the display and stays on screen.

When stderr is a file or a pipe every event becomes one line, so logs stay
readable.  ``-q`` shows nothing at all.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from zodbshootout.cli.printing import write_line
from zodbshootout.render.safe_text import terminal_safe
from zodbshootout.run.progress import ProgressEvent

#: How far into a repetition each stage starts, as a fraction of it: the
#: write and read stages take most of the time, populating little.
_STAGE_FRACTION = {"start": 0.0, "populate": 0.0, "write": 0.1, "read": 0.55}

#: Redraws per second on a terminal: often enough that the display never
#: stands still for a second.  A redraw costs the parent about 1.5 ms of CPU
#: (0.6% of a core at this rate); the parent only waits for its worker
#: processes meanwhile.
REFRESHES_PER_SECOND = 4
#: With --threads the workers are threads of the parent and share its GIL
#: with the display: redraw only once a second, the least that still moves.
REFRESHES_PER_SECOND_BESIDE_WORKERS = 1
#: A repetition's fixed cost (worker processes, populate), in objects × workers:
#: with several -n and -c levels a repetition costs about N × c plus this.
WEIGHT_OVERHEAD = 200


def format_duration(seconds: float) -> str:
    """``0:07``, ``12:03`` or ``1:02:03`` (hours:minutes:seconds)."""
    whole = max(0, round(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}:{minutes:02d}:{secs:02d}"
    return f"{minutes}:{secs:02d}"


class RunPlan:
    """How many repetitions a run consists of, to turn an event into a fraction done.

    The runner measures each count and concurrency level in rounds (see
    zodbshootout.run.rounds): the warm-up of every database (repetition 0), then
    repetition 1 of every database, and so on.  *repetitions* is the minimum;
    rounds that --precision adds past it count as the last one.
    """

    def __init__(
        self,
        databases: Sequence[str],
        object_counts: Sequence[int],
        concurrencies: Sequence[int],
        repetitions: int,
        warmup: bool = False,
    ) -> None:
        self.databases = list(databases)
        self.object_counts = list(object_counts)
        self.concurrencies = list(concurrencies)
        self.repetitions = repetitions
        self.warmup = warmup

    @property
    def rounds(self) -> int:
        """Rounds per count and concurrency level, the warm-up included."""
        return self.repetitions + (1 if self.warmup else 0)

    @property
    def total(self) -> int:
        """Repetitions in the whole run (each one populate + write + read)."""
        return len(self.databases) * len(self.object_counts) * len(self.concurrencies) * self.rounds

    def fraction_done(self, event: ProgressEvent) -> float:
        """Share of the run finished when *event* happens, between 0 and 1."""
        try:
            database = self.databases.index(event.database)
            count = self.object_counts.index(event.object_count)
            concurrency = self.concurrencies.index(event.concurrency)
        except ValueError:
            return 0.0
        level = count * len(self.concurrencies) + concurrency
        rounds_before = level * self.rounds
        if event.stage == "done":
            # A level is done for every database at once, after its last round.
            done: float = (rounds_before + self.rounds) * len(self.databases)
        else:
            this_round = min(event.repetition - (0 if self.warmup else 1), self.rounds - 1)
            stage = event.stage.removeprefix("warm-up: ")
            done = (rounds_before + max(0, this_round)) * len(self.databases) + database
            done += _STAGE_FRACTION.get(stage, 0.0)
        return min(1.0, done / self.total) if self.total else 1.0

    def level_weight(self, object_count: int, concurrency: int) -> float:
        """The relative cost of one repetition of a level: its objects × workers, plus
        a fixed share for starting the workers and populating (WEIGHT_OVERHEAD)."""
        return object_count * concurrency + WEIGHT_OVERHEAD

    def weight_done(self, done: float) -> float:
        """The cost of the first *done* repetitions (float: a share of the next one)."""
        total = 0.0
        per_level = self.rounds * len(self.databases)
        for count in self.object_counts:
            for concurrency in self.concurrencies:
                step = min(max(0.0, done), per_level)
                total += step * self.level_weight(count, concurrency)
                done -= step
        return total

    @property
    def total_weight(self) -> float:
        return self.weight_done(self.total)

    def describe(self, event: ProgressEvent) -> str:
        """``sqlite (2/3) · 1000 objects · c=2 · repetition 1/3 · write``: where the run is."""
        position = ""
        if event.database in self.databases:
            index = self.databases.index(event.database) + 1
            position = f" ({index}/{len(self.databases)})"
        where = [
            f"{event.database}{position}",
            f"{event.object_count} objects",
            f"c={event.concurrency}",
        ]
        if event.stage in ("done", "failed"):
            where.append(event.stage)
        else:
            where += [f"repetition {event.repetition}/{event.repetitions}", event.stage]
        return " · ".join(where)


class TimeLeft:
    """The run's time left, from the durations of the repetitions measured so far.

    A repetition starts with its ``populate`` event and ends when the next
    one starts or its cell is done (or failed).  Repetitions of different
    levels cost differently (10000 objects take about 10 times as long as
    1000, 4 workers about twice as long as 2 on a machine they share), so each
    is weighed by its level (:meth:`RunPlan.level_weight`): the estimate is
    the seconds per unit of weight measured so far times the weight left,
    minus the time the current repetition has already taken.  Until the
    first repetition ends there is no measurement, and no estimate.
    """

    def __init__(self, plan: RunPlan, clock: Callable[[], float] = time.monotonic) -> None:
        self.plan = plan
        self.clock = clock
        self.durations: list[float] = []
        self.weights: list[float] = []
        self.started: float | None = None  # of the current repetition
        self.current_weight = 0.0
        self.done = 0.0  # repetitions finished (or skipped by a failure) before the current one

    def update(self, event: ProgressEvent) -> None:
        now = self.clock()
        if event.stage in ("populate", "warm-up: populate"):
            self._finish(now)
            self.started = now
            self.current_weight = self.plan.level_weight(event.object_count, event.concurrency)
            self.done = self.plan.fraction_done(event) * self.plan.total
        elif event.stage in ("done", "failed"):
            self._finish(now)
            self.done = self.plan.fraction_done(event) * self.plan.total

    def _finish(self, now: float) -> None:
        if self.started is not None:
            self.durations.append(now - self.started)
            self.weights.append(self.current_weight)
            self.started = None

    def seconds(self) -> float | None:
        """Seconds until the run ends at the pace measured so far; None before any measurement."""
        if not self.durations:
            return None
        per_weight = math.fsum(self.durations) / math.fsum(self.weights)
        left = self.plan.total_weight - self.plan.weight_done(self.done)
        in_current = 0.0 if self.started is None else self.clock() - self.started
        return max(0.0, per_weight * left - in_current)


def _remaining_column(time_left: TimeLeft) -> Any:
    """A rich column: the time left, as :class:`TimeLeft` estimates it at each redraw."""
    from rich.progress import ProgressColumn
    from rich.table import Column
    from rich.text import Text

    class RemainingColumn(ProgressColumn):
        def __init__(self) -> None:
            super().__init__(table_column=Column(no_wrap=True, min_width=11))

        def render(self, task: Any) -> Text:
            left = time_left.seconds()
            text = "~?:?? left" if left is None else f"~{format_duration(left)} left"
            return Text(text, style="progress.remaining")

    return RemainingColumn()


class RichProgress:
    """rich's live display: a bar of the run's repetitions, the cell, elapsed and time left.

    rich redraws it from a thread of its own, so the elapsed time moves at
    least once a second whatever the runner is doing.  :meth:`clear` stops
    the display and removes it, leaving the terminal clean for the table.
    """

    def __init__(
        self, console: Any, plan: RunPlan, refreshes_per_second: float = REFRESHES_PER_SECOND
    ) -> None:
        from rich.progress import (
            BarColumn,
            Progress,
            SpinnerColumn,
            TaskProgressColumn,
            TextColumn,
            TimeElapsedColumn,
        )
        from rich.table import Column

        self.plan = plan
        self.time_left = TimeLeft(plan)
        self.display = Progress(
            SpinnerColumn(),
            TaskProgressColumn(),
            BarColumn(bar_width=20),
            TimeElapsedColumn(table_column=Column(no_wrap=True, min_width=7)),
            _remaining_column(self.time_left),
            # On a narrow terminal the description gives way, never the times.
            TextColumn(
                "{task.description}",
                table_column=Column(no_wrap=True, overflow="ellipsis", ratio=1),
            ),
            console=console,
            transient=True,
            auto_refresh=True,
            refresh_per_second=refreshes_per_second,
            # The runner's own warnings on stderr go above the display, not through it.
            redirect_stdout=False,
            redirect_stderr=False,
        )
        self.task = self.display.add_task("starting", total=max(1, plan.total))
        self.display.start()
        self.showing = True

    def __call__(self, event: ProgressEvent) -> None:
        self.time_left.update(event)
        if event.stage == "failed":
            # A failure is worth keeping on screen; the footnote repeats it later.
            self.display.console.print(
                terminal_safe(f"zodbshootout: {event.database}: failed: {event.detail}"),
                markup=False,
                highlight=False,
            )
        self.display.update(
            self.task,
            completed=self.plan.fraction_done(event) * self.plan.total,
            description=self.plan.describe(event),
        )

    def clear(self) -> None:
        """Stop the display and erase it, so that what is printed next starts on a clean line."""
        if self.showing:
            self.display.stop()
            self.showing = False


class LineProgress:
    """One line per event, for logs and pipes."""

    def __init__(self, stream: TextIO, formatter: Callable[[ProgressEvent], str]) -> None:
        self.stream = stream
        self.formatter = formatter

    def __call__(self, event: ProgressEvent) -> None:
        write_line(self.formatter(event), self.stream)

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
    console: Any = None,
    workers_in_process: bool = False,
) -> RichProgress | LineProgress | NoProgress:
    """The display that suits *stream*: live on a terminal, lines otherwise, none if quiet.

    *console* (a rich Console) replaces the one made for *stream*; tests pass
    one forced into terminal mode.  *workers_in_process*: the workers are
    threads of this process, so the display redraws less often.
    """
    if quiet:
        return NoProgress()
    rate = REFRESHES_PER_SECOND_BESIDE_WORKERS if workers_in_process else REFRESHES_PER_SECOND
    if console is not None:
        return RichProgress(console, plan, rate)
    isatty = getattr(stream, "isatty", None)
    if isatty is not None and isatty():
        from rich.console import Console

        return RichProgress(Console(file=stream), plan, rate)
    return LineProgress(stream, line_formatter)
