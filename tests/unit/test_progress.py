"""The progress display: a live line on a terminal, plain lines in logs, nothing with -q."""

import io

from zodbshootout.progress import (
    LineProgress,
    NoProgress,
    ProgressEvent,
    RunPlan,
    TerminalProgress,
    format_duration,
    make_progress,
)

PLAN = RunPlan(["zeo_fs", "sqlite"], [100], [2], repetitions=2)


class FakeClock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


class Terminal(io.StringIO):
    def isatty(self):
        return True


def event(database="zeo_fs", repetition=1, stage="write", detail=""):
    return ProgressEvent(database, 100, 2, repetition, 2, stage, detail)


def test_fraction_done_counts_repetitions_and_stages():
    assert PLAN.total == 4
    assert PLAN.fraction_done(event(stage="populate")) == 0.0
    assert PLAN.fraction_done(event("sqlite", 2, "populate")) == 0.75
    assert PLAN.fraction_done(event("zeo_fs", 2, "done")) == 0.5


def test_status_line_estimates_the_time_left():
    clock = FakeClock()
    display = TerminalProgress(Terminal(), PLAN, clock=clock, width=lambda: 200)
    clock.now += 30.0  # half the run took 30 s: 30 s more to go
    line = display.status_line(event("sqlite", 1, "populate"))
    assert line == (
        "[ 50% 0:30, ~0:30 left] sqlite (2/2) · 100 objects · c=2 · repetition 1/2 · populate"
    )


def test_terminal_rewrites_one_line_and_clears_it():
    stream = Terminal()
    clock = FakeClock()
    display = TerminalProgress(stream, PLAN, clock=clock, width=lambda: 40)
    clock.now += 1.0
    display(event(stage="populate"))
    display(event(stage="write"))
    display.clear()
    text = stream.getvalue()
    assert "\n" not in text
    assert text.count("\r\x1b[K") == 3
    # Cut to the terminal's width so that the line never wraps.
    parts = text.split("\r\x1b[K")
    assert all(len(part) <= 39 for part in parts)
    # What is cut is the end; the time estimate at the start stays.
    # The write stage starts 10% into the first of 4 repetitions: 2.5% in 1 s.
    assert parts[2].startswith("[  2% 0:01, ~0:39 left] zeo_fs (1/2)")
    assert parts[2].endswith("…")
    assert text.endswith("\r\x1b[K")


def test_terminal_keeps_failures_on_screen():
    stream = Terminal()
    display = TerminalProgress(stream, PLAN, clock=FakeClock(), width=lambda: 200)
    display(event(stage="failed", detail="worker 0 died"))
    assert "zodbshootout: zeo_fs: failed: worker 0 died\n" in stream.getvalue()


def test_plain_lines_when_not_a_terminal():
    stream = io.StringIO()
    display = make_progress(stream, PLAN, quiet=False, line_formatter=lambda e: e.stage)
    assert isinstance(display, LineProgress)
    display(event(stage="write"))
    display(event(stage="read"))
    assert stream.getvalue() == "write\nread\n"


def test_terminal_gets_the_live_display_and_quiet_gets_nothing():
    assert isinstance(make_progress(Terminal(), PLAN, False, str), TerminalProgress)
    quiet = make_progress(Terminal(), PLAN, True, str)
    assert isinstance(quiet, NoProgress)


def test_durations():
    assert format_duration(7.4) == "0:07"
    assert format_duration(723) == "12:03"
    assert format_duration(3723) == "1:02:03"
