"""Where a run is: the runner reports a :class:`ProgressEvent` at each step.

How the events are shown (rich's live display on a terminal, plain lines in
logs, nothing with ``-q``) is the command line's business:
:mod:`zodbshootout.cli.progress`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


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
