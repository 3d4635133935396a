"""The progress display: rich's live display on a terminal, plain lines in logs, nothing with -q."""

import io
import time

from rich.console import Console

from zodbshootout.cli.progress import (
    LineProgress,
    NoProgress,
    RichProgress,
    RunPlan,
    TimeLeft,
    format_duration,
    make_progress,
)
from zodbshootout.run.progress import ProgressEvent

PLAN = RunPlan(["zeo_fs", "sqlite"], [100], [2], repetitions=2)


class Terminal(io.StringIO):
    def isatty(self):
        return True


def event(database="zeo_fs", repetition=1, stage="write", detail=""):
    return ProgressEvent(database, 100, 2, repetition, 2, stage, detail)


def terminal_console(stream, width=120):
    return Console(file=stream, force_terminal=True, width=width, color_system=None)


def test_fraction_done_counts_repetitions_and_stages():
    assert PLAN.total == 4
    assert PLAN.fraction_done(event(stage="populate")) == 0.0
    assert PLAN.fraction_done(event("sqlite", 2, "populate")) == 0.75
    # Databases take turns: a level is done for all of them after its last round.
    assert PLAN.fraction_done(event("zeo_fs", 2, "done")) == 1.0
    assert PLAN.fraction_done(event("zeo_fs", 2, "populate")) == 0.5
    warm = RunPlan(["zeo_fs", "sqlite"], [100], [2], repetitions=2, warmup=True)
    assert warm.total == 6
    assert warm.fraction_done(event("sqlite", 0, "warm-up: populate")) == 1 / 6
    assert warm.fraction_done(event("zeo_fs", 1, "populate")) == 2 / 6


class FakeClock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def test_time_left_comes_from_the_measured_repetitions():
    # 2 databases × 2 repetitions; the databases take turns.
    clock = FakeClock()
    left = TimeLeft(PLAN, clock=clock)
    left.update(event("zeo_fs", 1, "populate"))
    clock.now += 5.0
    left.update(event("zeo_fs", 1, "write"))
    assert left.seconds() is None  # nothing measured yet: no guess
    clock.now += 5.0
    left.update(event("sqlite", 1, "populate"))
    # One repetition took 10 s; this one and two more are left.
    assert left.seconds() == 30.0
    clock.now += 4.0
    assert left.seconds() == 26.0  # the estimate moves on while a stage runs
    clock.now += 6.0
    left.update(event("zeo_fs", 2, "populate"))
    assert left.seconds() == 20.0
    clock.now += 10.0
    left.update(event("sqlite", 2, "populate"))
    clock.now += 10.0
    left.update(event("sqlite", 2, "done"))
    assert left.seconds() == 0.0


def test_the_warmup_counts_as_a_round():
    clock = FakeClock()
    plan = RunPlan(["zeo_fs", "sqlite"], [100], [2], repetitions=2, warmup=True)
    left = TimeLeft(plan, clock=clock)
    left.update(event("zeo_fs", 0, "warm-up: populate"))
    clock.now += 10.0
    left.update(event("sqlite", 0, "warm-up: populate"))
    assert left.seconds() == 50.0  # 6 repetitions in all, 1 done


def test_description_names_the_cell_and_stage():
    assert PLAN.describe(event("sqlite", 1, "populate")) == (
        "sqlite (2/2) · 100 objects · c=2 · repetition 1/2 · populate"
    )
    assert PLAN.describe(event(stage="done")) == "zeo_fs (1/2) · 100 objects · c=2 · done"


def test_terminal_display_shows_the_cell_and_is_erased_at_the_end():
    stream = io.StringIO()
    display = make_progress(stream, PLAN, False, str, console=terminal_console(stream))
    assert isinstance(display, RichProgress)
    display(event("sqlite", 2, "populate"))
    display.display.refresh()
    frame = stream.getvalue().split("\r")[-1]
    assert "75%" in frame
    assert "sqlite (2/2) · 100 objects · c=2 · repetition 2/2 · populate" in frame
    display.clear()
    # transient: the last thing written erases the display's line.
    assert stream.getvalue().endswith("\x1b[2K") or "\x1b[2K\x1b[?25h" in stream.getvalue()


def test_failures_stay_on_screen_above_the_display():
    stream = io.StringIO()
    display = make_progress(stream, PLAN, False, str, console=terminal_console(stream))
    display(event(stage="failed", detail="worker 0 died"))
    display.clear()
    assert "zodbshootout: zeo_fs: failed: worker 0 died\n" in stream.getvalue()


class TimedStream(io.StringIO):
    """Remembers when each write happened."""

    def __init__(self):
        super().__init__()
        self.times = []

    def write(self, text):
        self.times.append(time.monotonic())
        return super().write(text)


def test_the_display_moves_at_least_once_a_second_while_nothing_happens():
    """rich redraws from its own thread: a long stage does not freeze the clock."""
    stream = TimedStream()
    display = make_progress(stream, PLAN, False, str, console=terminal_console(stream))
    display(event(stage="write"))
    started = time.monotonic()
    time.sleep(2.6)  # one long stage: no event from the runner
    display.clear()
    writes = [t for t in stream.times if t >= started]
    gaps = [b - a for a, b in zip([started, *writes], writes, strict=False)]
    assert len(writes) >= 2 * 2  # several redraws a second
    assert max(gaps) < 1.0
    # The elapsed time on screen moved on from 0:00:00 to 0:00:02.
    frames = stream.getvalue()
    assert "0:00:00" in frames
    assert "0:00:02" in frames


def test_plain_lines_when_not_a_terminal():
    stream = io.StringIO()
    display = make_progress(stream, PLAN, quiet=False, line_formatter=lambda e: e.stage)
    assert isinstance(display, LineProgress)
    display(event(stage="write"))
    display(event(stage="read"))
    assert stream.getvalue() == "write\nread\n"


def test_terminal_gets_the_live_display_and_quiet_gets_nothing():
    live = make_progress(Terminal(), PLAN, False, str)
    assert isinstance(live, RichProgress)
    live.clear()
    stream = Terminal()
    quiet = make_progress(stream, PLAN, True, str)
    assert isinstance(quiet, NoProgress)
    quiet(event())
    assert stream.getvalue() == ""


def test_durations():
    assert format_duration(7.4) == "0:07"
    assert format_duration(723) == "12:03"
    assert format_duration(3723) == "1:02:03"


def test_fewer_redraws_when_the_workers_are_threads_of_this_process():
    stream = io.StringIO()
    console = terminal_console(stream)
    threads = make_progress(stream, PLAN, False, str, console=console, workers_in_process=True)
    processes = make_progress(stream, PLAN, False, str, console=terminal_console(io.StringIO()))
    try:
        assert threads.display.live.refresh_per_second == 1
        assert processes.display.live.refresh_per_second == 4
    finally:
        threads.clear()
        processes.clear()


def test_time_left_weighs_each_level_by_objects_and_workers():
    """-n 100,1000 -c 1,2: later levels cost more; the estimate must know."""
    import pytest

    plan = RunPlan(["pg"], [100, 1000], [1, 2], repetitions=2)
    clock = FakeClock()
    left = TimeLeft(plan, clock=clock)

    def cost(count, workers):  # a machine whose time follows the plan's weights
        return 0.01 * plan.level_weight(count, workers)

    levels = [(100, 1), (100, 2), (1000, 1), (1000, 2)]
    actual_total = 2 * sum(cost(n, c) for n, c in levels)
    elapsed = 0.0
    for n, c in levels[:1]:  # the first level measured: 2 repetitions
        for repetition in (1, 2):
            left.update(ProgressEvent("pg", n, c, repetition, 2, "populate"))
            clock.now += cost(n, c)
            elapsed += cost(n, c)
    left.update(ProgressEvent("pg", 100, 1, 2, 2, "done"))
    assert left.seconds() == pytest.approx(actual_total - elapsed)
    # An unweighted mean would say 6 repetitions × 3 s = 18 s; 76 s are left.
    assert left.seconds() > 4 * 6 * cost(100, 1)


def test_at_80_columns_the_times_stay_readable():
    import re

    stream = io.StringIO()
    display = make_progress(stream, PLAN, False, str, console=terminal_console(stream, 80))
    clock_event = ProgressEvent("a_long_database_name", 100000, 16, 3, 10, "warm-up: populate")
    display(clock_event)
    display.display.refresh()
    frame = stream.getvalue().split("\r")[-1]
    display.clear()
    assert re.search(r"\d:\d\d:\d\d", frame), frame  # the elapsed time, whole
    assert "~?:?? left" in frame, frame
